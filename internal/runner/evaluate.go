package runner

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/impactbench/impactbench/internal/artifacts"
	"github.com/impactbench/impactbench/internal/config"
	"github.com/impactbench/impactbench/internal/fault"
	"github.com/impactbench/impactbench/internal/llm"
	"github.com/impactbench/impactbench/internal/phase"
	"github.com/impactbench/impactbench/internal/schedule"
	"github.com/impactbench/impactbench/internal/summary"
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
	err := r.evaluate(ctx, targetID, nil)
	r.Report.Settle()
	return err
}

// evaluation is one scores file being made.
type evaluation struct {
	targetID, convPath, out, key string
	inputs                       map[string]string
	rows                         []evalRow
}

// evaluate writes targetID's scores.json: one verdict row per row of
// conversations.json, in its order. j, when not nil, is the target's judge
// that `run` already handed conversations to as simulate stored them:
// their rows are found, not judged (or counted) again.
func (r *Runner) evaluate(ctx context.Context, targetID string, j *judgeTarget) error {
	e := evaluation{targetID: targetID, convPath: filepath.Join(r.runDir(targetID), "conversations"+r.shardSuffix()+".json"), out: r.scoresPath(targetID)}
	rep := summary.PhaseReport{Phase: phase.StageEvaluate, Target: targetID, Output: e.out}
	if _, err := os.Stat(e.convPath); err != nil {
		if r.opts.DryRun {
			r.planEvaluate(targetID, r.judges(), r.expectedConversations())
			return nil
		}
		return fault.Inputf("%s does not exist: run `impactbench simulate %s %s` first", e.convPath, r.bench.Slug, targetID)
	}
	var err error
	if e.rows, err = r.evalRows(e.convPath); err != nil {
		return err
	}
	convSHA, _ := fileSHA(e.convPath)
	e.inputs = r.evalInputs(convSHA)
	e.key = phase.StageEvaluate.String() + "/" + targetID + r.shardSuffix() + "/" + relPath(r.runDir(targetID), e.out)
	skip, note := r.checkSkip(phase.StageEvaluate, targetID, e.key, e.out, e.inputs, rep)
	if skip {
		return nil
	}
	if r.opts.DryRun {
		r.planEvaluate(targetID, r.judges(), len(e.rows))
		r.planEvaluateNow(targetID, e.convPath, note)
		return nil
	}
	if err := r.guardRows(e.out, len(e.rows), "conversations.json has fewer rows"); err != nil {
		return err
	}
	if j == nil {
		rowCtx, stop := context.WithCancelCause(ctx)
		defer stop(nil)
		if j, err = r.newJudgeTarget(rowCtx, ctx, stop, targetID, len(e.rows)); err != nil {
			return err
		}
		defer j.close()
	}
	j.bar.SetTotal(len(e.rows))
	return r.judgeAll(ctx, e, j, rep)
}

// judgeAll sends the batch judges' calls (if any), makes every verdict row
// and writes scores.json once each row has a stored score.
func (r *Runner) judgeAll(ctx context.Context, e evaluation, j *judgeTarget, rep summary.PhaseReport) error {
	unitName := func(row evalRow) string { return j.unitName(row.ID, row.Sample) }
	jb, err := r.runJudgeBatches(ctx, j, e.convPath)
	if err != nil {
		return err
	}
	for k := range j.seats {
		j.seats[k] = jb.client(k, j.seats[k])
	}
	stored, feedErr := r.judgeRows(j, e.convPath, len(e.rows))
	rep.Rows = len(e.rows)
	if cause := context.Cause(j.ctx); cause != nil && fatalErr(cause) {
		r.Report.Add(rep)
		return cause
	}
	if feedErr != nil && !errors.Is(feedErr, context.Canceled) && !errors.Is(feedErr, context.DeadlineExceeded) {
		return feedErr
	}
	if err := ctx.Err(); err != nil {
		rep.Status, rep.Reason = phase.StatusStopped, "interrupted; the verdicts given so far are saved"
		r.Report.Add(rep)
		return err
	}
	if notRun := len(e.rows) - stored; notRun > 0 {
		rep.Status = phase.StatusStopped
		rep.Reason = fmt.Sprintf("%d of %d conversations not judged (cost ceiling); judged rows are saved", notRun, len(e.rows))
		r.noteRemaining(notRun)
		r.Report.Add(rep)
		return nil
	}
	if err := r.commitScores(e, unitName, &rep); err != nil {
		return err
	}
	jb.cleanup()
	return nil
}

