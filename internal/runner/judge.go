package runner

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/impactbench/impactbench/internal/artifacts"
	"github.com/impactbench/impactbench/internal/callstore"
	"github.com/impactbench/impactbench/internal/config"
	"github.com/impactbench/impactbench/internal/llm"
	"github.com/impactbench/impactbench/internal/stages"
)

// judgeTarget is one target's verdicts in one benchmark: the judge panel's
// clients, the fingerprint the row keys start from,
// and the seed of the judge calls (a repeat's own for evaluate --repeats).
// Its rows start while ctx lives and call under callCtx (see simTarget).
type judgeTarget struct {
	r          *Runner
	target     string
	stage      Stage // evaluate, or evaluate-repeats
	judges     []config.ModelConfig
	seats      []llm.Client // one per judge; batch replay when the judge batches
	rowKeyBase string
	unitDir    string
	seed       uint64

	ctx     context.Context
	callCtx context.Context
	stop    context.CancelCauseFunc
	lane    *lane
	bar     *barPart
	rows    sync.WaitGroup
	// held counts conversations kept in memory by verdict rows waiting for
	// the lane; past keep they are read back from the call store instead,
	// so a judge far behind the simulation costs no memory worth counting.
	held atomic.Int64
	keep int64
}

// newJudgeTarget builds targetID's judge panel; total sizes its bar. Its
// rows start while ctx lives and call under callCtx; stop ends ctx.
func (r *Runner) newJudgeTarget(ctx, callCtx context.Context, stop context.CancelCauseFunc, targetID string, total int) (*judgeTarget, error) {
	judges := r.judges()
	j := &judgeTarget{r: r, target: targetID, stage: StageEvaluate, judges: judges, unitDir: r.verdictUnitDir(targetID), seed: r.cfg.Seed,
		ctx: ctx, callCtx: callCtx, stop: stop, lane: r.lanes.of(StageEvaluate, targetID)}
	if err := j.openSeats(); err != nil {
		return nil, err
	}
	j.rowKeyBase = r.verdictKeyBase()
	j.keep = int64(2 * j.lane.cap())
	j.bar = r.bars.open(StageEvaluate, targetID, total)
	j.bar.bar().SetNote(r.limitNote(judges...))
	return j, nil
}

// openSeats builds the panel's clients.
func (j *judgeTarget) openSeats() error {
	r := j.r
	judgeField := "evaluator_model"
	if len(r.opts.Judges) > 0 {
		judgeField = ""
	}
	j.seats = make([]llm.Client, len(j.judges))
	for i, m := range j.judges {
		c, err := r.modelClient(judgeField, m)
		if err != nil {
			return err
		}
		j.seats[i] = c
	}
	return nil
}

// close stops new rows and waits for the rows this target started.
func (j *judgeTarget) close() {
	j.stop(nil)
	j.rows.Wait()
	j.bar.close()
}

// evalInputs are what a scores file depends on (convSHA: conversations.json's).
func (r *Runner) evalInputs(convSHA string) map[string]string {
	judges := r.judges()
	jids := make([]any, len(judges))
	for i, j := range judges {
		jids[i] = identity(j)
	}
	return map[string]string{
		"conversations.json": convSHA,
		"metrics":            fingerprint(r.bench.Metrics),
		"judges":             fingerprint(jids...),
		"options":            fingerprint(r.cfg.Judge, r.cfg.Validity),
		"prompts":            r.prompts.Hash(),
	}
}

func (j *judgeTarget) unitName(id string, sample int) string {
	return fmt.Sprintf("%s/%s/%s__s%d", safeName(j.target), j.unitDir, safeName(id), sample)
}

// rowKey hashes what a verdict row is made from. The validity verdict and
// the user model are in it only when the conversation has them, so rows of
// conversations without them keep the keys they always had.
func (j *judgeTarget) rowKey(conv *artifacts.Conversation) string {
	return verdictKey(j.rowKeyBase, conv)
}

// verdictKey is the key a conversation's verdict is stored under. The
// validity verdict and the user model are in it only when the
// conversation has them, so rows of conversations without them keep the
// keys they always had.
func verdictKey(base string, conv *artifacts.Conversation) string {
	parts := []any{base, conv.Transcript, conv.Status, conv.StatusReason, conv.MetricID}
	if conv.Validity != nil {
		parts = append(parts, conv.Validity)
	}
	if conv.Run != nil {
		parts = append(parts, conv.Run.UserModel)
	}
	return fingerprint(parts...)
}

// verdictKeyBase is what every verdict key of this panel starts from.
func (r *Runner) verdictKeyBase() string {
	in := r.evalInputs("")
	return fingerprint(in["metrics"], in["judges"], in["options"], in["prompts"])
}

// verdictUnitDir is where a target's verdicts are stored in the call store.
func (r *Runner) verdictUnitDir(targetID string) string {
	if len(r.opts.Judges) > 0 {
		return "eval-" + filepath.Base(filepath.Dir(r.scoresPath(targetID)))
	}
	return "eval"
}

