package runner

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/impactbench/impactbench/internal/artifacts"
	"github.com/impactbench/impactbench/internal/config"
	"github.com/impactbench/impactbench/internal/llm"
)

// judges returns the evaluator panel of this invocation.
func (r *Runner) judges() []config.ModelConfig {
	if len(r.opts.Judges) > 0 {
		return r.opts.Judges
	}
	return r.cfg.EvaluatorModels
}

// JudgeLabel names a judge in score rows and directories.
func JudgeLabel(m config.ModelConfig) string {
	if m.ID != "" {
		return m.ID
	}
	return m.Model
}

func (r *Runner) scoresPath(target string) string {
	if len(r.opts.Judges) > 0 {
		labels := make([]string, len(r.opts.Judges))
		for i, j := range r.opts.Judges {
			labels[i] = safeName(JudgeLabel(j))
		}
		return filepath.Join(r.runDir(target), "judges", strings.Join(labels, "+"), "scores"+r.shardSuffix()+".json")
	}
	return filepath.Join(r.runDir(target), "scores"+r.shardSuffix()+".json")
}

type evalRow struct {
	ID     string
	Sample int
	Metric string
}

// Evaluate judges runs/<target>/conversations.json and writes scores.json.
func (r *Runner) Evaluate(ctx context.Context, targetID string) error {
	return r.evaluate(ctx, targetID, nil)
}

