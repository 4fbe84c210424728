package simulate

import (
	"context"
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

// Target is one target's conversations in one benchmark: the clients
// and identities its rows share, the fingerprint their row keys start
// from, and what becomes of a conversation once it is stored (judged at
// once, in `run`). Its rows run under the context of whoever starts them;
// a fatal provider error (quota, auth) halts the target so no new row
// starts, while calls already on the wire finish and are stored, not paid
// again next run.
type Target struct {
	b           *work.Bench
	id          string
	model       config.ModelConfig
	userC       llm.Client
	targetC     llm.Client
	userID      callstore.Identity
	targetIdent callstore.Identity
	rowKeyBase  string
	// sharedOpening: the simulated user's first turn is one per row, shared
	// by every target (opening.go).
	sharedOpening bool
	// audit is the conversation audit's model (nil: validity.audit is off).
	audit *auditSeat

	halt *schedule.Halt
	lane *schedule.Lane
	// Bar is the target's share of the simulate bar (nil: not open yet).
	Bar *work.BarPart
	// Pipeline: conversations are judged as they end (run), by a judge
	// NewJudge makes.
	Pipeline bool
	// NewJudge makes the judge of the target's conversations when it
	// pipelines; total sizes its bar. The judge shares the target's halt:
	// its fatal error stops the conversations too.
	NewJudge func(halt *schedule.Halt, total int) (Judge, error)
	judge    Judge     // nil: conversations are not judged as they end
	waves    *simWaves // nil: no role of this target is sent in batch waves
	rows     sync.WaitGroup
	// Started counts the conversations started from offered variants
	// (before scenarios.json exists), for the gen_scenarios note.
	Started *atomic.Int64
}

// Judge judges a target's conversations as they are stored.
type Judge interface {
	// Offer starts the verdict of a stored conversation under ctx (the
	// judge may read it back from the call store later).
	Offer(ctx context.Context, conv *artifacts.Conversation)
	// Close stops new verdicts and waits for those started.
	Close()
}

// ID is the target's id.
func (t *Target) ID() string { return t.id }

// Model is the target's model.
func (t *Target) Model() config.ModelConfig { return t.model }

// Judge is the judge attached to the target (nil: none).
func (t *Target) Judge() Judge { return t.judge }

// newSimTarget opens a target's clients. Its rows run under ctx (see Target).
func NewTarget(b *work.Bench, targetID string) (*Target, error) {
	target, err := b.TargetConfig(targetID)
	if err != nil {
		return nil, err
	}
	in := Inputs(b, target, "")
	t := &Target{
		b: b, id: targetID, model: target,
		userID: clientset.Identity(b.Cfg.UserModel), targetIdent: clientset.Identity(target),
		rowKeyBase:    phase.Fingerprint(in["metrics"], in["target_prompt"], in["settings"], in["user_model"], in["target_model"], in["prompts"], in["validity"]),
		halt:          &schedule.Halt{},
		lane:          b.Lane(phase.StageSimulate, targetID),
		sharedOpening: sharedOpenings(b),
	}
	if b.Opts.DryRun {
		return t, nil // a plan calls nothing: keys may still be missing
	}
	if t.userC, err = b.Models.Model("user_model", b.Cfg.UserModel); err != nil {
		return nil, err
	}
	tf, _ := b.Cfg.TargetField(targetID)
	if t.targetC, err = b.Models.Model(tf, target); err != nil {
		return nil, err
	}
	if t.audit, err = openAudit(b); err != nil {
		return nil, err
	}
	return t, nil
}

// auditSeat is the conversation audit's model and client.
type auditSeat struct {
	model config.ModelConfig
	id    callstore.Identity
	c     llm.Client
}

// openAudit opens the audit's client (nil when the audit is off).
func openAudit(b *work.Bench) (*auditSeat, error) {
	m, field, ok := b.AuditModel()
	if !ok {
		return nil, nil
	}
	c, err := b.Models.Model(field, m)
	if err != nil {
		return nil, err
	}
	return &auditSeat{model: m, id: clientset.Identity(m), c: c}, nil
}

// AttachJudge makes t judge each conversation as soon as it is stored,
// when it pipelines (run); total sizes the evaluate bar. The judge shares
// t's rows' context: a judge's fatal error stops the conversations too.
func (t *Target) AttachJudge(total int) error {
	if !t.Pipeline || t.judge != nil || t.NewJudge == nil {
		return nil
	}
	j, err := t.NewJudge(t.halt, total)
	if err != nil {
		return err
	}
	t.judge = j
	return nil
}

// Close stops new rows and waits for the rows this target started.
func (t *Target) Close() {
	t.halt.Stop(nil)
	t.rows.Wait()
	t.Bar.Close()
	if t.judge != nil {
		t.judge.Close()
	}
}

// convRow is one conversation: a scenario variant and a sample.
type convRow struct {
	sc     artifacts.Scenario
	sample int
}

func (t *Target) unit(id string, sample int) string {
	return layout.SimUnit(t.id, id, sample)
}

// start returns the row of a conversation, starting it unless it was
// started already. With wait the caller waits for room in the lane. keep
// says whether the row keeps its conversation for whoever awaits it (a row
// offered before its output exists stores it and lets it go).
func (t *Target) start(ctx context.Context, row convRow, wait, keep bool) *schedule.Row[artifacts.Conversation] {
	unit := t.unit(row.sc.ID, row.sample)
	st, created := t.b.Convs.Claim(unit, phase.Fingerprint(t.rowKeyBase, row.sc, row.sample))
	if !created {
		return st
	}
	t.rows.Add(1)
	ok := t.halt.Err() == nil && t.b.Go(ctx, t.lane, wait, func() {
		defer t.rows.Done()
		if t.halt.Err() != nil { // halted while it waited for room
			st.Finish(schedule.Outcome[artifacts.Conversation]{Status: schedule.Stopped})
			return
		}
		st.Finish(t.run(ctx, st, unit, row, keep))
	}, func() {
		defer t.rows.Done()
		st.Finish(schedule.Outcome[artifacts.Conversation]{Status: schedule.Stopped})
	})
	if !ok {
		t.rows.Done()
		st.Finish(schedule.Outcome[artifacts.Conversation]{Status: schedule.Stopped})
	}
	return st
}

// run makes one conversation, or replays the stored one, and stores it.
func (t *Target) run(ctx context.Context, st *schedule.Row[artifacts.Conversation], unit string, row convRow, keep bool) schedule.Outcome[artifacts.Conversation] {
	st.WaitPrev()
	start := time.Now()
	u, err := t.b.Store.Unit(unit)
	if err != nil {
		return t.done(ctx, row, schedule.Outcome[artifacts.Conversation]{Status: schedule.Failed, Reason: err.Error()}, work.Paid{}, row.sc.ID, keep, false)
	}
	defer u.Close()
	var conv artifacts.Conversation
	if u.Result(st.Key(), &conv) && conv.Status != artifacts.StatusError && !auditFailed(conv) {
		o := schedule.Outcome[artifacts.Conversation]{Status: schedule.Reused, Stored: true, Val: &conv, Took: time.Since(start)}
		return t.done(ctx, row, o, work.Paid{}, conv.ConvID, keep, true)
	}
	// A row that failed for good (its error, or an audit that found it
	// invalid) is made again by a run; a replay (merge --from-store)
	// writes it as the worker did, as a merge of its shard file would: it
	// cannot make it again without calling a model.
	if t.b.Opts.Replay && u.Result(work.ErrorKey(st.Key()), &conv) {
		o := schedule.Outcome[artifacts.Conversation]{Status: schedule.Reused, Stored: true, Val: &conv, Took: time.Since(start)}
		return t.done(ctx, row, o, work.Paid{}, conv.ConvID, keep, true)
	}
	ru, err := t.openRowUser(u, row, t.userC)
	if err != nil {
		return t.done(ctx, row, schedule.Outcome[artifacts.Conversation]{Status: schedule.Failed, Reason: err.Error()}, work.Paid{}, row.sc.ID, keep, false)
	}
	defer ru.close()
	user, target := turnOrder{ru, t.lane}, turnOrder{u.Client(t.targetIdent, t.targetC), t.lane}
	conv, err = stages.Converse(ctx, user, target, t.b.Prompts, t.spec(row), t.converseOptions(u))
	s := t.waves.paidFor(unit, ru.stats(u.Stats()))
	out := schedule.Outcome[artifacts.Conversation]{Took: time.Since(start)}
	paid := work.Paid{Spent: s.Spent, Saved: s.Saved}
	if err != nil {
		// Cancelled or stopped by the ceiling: the calls made so far are
		// stored; the row is simply not finished. A fatal provider error
		// stops this target's rows.
		if work.Fatal(err) {
			t.halt.Stop(err)
		}
		out.Status = schedule.Stopped
		return t.done(ctx, row, out, paid, "", keep, false)
	}
	if err := u.SetResult(convResultKey(st.Key(), conv), conv); err != nil {
		out.Status, out.Reason = schedule.Failed, err.Error()
		return t.done(ctx, row, out, paid, conv.ConvID, keep, false)
	}
	out.Val, out.Stored, out.Status = &conv, true, schedule.Done
	switch {
	case conv.Status == artifacts.StatusError:
		out.Status, out.Reason = schedule.Failed, conv.StatusReason
	case auditFailed(conv):
		out.Status, out.Reason = schedule.Failed, "audit: "+conv.Validity.Error
	case s.Misses == 0:
		out.Status = schedule.Reused
	}
	return t.done(ctx, row, out, paid, conv.ConvID, keep, false)
}

// auditFailed: the audit gave no answer (asked again next run).
func auditFailed(conv artifacts.Conversation) bool {
	return conv.Validity != nil && conv.Validity.Error != ""
}

// converseOptions are the checks of a row's conversation beyond its turns:
// the audit through the row's call store, and the redos.
func (t *Target) converseOptions(u *callstore.Unit) stages.ConverseOptions {
	o := stages.ConverseOptions{Redos: t.b.Cfg.Validity.Redos}
	if a := t.audit; a != nil {
		o.Audit = &stages.NamedClient{Name: work.JudgeLabel(a.model), Client: u.Client(a.id, a.c)}
		o.AuditReplyChars = t.b.Cfg.Validity.EffectiveAuditReplyChars(a.model)
		if share := t.b.Cfg.Validity.EffectiveAuditShare(a.model); share < 1 {
			o.Sample = &stages.AuditSampling{Share: share}
		}
	}
	return o
}

// done counts a finished row in the summary and on the bar, hands a
// stored conversation to its judge, and returns the outcome. replayed: the
// conversation was stored by an earlier run (not shown turn by turn again).
func (t *Target) done(ctx context.Context, row convRow, o schedule.Outcome[artifacts.Conversation], paid work.Paid, name string, keep, replayed bool) schedule.Outcome[artifacts.Conversation] {
	b := t.b
	b.Report.Count(phase.StageSimulate, t.id, name, o.Status, o.Reason, paid.Spent, paid.Saved)
	if b := t.Bar; b != nil {
		if o.Status == schedule.Stopped {
			b.Bar().Unfinished(paid.Spent)
		} else {
			b.Bar().Done(o.Status == schedule.Failed, o.Status == schedule.Reused || paid.Spent.Requests == 0, paid.Spent, o.Took)
		}
	}
	if o.Val == nil {
		return o
	}
	if b.Cfg.Run.Verbose && !replayed {
		printTurns(b, *o.Val)
	}
	if t.judge != nil {
		t.judge.Offer(ctx, o.Val)
	}
	if !keep {
		o.Val = nil // stored: whoever needs it reads it back
	}
	return o
}

// spec describes one row's conversation (batch waves run it too: the same
// spec, so the same requests and call-store keys).
func (t *Target) spec(row convRow) stages.SimSpec {
	b := t.b
	m, _ := b.Spec.MetricByID(row.sc.MetricID)
	return stages.SimSpec{
		Bench: b.Spec, Scenario: row.sc, Metric: m,
		TargetID: t.id, TargetModel: t.model.Model, UserModel: b.Cfg.UserModel.Model,
		Sample: row.sample, Turns: b.Cfg.Generation.Turns,
		Landmarks: b.Cfg.Landmarks, Perfunctory: b.Cfg.Perfunctory, Seed: b.Cfg.Seed,
		UserTemperature: b.Cfg.UserModel.Temperature, TargetTemperature: t.model.Temperature,
		TurnChecks: b.Cfg.Validity.TurnChecks, Reasks: b.Cfg.Validity.Reasks,
		SharedOpening: t.sharedOpening,
	}
}

// convResultKey is the key a finished conversation is stored under: its row
// key, or for an error conversation (or one whose audit gave no answer) a
// key no run accepts as done, so the output records it and the next run
// retries the row (its calls replayed from the store).
func convResultKey(rowKey string, conv artifacts.Conversation) string {
	if conv.Status == artifacts.StatusError || auditFailed(conv) {
		return work.ErrorKey(rowKey)
	}
	return rowKey
}

// Offer starts the conversations of a base scenario's variants (every
// sample) as soon as generation has them, before scenarios.json exists:
// the row keys hash the scenario as simulate reads it back from the file,
// which a JSON round trip gives exactly.
func (t *Target) Offer(ctx context.Context, variants []artifacts.Scenario) {
	for _, v := range variants {
		sc, err := canonicalScenario(v)
		if err != nil {
			continue // simulate starts it from the file
		}
		for smp := range t.b.Cfg.Generation.NumSamples {
			t.start(ctx, convRow{sc, smp}, false, false)
			if t.Started != nil {
				t.Started.Add(1)
			}
		}
	}
}

func canonicalScenario(s artifacts.Scenario) (artifacts.Scenario, error) {
	b, err := s.MarshalJSON()
	if err != nil {
		return s, err
	}
	var out artifacts.Scenario
	return out, out.UnmarshalJSON(b)
}

// turnOrder orders a conversation's calls among those waiting for a
// provider pool. The stage gives each call its turn as Priority. While
// rows wait for room in the conversation's lane, later turns go first, so
// conversations in flight finish before new ones advance: verdicts and
// output then flow steadily (with every conversation advancing turn by
// turn together, a study's 512 conversations ended in waves every 2.4 s,
// each a burst of judge calls and processor work that emptied the user's
// pool). Once no row waits (the lane drains), earlier turns go first: the
// last conversations, which have the most turns left, must not be the ones
// kept waiting, or the run ends in a tail of half-empty pools.
type turnOrder struct {
	llm.Client
	lane *schedule.Lane
}

func (c turnOrder) Complete(ctx context.Context, req llm.Request) (llm.Response, error) {
	if !c.lane.Backlog() {
		req.Priority = -req.Priority
	}
	return c.Client.Complete(ctx, req)
}