// start returns the verdict row of a conversation, starting it unless it
// was started already. With wait the caller waits for room in the lane.
func (j *judgeTarget) start(conv *artifacts.Conversation, wait bool) *rowState[artifacts.Score] {
	unit := j.unitName(conv.ID, conv.Sample)
	st, created := j.r.rows.verdicts.claim(unit, j.rowKey(conv))
	if !created {
		return st
	}
	held := conv
	if !wait && j.held.Add(1) > j.keep {
		j.held.Add(-1)
		held = nil // read back when its turn comes
	}
	ref := convRef{id: conv.ID, sample: conv.Sample}
	j.rows.Add(1)
	ok := j.r.goRow(j.ctx, j.lane, wait, func() {
		defer j.rows.Done()
		if held != nil && !wait {
			j.held.Add(-1)
		}
		st.finish(j.run(st, unit, ref, held))
		if !wait {
			// Judged as its conversation ended: the evaluate pass
			// that writes it needs only whether it is stored.
			j.r.rows.verdicts.retire(unit, st)
		}
	}, func() {
		defer j.rows.Done()
		if held != nil && !wait {
			j.held.Add(-1)
		}
		st.finish(rowOut[artifacts.Score]{status: RowStopped})
	})
	if !ok {
		j.rows.Done()
		st.finish(rowOut[artifacts.Score]{status: RowStopped})
	}
	return st
}

// convRef names a conversation to read back from the call store.
type convRef struct {
	id     string
	sample int
}

// run judges one conversation (or replays the stored verdict) and stores
// the score. A judge that fails records a null verdict with its reason,
// retried by the next run; a fatal provider error stops the target's rows.
func (j *judgeTarget) run(st *rowState[artifacts.Score], unit string, ref convRef, conv *artifacts.Conversation) rowOut[artifacts.Score] {
	st.waitPrev()
	start := time.Now()
	if conv == nil {
		c, err := j.readConv(ref)
		if err != nil {
			return j.done(rowOut[artifacts.Score]{status: RowFailed, reason: err.Error()}, ref.id)
		}
		conv = &c
	}
	if conv.ConvID == "" {
		conv.ConvID = artifacts.ConvID(conv.ID, j.target, conv.Sample)
	}
	u, err := j.r.store.Unit(unit)
	if err != nil {
		return j.done(rowOut[artifacts.Score]{status: RowFailed, reason: err.Error()}, conv.ConvID)
	}
	defer u.Close()
	var score artifacts.Score
	if u.Result(st.key, &score) {
		return j.done(rowOut[artifacts.Score]{status: RowReused, stored: true, took: time.Since(start)}, conv.ConvID)
	}
	score, usage, err := j.verdict(u, *conv)
	s := u.Stats()
	out := rowOut[artifacts.Score]{spent: s.Spent, saved: s.Saved}
	switch {
	case err != nil && fatalErr(err):
		j.stop(err)
		out.status = RowStopped
	case err != nil && (j.callCtx.Err() != nil || budgetStopped(err)):
		out.status = RowStopped
	case err != nil:
		// Recorded as a null verdict with its reason; retried next run.
		score = artifacts.Score{ID: conv.ID, MetricID: conv.MetricID, TargetModel: j.target, Sample: conv.Sample,
			ConvID: conv.ConvID, NullReason: "judge failed: " + err.Error()}
		out.stored = u.SetResult(errorKey(st.key), score) == nil
		out.status, out.reason = RowFailed, err.Error()
	default:
		out.status = RowDone
		if s.Misses == 0 {
			out.status = RowReused
		}
		if err := j.keepScore(u, st.key, score, usage); err != nil {
			out.status, out.reason = RowFailed, err.Error()
		} else {
			out.stored = true
		}
	}
	out.took = time.Since(start)
	return j.done(out, conv.ConvID)
}

// keepScore stores a verdict with its usage.
func (j *judgeTarget) keepScore(u *callstore.Unit, key string, score artifacts.Score, usage llm.Usage) error {
	ur := artifacts.UsageFrom(usage)
	score.Usage = &ur
	if score.TargetModel == "" {
		score.TargetModel = j.target
	}
	return u.SetResult(key, score)
}

// verdict asks the panel about one conversation.
func (j *judgeTarget) verdict(u *callstore.Unit, conv artifacts.Conversation) (artifacts.Score, llm.Usage, error) {
	r := j.r
	m, _ := r.bench.MetricByID(conv.MetricID)
	panel := make([]stages.NamedClient, len(j.judges))
	for k, jm := range j.judges {
		panel[k] = stages.NamedClient{Name: JudgeLabel(jm), Client: u.Client(identity(jm), j.seats[k])}
	}
	return stages.Evaluate(j.callCtx, panel, r.prompts, m, conv, stages.JudgeOptions{ShowExamples: r.cfg.Judge.ShowExamples, Seed: j.seed})
}

// done counts a finished verdict row in the summary and on the bar.
func (j *judgeTarget) done(o rowOut[artifacts.Score], name string) rowOut[artifacts.Score] {
	j.r.Report.count(j.stage, j.target, name, o.status, o.reason, o.spent, o.saved)
	if o.status == RowStopped {
		j.bar.bar().Unfinished(o.spent)
	} else {
		j.bar.bar().Done(o.status == RowFailed, o.status == RowReused || o.spent.Requests == 0, o.spent, o.took)
	}
	return o
}

// readConv reads a conversation back from the call store.
func (j *judgeTarget) readConv(ref convRef) (artifacts.Conversation, error) {
	var conv artifacts.Conversation
	unit := fmt.Sprintf("%s/sim/%s__s%d", safeName(j.target), safeName(ref.id), ref.sample)
	if _, ok := j.r.store.ReadResult(unit, &conv); !ok {
		return conv, fmt.Errorf("conversation %s sample %d missing from %s", ref.id, ref.sample, j.r.store.Dir())
	}
	return conv, nil
}
