package evaluate

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/impactbench/impactbench/internal/artifacts"
	"github.com/impactbench/impactbench/internal/callstore"
	"github.com/impactbench/impactbench/internal/clientset"
	"github.com/impactbench/impactbench/internal/config"
	"github.com/impactbench/impactbench/internal/layout"
	"github.com/impactbench/impactbench/internal/llm"
	"github.com/impactbench/impactbench/internal/phase"
	"github.com/impactbench/impactbench/internal/schedule"
	"github.com/impactbench/impactbench/internal/stages"
	"github.com/impactbench/impactbench/internal/work"
)

// Target is one target's verdicts in one benchmark: the judge panel's
// clients, the fingerprint the row keys start from,
// and the seed of the judge calls (a repeat's own for evaluate --repeats).
// Its rows start while ctx lives and call under callCtx (see simTarget).
type Target struct {
	b      *work.Bench
	target string
	stage  phase.Stage // evaluate, or evaluate-repeats
	judges []config.ModelConfig
	// seats holds one client per judge; judgeAll swaps in a batch replay
	// while verdict rows streamed from simulate may already be reading
	// them, hence seatMu.
	seatMu     sync.RWMutex
	seats      []llm.Client
	rowKeyBase string
	unitDir    string
	seed       uint64

	halt *schedule.Halt
	lane *schedule.Lane
	bar  *work.BarPart
	rows sync.WaitGroup
	// held counts conversations kept in memory by verdict rows waiting for
	// the lane; past keep they are read back from the call store instead,
	// so a judge far behind the simulation costs no memory worth counting.
	held atomic.Int64
	keep int64
}

// NewTarget builds targetID's judge panel; total sizes its bar. Its rows
// run under the context of whoever starts them; a fatal provider error
// halts them through halt, which it may share with the target's
// conversations (nil: a halt of its own).
func NewTarget(halt *schedule.Halt, b *work.Bench, targetID string, total int) (*Target, error) {
	if halt == nil {
		halt = &schedule.Halt{}
	}
	judges := b.Judges()
	j := &Target{b: b, target: targetID, stage: phase.StageEvaluate, judges: judges, unitDir: verdictUnitDir(b, targetID), seed: b.Cfg.Seed,
		halt: halt, lane: b.Lane(phase.StageEvaluate, targetID)}
	if err := j.openSeats(); err != nil {
		return nil, err
	}
	j.rowKeyBase = verdictKeyBase(b)
	j.keep = int64(2 * j.lane.Cap())
	j.bar = b.OpenBar(phase.StageEvaluate, targetID, total)
	j.bar.Bar().SetNote(b.Models.LimitNote(judges...))
	return j, nil
}

// openSeats builds the panel's clients.
func (j *Target) openSeats() error {
	b := j.b
	judgeField := "evaluator_model"
	if len(b.Opts.Judges) > 0 {
		judgeField = ""
	}
	j.seats = make([]llm.Client, len(j.judges))
	for i, m := range j.judges {
		c, err := b.Models.Model(judgeField, m)
		if err != nil {
			return err
		}
		j.seats[i] = c
	}
	return nil
}

// Close stops new rows and waits for the rows this target started.
func (j *Target) Close() {
	j.halt.Stop(nil)
	j.rows.Wait()
	j.bar.Close()
}

// evalInputs are what a scores file depends on (convSHA: conversations.json's).
func evalInputs(b *work.Bench, convSHA string) map[string]string {
	judges := b.Judges()
	jids := make([]any, len(judges))
	for i, j := range judges {
		jids[i] = clientset.Identity(j)
	}
	return map[string]string{
		layout.ConversationsFile: convSHA, // the input's name in the phase record
		"metrics":                phase.Fingerprint(b.Spec.Metrics),
		"judges":                 phase.Fingerprint(jids...),
		"options":                phase.Fingerprint(b.Cfg.Judge, b.Cfg.Validity),
		"prompts":                b.Prompts.Hash(),
	}
}

func (j *Target) unitName(id string, sample int) string {
	return layout.EvalUnit(j.target, j.unitDir, id, sample)
}

// rowKey hashes what a verdict row is made from. The validity verdict and
// the user model are in it only when the conversation has them, so rows of
// conversations without them keep the keys they always had.
func (j *Target) rowKey(conv *artifacts.Conversation) string {
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
	return phase.Fingerprint(parts...)
}

// verdictKeyBase is what every verdict key of this panel starts from.
func verdictKeyBase(b *work.Bench) string {
	in := evalInputs(b, "")
	return phase.Fingerprint(in["metrics"], in["judges"], in["options"], in["prompts"])
}

// verdictUnitDir is where a target's verdicts are stored in the call store.
func verdictUnitDir(b *work.Bench, targetID string) string {
	return layout.EvalUnitDir(layout.PanelDir(b.PanelDirs()))
}