// judgeRows makes the verdict row of every row of conversations.json,
// streaming the file so that only the rows in flight are in memory, and
// waits for them. It returns how many now have a stored score.
func (r *Runner) judgeRows(j *judgeTarget, convPath string, n int) (stored int, feedErr error) {
	var wg sync.WaitGroup
	var mu sync.Mutex
	feedErr = artifacts.EachConversation(convPath, func(i int, c artifacts.Conversation) error {
		if j.ctx.Err() != nil {
			return j.ctx.Err()
		}
		wg.Add(1)
		unit := j.unitName(c.ID, c.Sample)
		st := j.start(&c, true)
		st.OnDone(func(o schedule.Outcome[artifacts.Score]) {
			if o.Stored {
				mu.Lock()
				stored++
				mu.Unlock()
			}
			// The last to await a verdict (one judged while its
			// conversation ended is found and awaited here too).
			j.r.rows.verdicts.Retire(unit, st)
			wg.Done()
		})
		return nil
	})
	wg.Wait()
	return stored, feedErr
}

// commitScores writes scores.json, its cost and its phase record.
func (r *Runner) commitScores(e evaluation, unitName func(evalRow) string, rep *summary.PhaseReport) error {
	if err := r.beginOutput(e.key, e.inputs); err != nil {
		return err
	}
	total, models, passed, valid, err := r.writeScores(e.targetID, e.out, e.rows, unitName, rep)
	if err != nil {
		return err
	}
	costPhase := phase.StageEvaluate.String()
	if len(r.opts.Judges) > 0 {
		costPhase += ":" + filepath.Base(filepath.Dir(e.out))
	}
	if err := r.writeCost(r.runDir(e.targetID), costPhase, total, models); err != nil {
		return err
	}
	if err := r.record(e.key, e.out, e.inputs, r.Report.FailedRows(phase.StageEvaluate, e.targetID)); err != nil {
		return err
	}
	rep.Status = phase.StatusRan
	r.logf("evaluated %d conversations → %d scores (%d/%d passed) for %s", len(e.rows), len(e.rows), passed, valid, e.targetID)
	r.Report.Add(*rep)
	return nil
}

// evalRows is the first pass: every row's metric is checked before
// anything is spent; a missing metric is an input error, never a silently
// dropped row.
func (r *Runner) evalRows(convPath string) ([]evalRow, error) {
	var rows []evalRow
	var missing []string
	err := artifacts.EachConversation(convPath, func(i int, c artifacts.Conversation) error {
		if _, ok := r.bench.MetricByID(c.MetricID); !ok {
			missing = append(missing, fmt.Sprintf("row %d (%s): metric_id %q", i, c.ID, c.MetricID))
		}
		rows = append(rows, evalRow{c.ID, c.Sample, c.MetricID})
		return nil
	})
	if err != nil {
		return nil, fault.AsInput(err)
	}
	if len(missing) > 0 {
		return nil, fault.Inputf("%s: %d conversation(s) refer to metrics that are not in %s (known: %s); fix the metric ids or restore the metrics:\n  %s",
			convPath, len(missing), r.bench.Path, r.metricIDs(), strings.Join(firstN(missing, 10), "\n  "))
	}
	return rows, nil
}

// writeScores assembles scores.json from the stored scores in row order,
// refusing (and leaving the old file) when verdicts would become null. It
// returns the scores' usage and the passed and valid counts.
func (r *Runner) writeScores(targetID, out string, rows []evalRow, unitName func(evalRow) string, rep *summary.PhaseReport) (total llm.Usage, models byModel, passed, valid int, err error) {
	models = byModel{}
	w, err := artifacts.NewArrayWriter(out)
	if err != nil {
		return total, models, 0, 0, err
	}
	guard := phase.NewVerdictGuard(r.opts.Force, out)
	for _, row := range rows {
		var sc artifacts.Score
		if _, ok := r.store.ReadResult(unitName(row), &sc); !ok {
			w.Abort()
			return total, models, 0, 0, fmt.Errorf("evaluate %s: score of %s sample %d missing from %s", targetID, row.ID, row.Sample, r.store.Dir())
		}
		if sc.Usage != nil {
			total = total.Add(usageOf(*sc.Usage))
			models.addScore(sc)
		}
		if sc.Passed != nil {
			valid++
			if *sc.Passed {
				passed++
			}
		}
		guard.See(&sc)
		if err := w.Write(sc); err != nil {
			w.Abort()
			return total, models, 0, 0, err
		}
	}
	if err := guard.Check(); err != nil {
		w.Abort()
		rep.Status, rep.Reason = phase.StatusRefused, err.Error()
		r.Report.Add(*rep)
		return total, models, 0, 0, err
	}
	if err := w.Close(); err != nil {
		return total, models, 0, 0, err
	}
	return total, models, passed, valid, nil
}

// addScore splits a verdict row's usage by model: each panel seat's own,
// and for a single judge the rest.
func (m byModel) addScore(sc artifacts.Score) {
	rest := usageOf(*sc.Usage)
	for _, j := range sc.Judges {
		if j.Usage != nil {
			u := usageOf(*j.Usage)
			m.add("judge: "+j.Judge, u)
			rest = rest.Sub(u)
		}
	}
	if sc.Judge != "" {
		m.add("judge: "+sc.Judge, rest)
	}
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
