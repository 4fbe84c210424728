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
	"github.com/impactbench/impactbench/internal/clientset"
	"github.com/impactbench/impactbench/internal/config"
	"github.com/impactbench/impactbench/internal/llm"
	"github.com/impactbench/impactbench/internal/phase"
	"github.com/impactbench/impactbench/internal/schedule"
	"github.com/impactbench/impactbench/internal/stages"
)

// judgeTarget is one target's verdicts in one benchmark: the judge panel's
// clients, the fingerprint the row keys start from,
// and the seed of the judge calls (a repeat's own for evaluate --repeats).
// Its rows start while ctx lives and call under callCtx (see simTarget).
type judgeTarget struct {
	r          *Runner
	target     string
	stage      phase.Stage // evaluate, or evaluate-repeats
	judges     []config.ModelConfig
	seats      []llm.Client // one per judge; batch replay when the judge batches
	rowKeyBase string
	unitDir    string
	seed       uint64

	ctx     context.Context
	callCtx context.Context
	stop    context.CancelCauseFunc
	lane    *schedule.Lane
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
	j := &judgeTarget{r: r, target: targetID, stage: phase.StageEvaluate, judges: judges, unitDir: r.verdictUnitDir(targetID), seed: r.cfg.Seed,
		ctx: ctx, callCtx: callCtx, stop: stop, lane: r.lanes.Of(laneKey{phase.StageEvaluate, targetID})}
	if err := j.openSeats(); err != nil {
		return nil, err
	}
	j.rowKeyBase = r.verdictKeyBase()
	j.keep = int64(2 * j.lane.Cap())
	j.bar = r.openBar(phase.StageEvaluate, targetID, total)
	j.bar.Bar().SetNote(r.models.LimitNote(judges...))
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
		c, err := r.models.Model(judgeField, m)
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
	j.bar.Close()
}

// evalInputs are what a scores file depends on (convSHA: conversations.json's).
func (r *Runner) evalInputs(convSHA string) map[string]string {
	judges := r.judges()
	jids := make([]any, len(judges))
	for i, j := range judges {
		jids[i] = clientset.Identity(j)
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
func (j *judgeTarget) start(conv *artifacts.Conversation, wait bool) *schedule.Row[artifacts.Score] {
	unit := j.unitName(conv.ID, conv.Sample)
	st, created := j.r.rows.verdicts.Claim(unit, j.rowKey(conv))
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
		st.Finish(j.run(st, unit, ref, held))
		if !wait {
			// Judged as its conversation ended: the evaluate pass
			// that writes it needs only whether it is stored.
			j.r.rows.verdicts.Retire(unit, st)
		}
	}, func() {
		defer j.rows.Done()
		if held != nil && !wait {
			j.held.Add(-1)
		}
		st.Finish(schedule.Outcome[artifacts.Score]{Status: schedule.Stopped})
	})
	if !ok {
		j.rows.Done()
		st.Finish(schedule.Outcome[artifacts.Score]{Status: schedule.Stopped})
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
func (j *judgeTarget) run(st *schedule.Row[artifacts.Score], unit string, ref convRef, conv *artifacts.Conversation) schedule.Outcome[artifacts.Score] {
	st.WaitPrev()
	start := time.Now()
	if conv == nil {
		c, err := j.readConv(ref)
		if err != nil {
			return j.done(schedule.Outcome[artifacts.Score]{Status: schedule.Failed, Reason: err.Error()}, ref.id)
		}
		conv = &c
	}
	if conv.ConvID == "" {
		conv.ConvID = artifacts.ConvID(conv.ID, j.target, conv.Sample)
	}
	u, err := j.r.store.Unit(unit)
	if err != nil {
		return j.done(schedule.Outcome[artifacts.Score]{Status: schedule.Failed, Reason: err.Error()}, conv.ConvID)
	}
	defer u.Close()
	var score artifacts.Score
	if u.Result(st.Key(), &score) {
		return j.done(schedule.Outcome[artifacts.Score]{Status: schedule.Reused, Stored: true, Took: time.Since(start)}, conv.ConvID)
	}
	score, usage, err := j.verdict(u, *conv)
	s := u.Stats()
	out := schedule.Outcome[artifacts.Score]{Spent: s.Spent, Saved: s.Saved}
	switch {
	case err != nil && fatalErr(err):
		j.stop(err)
		out.Status = schedule.Stopped
	case err != nil && (j.callCtx.Err() != nil || budgetStopped(err)):
		out.Status = schedule.Stopped
	case err != nil:
		// Recorded as a null verdict with its reason; retried next run.
		score = artifacts.Score{ID: conv.ID, MetricID: conv.MetricID, TargetModel: j.target, Sample: conv.Sample,
			ConvID: conv.ConvID, NullReason: "judge failed: " + err.Error()}
		out.Stored = u.SetResult(errorKey(st.Key()), score) == nil
		out.Status, out.Reason = schedule.Failed, err.Error()
	default:
		out.Status = schedule.Done
		if s.Misses == 0 {
			out.Status = schedule.Reused
		}
		if err := j.keepScore(u, st.Key(), score, usage); err != nil {
			out.Status, out.Reason = schedule.Failed, err.Error()
		} else {
			out.Stored = true
		}
	}
	out.Took = time.Since(start)
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
		panel[k] = stages.NamedClient{Name: JudgeLabel(jm), Client: u.Client(clientset.Identity(jm), j.seats[k])}
	}
	return stages.Evaluate(j.callCtx, panel, r.prompts, m, conv, stages.JudgeOptions{ShowExamples: r.cfg.Judge.ShowExamples, Seed: j.seed})
}

// done counts a finished verdict row in the summary and on the bar.
func (j *judgeTarget) done(o schedule.Outcome[artifacts.Score], name string) schedule.Outcome[artifacts.Score] {
	j.r.Report.Count(j.stage, j.target, name, o.Status, o.Reason, o.Spent, o.Saved)
	if o.Status == schedule.Stopped {
		j.bar.Bar().Unfinished(o.Spent)
	} else {
		j.bar.Bar().Done(o.Status == schedule.Failed, o.Status == schedule.Reused || o.Spent.Requests == 0, o.Spent, o.Took)
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