// Offer starts the verdict of a stored conversation without waiting for
// room in the lane (simulate.Judge).
func (j *Target) Offer(ctx context.Context, conv *artifacts.Conversation) { j.start(ctx, conv, false) }

// start returns the verdict row of a conversation, starting it unless it
// was started already. With wait the caller waits for room in the lane.
func (j *Target) start(ctx context.Context, conv *artifacts.Conversation, wait bool) *schedule.Row[artifacts.Score] {
	unit := j.unitName(conv.ID, conv.Sample)
	st, created := j.b.Verdicts.Claim(unit, j.rowKey(conv))
	if created {
		j.launch(ctx, st, unit, conv, wait)
	}
	return st
}

// startKeyed is start for a row of the judging pass whose key the
// validation pass made: the transcript is decoded only when no verdict is
// under way or stored for it.
func (j *Target) startKeyed(ctx context.Context, raw []byte, row evalRow) (string, *schedule.Row[artifacts.Score], error) {
	unit := j.unitName(row.ID, row.Sample)
	st, created := j.b.Verdicts.Claim(unit, row.Key)
	if !created {
		return unit, st, nil
	}
	conv, err := artifacts.DecodeConversation(raw)
	if err == nil && (conv.ID != row.ID || conv.Sample != row.Sample || j.rowKey(&conv) != row.Key) {
		err = errConvChanged
	}
	if err != nil {
		st.Finish(schedule.Outcome[artifacts.Score]{Status: schedule.Stopped})
		return "", nil, err
	}
	j.launch(ctx, st, unit, &conv, true)
	return unit, st, nil
}