// evaluate is Evaluate; p, when not nil, is the pipeline that already judged
// rows while simulate ran: those rows are not judged (or counted) again.
func (r *Runner) evaluate(ctx context.Context, targetID string, p *pipeline) error {
	convPath := filepath.Join(r.runDir(targetID), "conversations"+r.shardSuffix()+".json")
	out := r.scoresPath(targetID)
	rep := PhaseReport{Phase: "evaluate", Target: targetID, Output: out}
	judges := r.judges()
	if _, err := os.Stat(convPath); err != nil {
		if r.opts.DryRun {
			rows := r.expectedConversations()
			r.planEvaluate(targetID, judges, rows)
			return nil
		}
		return &InputError{Msg: fmt.Sprintf("%s does not exist: run `impactbench simulate %s %s` first", convPath, r.bench.Slug, targetID)}
	}
	// First pass: check every row's metric before spending anything; a
	// missing metric is an input error, never a silently dropped row. After
	// a pipelined simulate the rows are known and their metrics were
	// checked against scenarios.json: no need to read the file again.
	var rows []evalRow
	var missing []string
	var err error
	if p != nil && p.rows != nil {
		rows = make([]evalRow, len(p.rows))
		for i, sr := range p.rows {
			rows[i] = evalRow{ID: sr.id, Sample: sr.sample}
		}
	} else {
		err = artifacts.EachConversation(convPath, func(i int, c artifacts.Conversation) error {
			if _, ok := r.bench.MetricByID(c.MetricID); !ok {
				missing = append(missing, fmt.Sprintf("row %d (%s): metric_id %q", i, c.ID, c.MetricID))
			}
			rows = append(rows, evalRow{c.ID, c.Sample, c.MetricID})
			return nil
		})
	}
	if err != nil {
		return &InputError{Msg: err.Error()}
	}
	if len(missing) > 0 {
		return &InputError{Msg: fmt.Sprintf("%s: %d conversation(s) refer to metrics that are not in %s (known: %s); fix the metric ids or restore the metrics:\n  %s",
			convPath, len(missing), r.bench.Path, r.metricIDs(), strings.Join(firstN(missing, 10), "\n  "))}
	}
	convSHA, _ := fileSHA(convPath)
	inputs := r.evalInputs(convSHA)
	key := "evaluate/" + targetID + r.shardSuffix() + "/" + rel(r.runDir(targetID), out)
	skip, note := r.checkSkip("evaluate", targetID, key, out, inputs, rep)
	if skip {
		if p != nil {
			p.j.bar.End()
		}
		return nil
	}
	if note != "" {
		defer r.planNote("evaluate", targetID, note)
	}
	if r.opts.DryRun {
		r.planEvaluate(targetID, judges, len(rows))
		return nil
	}
	if err := r.guardRows(out, len(rows), "conversations.json has fewer rows"); err != nil {
		if p != nil {
			p.j.bar.End()
		}
		return err
	}
	var j *judging
	if p != nil {
		j = p.j
	} else if j, err = r.openJudging(targetID, len(rows)); err != nil {
		return err
	}
	if j.fatal != nil {
		j.bar.End()
		rep.Spent, rep.Calls = j.spent, j.spent.Requests
		r.Report.add(rep)
		return j.fatal
	}
	unitName := func(row evalRow) string { return j.unitName(row.ID, row.Sample) }
	jb, err := r.runJudgeBatches(ctx, targetID, convPath, judges, j.rowKeyBase, j.unitDir, unitName, rows)
	if err != nil {
		return err
	}
	for k := range j.seats {
		j.seats[k] = jb.client(k, j.seats[k])
	}

	// As in simulate: a fatal error stops new rows (ctx), while calls in
	// flight finish under callCtx and are stored.
	callCtx := ctx
	ctx, stop := context.WithCancelCause(ctx)
	defer stop(nil)
	done := make([]bool, len(rows))
	pending := 0
	for i := range rows {
		if i < len(j.judged) && j.judged[i] {
			done[i] = true // judged by the pipeline in this process
		} else {
			pending++
		}
	}
	type job struct {
		i int
		c artifacts.Conversation
	}
	// Stream the conversations to the workers: memory holds only the rows in flight.
	var feedErr error
	if pending > 0 {
		feedErr = forEachStream(ctx, r.workers(r.cfg.Run.Concurrency.Evaluate, pending), func(send func(job) bool) error {
			return artifacts.EachConversation(convPath, func(i int, c artifacts.Conversation) error {
				if done[i] || send(job{i, c}) {
					return nil
				}
				return ctx.Err()
			})
		}, func(_ context.Context, jb job) {
			ok, fatal := j.judge(callCtx, jb.c, nil)
			if fatal != nil {
				stop(fatal)
			}
			done[jb.i] = ok
		})
	}
	j.bar.End()
	_, _, reused := j.bar.Counts()
	failures := j.failures
	rep.Rows, rep.Reused, rep.Spent, rep.Calls, rep.Failed = len(rows), reused, j.spent, j.spent.Requests, len(failures)
	rep.Failures = failures
	if len(rep.Failures) > maxListedFailures {
		rep.Failures = rep.Failures[:maxListedFailures]
	}
	r.Report.addReused(j.saved)
	if cause := context.Cause(ctx); cause != nil && fatalErr(cause) {
		r.Report.add(rep)
		return cause
	}
	if feedErr != nil && !errors.Is(feedErr, context.Canceled) && !errors.Is(feedErr, context.DeadlineExceeded) {
		return feedErr
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	notRun := 0
	for _, ok := range done {
		if !ok {
			notRun++
		}
	}
	if notRun > 0 {
		rep.Status = "stopped"
		rep.Reason = fmt.Sprintf("%d of %d conversations not judged (cost ceiling); judged rows are saved", notRun, len(rows))
		r.noteRemaining(notRun)
		r.Report.add(rep)
		return nil
	}
	if err := r.beginOutput(key, inputs); err != nil {
		return err
	}
	w, err := artifacts.NewArrayWriter(out)
	if err != nil {
		return err
	}
	var total llm.Usage
	passed, valid := 0, 0
	guard := r.newVerdictGuard(out)
	for _, row := range rows {
		var sc artifacts.Score
		if _, ok := r.store.ReadResult(unitName(row), &sc); !ok {
			w.Abort()
			return fmt.Errorf("evaluate %s: score of %s sample %d missing from %s", targetID, row.ID, row.Sample, r.store.Dir())
		}
		if sc.Usage != nil {
			total = total.Add(usageOf(*sc.Usage))
		}
		if sc.Passed != nil {
			valid++
			if *sc.Passed {
				passed++
			}
		}
		guard.see(&sc)
		if err := w.Write(sc); err != nil {
			w.Abort()
			return err
		}
	}
	if err := guard.check(); err != nil {
		w.Abort()
		rep.Status, rep.Reason = "refused", err.Error()
		r.Report.add(rep)
		return err
	}
	if err := w.Close(); err != nil {
		return err
	}
	jb.cleanup()
	costPhase := "evaluate"
	if len(r.opts.Judges) > 0 {
		costPhase = "evaluate:" + filepath.Base(filepath.Dir(out))
	}
	if err := r.writeCost(r.runDir(targetID), costPhase, total); err != nil {
		return err
	}
	if err := r.record(key, out, inputs, rep.Failed); err != nil {
		return err
	}
	rep.Status = "ran"
	if rep.Failed > 0 {
		rep.Status = "failed"
	}
	r.logf("evaluated %d conversations → %d scores (%d/%d passed) for %s", len(rows), len(rows), passed, valid, targetID)
	r.Report.add(rep)
	return nil
}

// expectedConversations estimates rows for a dry run before simulate ran.
func (r *Runner) expectedConversations() int {
	if scs, err := r.loadScenarios(); err == nil {
		n := 0
		for _, s := range scs {
			if r.inShard(s.ID) {
				n++
			}
		}
		return n * r.cfg.Generation.NumSamples
	}
	nm := len(r.bench.Metrics)
	if nm == 0 {
		nm = 5
	}
	return nm * r.cfg.Generation.ScenariosPerMetric * r.cfg.Demographics.Size() * r.cfg.Generation.NumSamples
}
