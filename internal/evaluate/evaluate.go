package evaluate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/impactbench/impactbench/internal/artifacts"
	"github.com/impactbench/impactbench/internal/callstore"
	"github.com/impactbench/impactbench/internal/fault"
	"github.com/impactbench/impactbench/internal/layout"
	"github.com/impactbench/impactbench/internal/llm"
	"github.com/impactbench/impactbench/internal/phase"
	"github.com/impactbench/impactbench/internal/schedule"
	"github.com/impactbench/impactbench/internal/summary"
	"github.com/impactbench/impactbench/internal/work"
)

type evalRow struct {
	ID     string
	Sample int
	Metric string
	// Key is the row's verdict key under the evaluation's keyBase, made
	// while the validation pass has the conversation decoded (empty when
	// that pass was given no base).
	Key string
}

// Evaluate judges runs/<target>/conversations.json and writes scores.json.
func Evaluate(ctx context.Context, b *work.Bench, targetID string) error {
	err := Phase(ctx, b, targetID, nil)
	b.Report.Settle()
	return err
}

// evaluation is one scores file being made.
type evaluation struct {
	targetID, convPath, out, key string
	inputs                       map[string]string
	rows                         []evalRow
	keyBase                      string // what the rows' keys start from
}

// evaluate writes targetID's scores.json: one verdict row per row of
// conversations.json, in its order. j, when not nil, is the target's judge
// that `run` already handed conversations to as simulate stored them:
// their rows are found, not judged (or counted) again.
func Phase(ctx context.Context, b *work.Bench, targetID string, j *Target) error {
	e := evaluation{targetID: targetID, convPath: b.Conversations(targetID), out: b.Scores(targetID)}
	rep := summary.PhaseReport{Phase: phase.StageEvaluate, Target: targetID, Output: e.out}
	if _, err := os.Stat(e.convPath); err != nil {
		if b.Opts.DryRun {
			b.PlanEvaluate(targetID, b.ExpectedConversations())
			return nil
		}
		return fault.Inputf("%s does not exist: run `impactbench simulate %s %s` first", e.convPath, b.Spec.Slug, targetID)
	}
	var err error
	e.keyBase = verdictKeyBase(b)
	if e.rows, err = evalRows(b, e.convPath, e.keyBase); err != nil {
		return err
	}
	convSHA, _ := phase.FileSHA(e.convPath)
	e.inputs = evalInputs(b, convSHA)
	e.key = layout.RecordKey(phase.StageEvaluate.String(), targetID, b.Opts.Shard, work.RelPath(b.Files.RunDir(targetID), e.out))
	skip, note, err := b.CheckSkip(rep, e.key, e.inputs)
	if err != nil {
		return err
	}
	if skip {
		return nil
	}
	if b.Opts.DryRun {
		b.PlanEvaluate(targetID, len(e.rows))
		planEvaluateNow(b, targetID, e.convPath, note)
		return nil
	}
	if err := b.GuardRows(e.out, len(e.rows), "conversations.json has fewer rows"); err != nil {
		return err
	}
	if j == nil {
		if j, err = NewTarget(nil, b, targetID, len(e.rows)); err != nil {
			return err
		}
		defer j.Close()
	}
	j.bar.SetTotal(len(e.rows))
	return judgeAll(ctx, b, e, j, rep)
}

// judgeAll sends the batch judges' calls (if any), makes every verdict row
// and writes scores.json once each row has a stored score.
func judgeAll(ctx context.Context, b *work.Bench, e evaluation, j *Target, rep summary.PhaseReport) error {
	unitName := func(row evalRow) string { return j.unitName(row.ID, row.Sample) }
	jb, err := runJudgeBatches(ctx, b, j, e.convPath)
	if err != nil {
		return err
	}
	j.batchSeats(jb)
	var keyed []evalRow
	if e.keyBase == j.rowKeyBase {
		keyed = e.rows
	}
	stored, feedErr := judgeRows(ctx, b, j, e.convPath, keyed)
	rep.Rows = len(e.rows)
	if cause := j.halt.Err(); cause != nil && work.Fatal(cause) {
		b.Report.Add(rep)
		return cause
	}
	if feedErr != nil && !errors.Is(feedErr, context.Canceled) && !errors.Is(feedErr, context.DeadlineExceeded) {
		return feedErr
	}
	if err := ctx.Err(); err != nil {
		rep.Status, rep.Reason = phase.StatusStopped, "interrupted; the verdicts given so far are saved"
		b.Report.Add(rep)
		return err
	}
	if notRun := len(e.rows) - stored; notRun > 0 {
		rep.Status = phase.StatusStopped
		rep.Reason = fmt.Sprintf("%d of %d conversations not judged (cost ceiling); judged rows are saved", notRun, len(e.rows))
		b.NoteRemaining(notRun)
		b.Report.Add(rep)
		return nil
	}
	if err := commitScores(ctx, b, e, unitName, &rep); err != nil {
		return err
	}
	jb.cleanup()
	return nil
}