// launch runs the verdict row st of conv (claimed as unit) on the lane.
func (j *Target) launch(ctx context.Context, st *schedule.Row[artifacts.Score], unit string, conv *artifacts.Conversation, wait bool) {
	held := conv
	if !wait && j.held.Add(1) > j.keep {
		j.held.Add(-1)
		held = nil // read back when its turn comes
	}
	ref := convRef{id: conv.ID, sample: conv.Sample}
	j.rows.Add(1)
	ok := j.halt.Err() == nil && j.b.Go(ctx, j.lane, wait, func() {
		defer j.rows.Done()
		if held != nil && !wait {
			j.held.Add(-1)
		}
		if j.halt.Err() != nil { // halted while it waited for room
			st.Finish(schedule.Outcome[artifacts.Score]{Status: schedule.Stopped})
		} else {
			st.Finish(j.run(ctx, st, unit, ref, held))
		}
		if !wait {
			// Judged as its conversation ended: the evaluate pass
			// that writes it needs only whether it is stored.
			j.b.Verdicts.Retire(unit, st)
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
}

// convRef names a conversation to read back from the call store.
type convRef struct {
	id     string
	sample int
}

// run judges one conversation (or replays the stored verdict) and stores
// the score. A judge that fails records a null verdict with its reason,
// retried by the next run; a fatal provider error stops the target's rows.
func (j *Target) run(ctx context.Context, st *schedule.Row[artifacts.Score], unit string, ref convRef, conv *artifacts.Conversation) schedule.Outcome[artifacts.Score] {
	st.WaitPrev()
	start := time.Now()
	if conv == nil {
		c, err := j.readConv(ref)
		if err != nil {
			return j.done(schedule.Outcome[artifacts.Score]{Status: schedule.Failed, Reason: err.Error()}, work.Paid{}, ref.id)
		}
		conv = &c
	}
	if conv.ConvID == "" {
		conv.ConvID = artifacts.ConvID(conv.ID, j.target, conv.Sample)
	}
	u, err := j.b.Store.Unit(unit)
	if err != nil {
		return j.done(schedule.Outcome[artifacts.Score]{Status: schedule.Failed, Reason: err.Error()}, work.Paid{}, conv.ConvID)
	}
	defer u.Close()
	// A row no judge is asked about (its conversation failed or is
	// invalid) is a null verdict that costs nothing: made now or read back,
	// it is not a row "from the store, not paid again".
	reused := schedule.Reused
	if !stages.Judged(*conv) {
		reused = schedule.Done
	}
	var score artifacts.Score
	if u.Result(st.Key(), &score) {
		return j.done(schedule.Outcome[artifacts.Score]{Status: reused, Stored: true, Took: time.Since(start)}, work.Paid{}, conv.ConvID)
	}
	// A judge that failed is asked again by a run; a replay (merge
	// --from-store) keeps the null verdict the worker stored, as a merge of
	// its shard file would: it cannot ask without calling a model.
	if j.b.Opts.Replay && u.Result(work.ErrorKey(st.Key()), &score) {
		return j.done(schedule.Outcome[artifacts.Score]{Status: reused, Stored: true, Took: time.Since(start)}, work.Paid{}, conv.ConvID)
	}
	score, usage, err := j.verdict(ctx, u, *conv)
	s := u.Stats()
	out := schedule.Outcome[artifacts.Score]{}
	paid := work.Paid{Spent: s.Spent, Saved: s.Saved}
	switch {
	case err != nil && work.Fatal(err):
		j.halt.Stop(err)
		out.Status = schedule.Stopped
	case err != nil && (ctx.Err() != nil || work.BudgetStopped(err)):
		out.Status = schedule.Stopped
	case err != nil:
		// Recorded as a null verdict with its reason; retried next run.
		score = artifacts.Score{ID: conv.ID, MetricID: conv.MetricID, TargetModel: j.target, Sample: conv.Sample,
			ConvID: conv.ConvID, NullReason: "judge failed: " + err.Error()}
		out.Stored = u.SetResult(work.ErrorKey(st.Key()), score) == nil
		out.Status, out.Reason = schedule.Failed, err.Error()
	default:
		out.Status = schedule.Done
		if s.Misses == 0 {
			out.Status = reused
		}
		if err := j.keepScore(u, st.Key(), score, usage); err != nil {
			out.Status, out.Reason = schedule.Failed, err.Error()
		} else {
			out.Stored = true
		}
	}
	out.Took = time.Since(start)
	return j.done(out, paid, conv.ConvID)
}

// keepScore stores a verdict with its usage.
func (j *Target) keepScore(u *callstore.Unit, key string, score artifacts.Score, usage llm.Usage) error {
	ur := artifacts.UsageFrom(usage)
	score.Usage = &ur
	if score.TargetModel == "" {
		score.TargetModel = j.target
	}
	return u.SetResult(key, score)
}

// seat is judge k's client.
func (j *Target) seat(k int) llm.Client {
	j.seatMu.RLock()
	defer j.seatMu.RUnlock()
	return j.seats[k]
}

// batchSeats puts the batch judges' replays in their seats.
func (j *Target) batchSeats(jb *judgeBatches) {
	j.seatMu.Lock()
	defer j.seatMu.Unlock()
	for k := range j.seats {
		j.seats[k] = jb.client(k, j.seats[k])
	}
}

// verdict asks the panel about one conversation.
func (j *Target) verdict(ctx context.Context, u *callstore.Unit, conv artifacts.Conversation) (artifacts.Score, llm.Usage, error) {
	b := j.b
	m, _ := b.Spec.MetricByID(conv.MetricID)
	panel := make([]stages.NamedClient, len(j.judges))
	for k, jm := range j.judges {
		panel[k] = stages.NamedClient{Name: work.JudgeLabel(jm), Client: u.Client(clientset.Identity(jm), j.seat(k))}
	}
	return stages.Evaluate(ctx, panel, b.Prompts, m, conv, stages.JudgeOptions{ShowExamples: b.Cfg.Judge.ShowExamples, Seed: j.seed})
}

// done counts a finished verdict row in the summary and on the bar.
func (j *Target) done(o schedule.Outcome[artifacts.Score], paid work.Paid, name string) schedule.Outcome[artifacts.Score] {
	j.b.Report.Count(j.stage, j.target, name, o.Status, o.Reason, paid.Spent, paid.Saved)
	if o.Status == schedule.Stopped {
		j.bar.Bar().Unfinished(paid.Spent)
	} else {
		j.bar.Bar().Done(o.Status == schedule.Failed, o.Status == schedule.Reused || paid.Spent.Requests == 0, paid.Spent, o.Took)
	}
	return o
}

// readConv reads a conversation back from the call store.
func (j *Target) readConv(ref convRef) (artifacts.Conversation, error) {
	var conv artifacts.Conversation
	unit := layout.SimUnit(j.target, ref.id, ref.sample)
	if _, ok := j.b.Store.ReadResult(unit, &conv); !ok {
		return conv, fmt.Errorf("conversation %s sample %d missing from %s", ref.id, ref.sample, j.b.Store.Location())
	}
	return conv, nil
}

// JudgeOne judges one conversation outside any output (a person's game,
// judged by the same panel as simulated users' conversations), stored in
// the call store under unit and replayed from it when asked again.
func JudgeOne(ctx context.Context, b *work.Bench, target, unit string, conv artifacts.Conversation) (artifacts.Score, error) {
	j := &Target{b: b, target: target, stage: phase.StageEvaluate, judges: b.Judges(), seed: b.Cfg.Seed}
	if err := j.openSeats(); err != nil {
		return artifacts.Score{}, err
	}
	j.rowKeyBase = verdictKeyBase(b)
	u, err := b.Store.Unit(unit)
	if err != nil {
		return artifacts.Score{}, err
	}
	defer u.Close()
	key := j.rowKey(&conv)
	var score artifacts.Score
	if u.Result(key, &score) {
		return score, nil
	}
	score, usage, err := j.verdict(ctx, u, conv)
	if err != nil {
		return artifacts.Score{}, err
	}
	if err := j.keepScore(u, key, score, usage); err != nil {
		return artifacts.Score{}, err
	}
	u.Result(key, &score) // as stored: with its usage
	return score, nil
}
