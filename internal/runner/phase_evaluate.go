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
	rows, err := r.evalRows(convPath, p)
	if err != nil {
		return err
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
		rep.Spent, _ = j.report()
		rep.Calls = rep.Spent.Requests
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
	done, feedErr := judgePending(ctx, callCtx, stop, j, convPath, len(rows), r.workers(r.cfg.Run.Concurrency.Evaluate, len(rows)))
	j.bar.End()
	return r.finishEvaluate(ctx, evalResult{
		targetID: targetID, out: out, key: key, inputs: inputs, rows: rows,
		j: j, jb: jb, unitName: unitName, done: done, feedErr: feedErr,
	}, rep)
}

// evalResult is what one evaluate pass leaves for finishEvaluate.
type evalResult struct {
	targetID, out, key string
	inputs             map[string]string
	rows               []evalRow
	j                  *judging
	jb                 *judgeBatches
	unitName           func(evalRow) string
	done               []bool // by row: a score is stored
	feedErr            error
}

// finishEvaluate reports the phase and, when every row was judged, writes
// scores.json and its cost and records them; a fatal provider error, a
// stop by the ceiling or an interruption leaves the old file in place.
func (r *Runner) finishEvaluate(ctx context.Context, e evalResult, rep PhaseReport) error {
	j, rows := e.j, e.rows
	_, _, reused := j.bar.Counts()
	spent, saved := j.report()
	failures := j.failures
	rep.Rows, rep.Reused, rep.Spent, rep.Calls, rep.Failed = len(rows), reused, spent, spent.Requests, len(failures)
	rep.Failures = failures
	if len(rep.Failures) > maxListedFailures {
		rep.Failures = rep.Failures[:maxListedFailures]
	}
	r.Report.addReused(saved)
	if cause := context.Cause(ctx); cause != nil && fatalErr(cause) {
		r.Report.add(rep)
		return cause
	}
	if e.feedErr != nil && !errors.Is(e.feedErr, context.Canceled) && !errors.Is(e.feedErr, context.DeadlineExceeded) {
		return e.feedErr
	}
	if err := ctx.Err(); err != nil {
		rep.Status, rep.Reason = "stopped", "interrupted; the verdicts given so far are saved"
		r.Report.add(rep)
		return err
	}
	notRun := 0
	for _, ok := range e.done {
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
	if err := r.beginOutput(e.key, e.inputs); err != nil {
		return err
	}
	total, passed, valid, err := r.writeScores(e.targetID, e.out, rows, e.unitName, &rep)
	if err != nil {
		return err
	}
	e.jb.cleanup()
	costPhase := "evaluate"
	if len(r.opts.Judges) > 0 {
		costPhase = "evaluate:" + filepath.Base(filepath.Dir(e.out))
	}
	if err := r.writeCost(r.runDir(e.targetID), costPhase, total); err != nil {
		return err
	}
	if err := r.record(e.key, e.out, e.inputs, rep.Failed); err != nil {
		return err
	}
	rep.Status = "ran"
	if rep.Failed > 0 {
		rep.Status = "failed"
	}
	r.logf("evaluated %d conversations → %d scores (%d/%d passed) for %s", len(rows), len(rows), passed, valid, e.targetID)
	r.Report.add(rep)
	return nil
}

// evalRows is the first pass: every row's metric is checked before
// anything is spent; a missing metric is an input error, never a silently
// dropped row. After a pipelined simulate the rows are known and their
// metrics were checked against scenarios.json: no need to read the file
// again.
func (r *Runner) evalRows(convPath string, p *pipeline) ([]evalRow, error) {
	var rows []evalRow
	if p != nil && p.rows != nil {
		rows = make([]evalRow, len(p.rows))
		for i, sr := range p.rows {
			rows[i] = evalRow{ID: sr.id, Sample: sr.sample}
		}
		return rows, nil
	}
	var missing []string
	err := artifacts.EachConversation(convPath, func(i int, c artifacts.Conversation) error {
		if _, ok := r.bench.MetricByID(c.MetricID); !ok {
			missing = append(missing, fmt.Sprintf("row %d (%s): metric_id %q", i, c.ID, c.MetricID))
		}
		rows = append(rows, evalRow{c.ID, c.Sample, c.MetricID})
		return nil
	})
	if err != nil {
		return nil, &InputError{Msg: err.Error()}
	}
	if len(missing) > 0 {
		return nil, &InputError{Msg: fmt.Sprintf("%s: %d conversation(s) refer to metrics that are not in %s (known: %s); fix the metric ids or restore the metrics:\n  %s",
			convPath, len(missing), r.bench.Path, r.metricIDs(), strings.Join(firstN(missing, 10), "\n  "))}
	}
	return rows, nil
}

// judgePending judges the rows of conversations.json the pipeline has not
// judged, streaming them to the workers so memory holds only the rows in
// flight. done reports, by row, which now have a stored score.
func judgePending(ctx, callCtx context.Context, stop context.CancelCauseFunc, j *judging, convPath string, n, workers int) (done []bool, feedErr error) {
	done = make([]bool, n)
	pending := 0
	for i := range n {
		if i < len(j.judged) && j.judged[i] {
			done[i] = true // judged by the pipeline in this process
		} else {
			pending++
		}
	}
	if pending == 0 {
		return done, nil
	}
	type job struct {
		i int
		c artifacts.Conversation
	}
	feedErr = forEachStream(ctx, workers, func(send func(job) bool) error {
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
	return done, feedErr
}

// writeScores assembles scores.json from the stored scores in row order,
// refusing (and leaving the old file) when verdicts would become null. It
// returns the scores' usage and the passed and valid counts.
func (r *Runner) writeScores(targetID, out string, rows []evalRow, unitName func(evalRow) string, rep *PhaseReport) (total llm.Usage, passed, valid int, err error) {
	w, err := artifacts.NewArrayWriter(out)
	if err != nil {
		return total, 0, 0, err
	}
	guard := r.newVerdictGuard(out)
	for _, row := range rows {
		var sc artifacts.Score
		if _, ok := r.store.ReadResult(unitName(row), &sc); !ok {
			w.Abort()
			return total, 0, 0, fmt.Errorf("evaluate %s: score of %s sample %d missing from %s", targetID, row.ID, row.Sample, r.store.Dir())
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
			return total, 0, 0, err
		}
	}
	if err := guard.check(); err != nil {
		w.Abort()
		rep.Status, rep.Reason = "refused", err.Error()
		r.Report.add(*rep)
		return total, 0, 0, err
	}
	if err := w.Close(); err != nil {
		return total, 0, 0, err
	}
	return total, passed, valid, nil
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