// judgeRows makes the verdict row of every row of conversations.json,
// streaming the file so that only the rows in flight are in memory, and
// waits for them. It returns how many now have a stored score. keyed, when
// not nil, are the file's rows with their verdict keys under j's key base
// (from the validation pass): a row whose verdict is already under way or
// stored (handed over as its conversation ended, as in `run`) is then found
// by its key without decoding its transcript a second time.
func judgeRows(ctx context.Context, b *work.Bench, j *Target, convPath string, keyed []evalRow) (stored int, feedErr error) {
	var wg sync.WaitGroup
	var mu sync.Mutex
	await := func(unit string, st *schedule.Row[artifacts.Score]) {
		wg.Add(1)
		st.OnDone(func(o schedule.Outcome[artifacts.Score]) {
			if o.Stored {
				mu.Lock()
				stored++
				mu.Unlock()
			}
			// The last to await a verdict (one judged while its
			// conversation ended is found and awaited here too).
			j.b.Verdicts.Retire(unit, st)
			wg.Done()
		})
	}
	admit := func() error {
		if err := ctx.Err(); err != nil {
			return err
		}
		if j.halt.Err() != nil {
			return context.Canceled // the judge stopped; judgeAll says why
		}
		return nil
	}
	if keyed == nil {
		feedErr = artifacts.EachConversation(convPath, func(i int, c artifacts.Conversation) error {
			if err := admit(); err != nil {
				return err
			}
			await(j.unitName(c.ID, c.Sample), j.start(ctx, &c, true))
			return nil
		})
	} else {
		feedErr = eachKeyed(convPath, keyed, func(i int, raw json.RawMessage) error {
			if err := admit(); err != nil {
				return err
			}
			unit, st, err := j.startKeyed(ctx, raw, keyed[i])
			if err == nil {
				await(unit, st)
			}
			return err
		})
	}
	wg.Wait()
	return stored, feedErr
}

// errConvChanged is conversations.json changing between the validation
// pass and the judging pass.
var errConvChanged = errors.New("conversations.json changed while it was being judged; run evaluate again")

// eachKeyed streams convPath's raw rows, which must be keyed's rows.
func eachKeyed(convPath string, keyed []evalRow, fn func(i int, raw json.RawMessage) error) error {
	n := 0
	err := artifacts.EachRawRow(convPath, func(i int, raw json.RawMessage) error {
		if n = i + 1; i >= len(keyed) {
			return errConvChanged
		}
		return fn(i, raw)
	})
	if err == nil && n != len(keyed) {
		err = fmt.Errorf("%s: %w", convPath, errConvChanged)
	}
	return err
}

// commitScores writes scores.json, its cost and its phase record.
func commitScores(ctx context.Context, b *work.Bench, e evaluation, unitName func(evalRow) string, rep *summary.PhaseReport) error {
	if err := b.BeginOutput(e.key, e.inputs); err != nil {
		return err
	}
	total, models, passed, valid, err := writeScores(ctx, b, e.targetID, e.out, e.rows, unitName, rep)
	if err != nil {
		// Refused (nulls where verdicts stood): nothing was written, so
		// scores.json's record stands too.
		if refused := (*phase.RefusedError)(nil); errors.As(err, &refused) {
			if aerr := b.AbandonOutput(e.key); aerr != nil {
				return errors.Join(err, aerr)
			}
		}
		return err
	}
	costPhase := phase.StageEvaluate.String()
	if len(b.Opts.Judges) > 0 {
		costPhase += ":" + filepath.Base(filepath.Dir(e.out))
	}
	if err := b.WriteCost(b.Files.RunDir(e.targetID), costPhase, total, models); err != nil {
		return err
	}
	if err := b.Record(e.key, e.out, e.inputs, b.Report.FailedRows(phase.StageEvaluate, e.targetID)); err != nil {
		return err
	}
	rep.Status = phase.StatusRan
	b.Logf("evaluated %d conversations → %d scores (%d/%d passed) for %s%s", len(e.rows), len(e.rows), passed, valid, e.targetID,
		work.FromStoreNote(b.Report.ReusedRows(phase.StageEvaluate, e.targetID)))
	b.Report.Add(*rep)
	return nil
}

// evalRows is the first pass: every row's metric is checked before
// anything is spent; a missing metric is an input error, never a silently
// dropped row.
func evalRows(b *work.Bench, convPath, keyBase string) ([]evalRow, error) {
	var rows []evalRow
	var missing []string
	err := artifacts.EachConversation(convPath, func(i int, c artifacts.Conversation) error {
		if _, ok := b.Spec.MetricByID(c.MetricID); !ok {
			missing = append(missing, fmt.Sprintf("row %d (%s): metric_id %q", i, c.ID, c.MetricID))
		}
		row := evalRow{ID: c.ID, Sample: c.Sample, Metric: c.MetricID}
		if keyBase != "" {
			row.Key = verdictKey(keyBase, &c)
		}
		rows = append(rows, row)
		return nil
	})
	if err != nil {
		return nil, fault.AsInput(err)
	}
	if len(missing) > 0 {
		return nil, fault.Inputf("%s: %d conversation(s) refer to metrics that are not in %s (known: %s); fix the metric ids or restore the metrics:\n  %s",
			convPath, len(missing), b.Spec.Path, b.MetricIDs(), strings.Join(work.FirstN(missing, 10), "\n  "))
	}
	return rows, nil
}

// writeScores assembles scores.json from the stored scores in row order,
// refusing (and leaving the old file) when verdicts would become null. It
// returns the scores' usage and the passed and valid counts. The scores
// are read ahead of the writer (callstore.EachResult): on an object store
// a replay's (merge --from-store) rows were otherwise read one round trip
// after another.
func writeScores(ctx context.Context, b *work.Bench, targetID, out string, rows []evalRow, unitName func(evalRow) string, rep *summary.PhaseReport) (total llm.Usage, models work.ByModel, passed, valid int, err error) {
	models = work.ByModel{}
	w, err := artifacts.NewArrayWriter(out)
	if err != nil {
		return total, models, 0, 0, err
	}
	guard := phase.NewVerdictGuard(b.Opts.AcceptFewer, out)
	name := func(i int) string { return unitName(rows[i]) }
	err = callstore.EachResult(ctx, b.Store, len(rows), name, func(i int, sc *artifacts.Score, ok bool) error {
		if !ok {
			return fmt.Errorf("evaluate %s: score of %s sample %d missing from %s", targetID, rows[i].ID, rows[i].Sample, b.Store.Location())
		}
		if sc.Usage != nil {
			total = total.Add(work.UsageOf(*sc.Usage))
			addScore(models, *sc)
		}
		if sc.Passed != nil {
			valid++
			if *sc.Passed {
				passed++
			}
		}
		guard.See(sc)
		return w.Write(*sc)
	})
	if err != nil {
		w.Abort()
		return total, models, 0, 0, err
	}
	if err := guard.Check(); err != nil {
		w.Abort()
		rep.Status, rep.Reason = phase.StatusRefused, err.Error()
		b.Report.Add(*rep)
		return total, models, 0, 0, err
	}
	if err := w.Close(); err != nil {
		return total, models, 0, 0, err
	}
	return total, models, passed, valid, nil
}

// addScore splits a verdict row's usage by model: each panel seat's own,
// and for a single judge the rest.
func addScore(m work.ByModel, sc artifacts.Score) {
	rest := work.UsageOf(*sc.Usage)
	for _, j := range sc.Judges {
		if j.Usage != nil {
			u := work.UsageOf(*j.Usage)
			m.Add("judge: "+j.Judge, u)
			rest = rest.Sub(u)
		}
	}
	if sc.Judge != "" {
		m.Add("judge: "+sc.Judge, rest)
	}
}
