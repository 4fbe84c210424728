package simulate

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/impactbench/impactbench/internal/artifacts"
	"github.com/impactbench/impactbench/internal/callstore"
	"github.com/impactbench/impactbench/internal/config"
	"github.com/impactbench/impactbench/internal/layout"
	"github.com/impactbench/impactbench/internal/llm"
	"github.com/impactbench/impactbench/internal/llm/batch"
	"github.com/impactbench/impactbench/internal/phase"
	"github.com/impactbench/impactbench/internal/schedule"
	"github.com/impactbench/impactbench/internal/stages"
	"github.com/impactbench/impactbench/internal/summary"
	"github.com/impactbench/impactbench/internal/work"
)

// Batch-wave simulation (`batch: true` on user_model and/or a target).
//
// A conversation is a chain of calls, each needing the answer before it, so
// it cannot go into one batch the way judge calls do. Instead every
// conversation advances one call per wave: a pass runs each unfinished
// conversation through the call store, which replays the answers it holds;
// the first call it lacks is recorded instead of sent (errPending ends that
// conversation's pass), and all recorded calls go out as one provider batch
// per batched role (the user's first turns, when every target shares the
// opening, in one batch every target's waves share: openingbatch.go). The
// next pass stores the answers and records the next calls. A role without batch runs in real time inside the passes.
//
// The requests are deterministic (seeds derive from the master seed, sample,
// turn and attempt), so a process killed at any point records the same
// requests in its next pass and batch.Run finds their batches in its state
// file instead of submitting them again. When no conversation is waiting,
// the normal real-time pass replays every conversation from the store for
// free and writes conversations.json as usual.

// errPending ends a conversation's pass: its next call waits for a batch.
// The stage returns it as a failed call (status error, nothing retried);
// the call store neither stores it nor bills it, and the wave driver throws
// the pass's conversation away.
var errPending = errors.New("waiting for the next batch wave")

// waveRole is one role (simulated user or target) sent through a batch API.
type waveRole struct {
	name  string // "user" or "target"
	model config.ModelConfig
	id    callstore.Identity
	prov  batch.Provider
	state string // batch.Run's state file

	// answers are the last batch's results by custom_id; nil before the
	// first batch of this invocation. Read-only during a pass.
	answers map[string]batch.Result

	mu       sync.Mutex
	items    []batch.Item
	seen     map[string]bool
	turns    []int        // turn of each pending item
	fallback atomic.Int64 // calls the batch failed that went to real time this pass
}

// record adds a request to the next batch.
func (w *waveRole) record(key string, req llm.Request) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.seen[key] {
		return
	}
	w.seen[key] = true
	w.items = append(w.items, batch.Item{CustomID: key, Req: req})
	w.turns = append(w.turns, turnOf(req))
}

func (w *waveRole) reset() {
	w.items, w.seen, w.turns = nil, map[string]bool{}, nil
	w.fallback.Store(0)
}

// turnOf is the conversation turn a simulate request belongs to: the user
// model's requests say so; a target request holds one user message per turn.
func turnOf(req llm.Request) int {
	if t, err := strconv.Atoi(req.Meta[llm.MetaTurn]); err == nil {
		return t
	}
	n := 0
	for _, m := range req.Messages {
		if m.Role == llm.RoleUser {
			n++
		}
	}
	return n
}

// simWaves is one target's batch-wave simulation.
type simWaves struct {
	t            *Target
	rows         []simRow
	user, target *waveRole // nil: that role runs in real time
	// openings is the batch the user's first turns share with the other
	// targets' waves (nil: openings per target, or no batched user).
	openings *openingBatch

	mu     sync.Mutex                 // guards everything below
	done   map[string]bool            // by unit: nothing pending (finished, or left to the real-time pass)
	paid   map[string]callstore.Stats // by unit: the calls the waves paid (Misses, Spent)
	fatal  error                      // a provider error no row can escape (auth, quota, config)
	budget bool                       // a real-time call hit the cost ceiling
}

// batchWaves runs the batch waves of a target whose user_model or target
// says `batch: true` (nothing otherwise): batch waves are how those rows'
// calls are sent, before the rows themselves run and replay them. An error
// means the waves stopped (interrupted, a fatal provider error, an
// untrustworthy batch state file); the phase is reported stopped, and a
// rerun resumes.
func (t *Target) batchWaves(ctx context.Context, rep summary.PhaseReport, rows []simRow) error {
	w := t.newSimWaves(rows)
	if w == nil {
		return nil
	}
	t.waves = w
	err := w.run(ctx)
	if err == nil {
		return nil
	}
	var paid llm.Usage
	for _, p := range w.paid {
		paid = paid.Add(p.Spent)
	}
	t.b.Report.Count(phase.StageSimulate, t.id, "", schedule.Stopped, "", paid, llm.Usage{})
	rep.Status, rep.Rows = phase.StatusStopped, len(rows)
	rep.Reason = "stopped during the batch waves; the answers stored so far and the batches already submitted are kept: run the same command again to resume"
	if work.Fatal(err) {
		rep.Reason = err.Error()
	}
	t.b.Report.Add(rep)
	return fmt.Errorf("simulate %s: batch waves: %w", t.id, err)
}

// newSimWaves returns the wave driver, or nil when no role is batched.
func (t *Target) newSimWaves(rows []simRow) *simWaves {
	b := t.b
	tf, _ := b.Cfg.TargetField(t.id)
	w := &simWaves{t: t, rows: rows,
		user:   t.waveRole("user", "user_model", b.Cfg.UserModel, t.userID),
		target: t.waveRole("target", tf, t.model, t.targetIdent),
	}
	if w.user == nil && w.target == nil {
		return nil
	}
	w.done = map[string]bool{}
	w.paid = map[string]callstore.Stats{}
	return w
}

// waveRole returns the batched role, or nil when the model runs in real
// time (no `batch: true`, or no batch API for its provider: said once).
func (t *Target) waveRole(name, field string, m config.ModelConfig, id callstore.Identity) *waveRole {
	b := t.b
	if !m.Batch {
		return nil
	}
	p, err := batch.ForModel(m, b.Models.ProviderOptions(field))
	if err != nil {
		b.Logf("simulate %s: %s: %v — its turns run in real time instead", t.id, field, err)
		return nil
	}
	state := filepath.Join(b.Files.Calls(), filepath.FromSlash(layout.BatchState(t.id, layout.SimDir, name, b.Opts.Shard)))
	return &waveRole{name: name, model: m, id: id, prov: p, state: state}
}

func (w *simWaves) roles() []*waveRole {
	var out []*waveRole
	for _, role := range []*waveRole{w.user, w.target} {
		if role != nil {
			out = append(out, role)
		}
	}
	return out
}

// run loops: a pass, then a batch per role with pending calls, until no
// conversation waits. A few extra waves cover validation retries (a reply
// without a message is asked again with another seed); anything still
// waiting after the bound is left to the real-time pass.
func (w *simWaves) run(ctx context.Context) (err error) {
	b := w.t.b
	if b.Opts.Force {
		// Like the store, a forced run ignores earlier invocations' batches.
		for _, role := range w.roles() {
			if err := batch.Remove(role.state); err != nil {
				return err
			}
		}
	}
	if w.user != nil && w.t.sharedOpening {
		if w.openings, err = joinOpeningBatch(b, w.user.prov); err != nil {
			return err
		}
		defer func() { err = errors.Join(err, w.openings.leave(b, err == nil)) }()
	}
	return w.loop(ctx)
}

// loop runs the waves: see run.
func (w *simWaves) loop(ctx context.Context) error {
	b := w.t.b
	maxWaves := 4*b.Cfg.Generation.Turns + 8
	for wave := 1; ; wave++ {
		if err := w.pass(ctx); err != nil {
			return err
		}
		if w.fatal != nil {
			return w.fatal
		}
		if err := w.answersStored(); err != nil {
			return err
		}
		if w.budget {
			b.Logf("simulate %s: the cost ceiling stopped a real-time call; the batch waves end here", w.t.id)
			return nil
		}
		pending := 0
		for _, role := range w.roles() {
			pending += len(role.items)
		}
		if pending == 0 {
			return nil
		}
		if wave > maxWaves {
			b.Logf("simulate %s: %d calls still wait after %d batch waves (replies asked again); they run in real time", w.t.id, pending, maxWaves)
			return nil
		}
		if ok, err := w.send(ctx); err != nil || !ok {
			return err
		}
	}
}

// pass runs every conversation not yet done as far as the store and this
// wave's answers take it, recording the calls that must wait.
func (w *simWaves) pass(ctx context.Context) error {
	for _, role := range w.roles() {
		role.reset()
	}
	t := w.t
	var wg sync.WaitGroup
	err := eachRow(t.b, w.rows, func(row convRow) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		if t.halt.Err() != nil {
			return context.Canceled // the target stopped
		}
		wg.Add(1)
		if !t.b.Go(ctx, t.lane, true, func() { defer wg.Done(); w.row(ctx, row) }, wg.Done) {
			wg.Done()
			return ctx.Err()
		}
		return nil
	})
	wg.Wait()
	if err != nil {
		return err
	}
	for _, role := range w.roles() {
		if n := role.fallback.Load(); n > 0 {
			t.b.Logf("simulate %s: %d %s call(s) the batch could not answer were sent in real time", t.id, n, role.name)
		}
	}
	return nil
}

// row advances one conversation.
func (w *simWaves) row(ctx context.Context, row convRow) {
	t := w.t
	name := t.unit(row.sc.ID, row.sample)
	w.mu.Lock()
	done := w.done[name]
	w.mu.Unlock()
	if done {
		return
	}
	unit, err := t.b.Store.Unit(name)
	if err != nil {
		w.markDone(name) // the real-time pass reports it
		return
	}
	defer unit.Close()
	var conv artifacts.Conversation
	if unit.Result(phase.Fingerprint(t.rowKeyBase, row.sc, row.sample), &conv) && conv.Status != artifacts.StatusError && !auditFailed(conv) {
		w.markDone(name)
		return
	}
	var pending atomic.Bool
	user, err := t.openRowUser(unit, row, paced(w.client(w.user, t.userC, &pending)))
	if err != nil {
		w.markDone(name) // the real-time pass reports it
		return
	}
	defer user.close()
	target := unit.Client(t.targetIdent, paced(w.client(w.target, t.targetC, &pending)))
	_, err = stages.Simulate(ctx, user, target, t.b.Prompts, t.spec(row))
	w.settle(name, user.stats(unit.Stats()), pending.Load(), err)
}

func (w *simWaves) markDone(unit string) {
	w.mu.Lock()
	w.done[unit] = true
	w.mu.Unlock()
}

// settle records what one conversation's pass paid and how it ended.
func (w *simWaves) settle(name string, st callstore.Stats, pending bool, err error) {
	if pending {
		st.Misses-- // the recorded call is no answer
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	p := w.paid[name]
	p.Misses += st.Misses
	p.Spent = p.Spent.Add(st.Spent)
	w.paid[name] = p
	switch {
	case pending:
	case err == nil:
		w.done[name] = true
	case errors.Is(err, llm.ErrBudgetExceeded):
		w.done[name] = true
		w.budget = true
	case work.Fatal(err):
		if w.fatal == nil {
			w.fatal = err
		}
	}
}

// paced marks a conversation's calls as made a wave apart: the next call
// of either role comes after at least one batch, minutes to hours later,
// so a cached prefix must outlive the default five minutes to be read
// (llm.CachePlan.Long), whether this role is batched or not.
func paced(c llm.Client) llm.Client {
	return llm.ClientFunc(func(ctx context.Context, req llm.Request) (llm.Response, error) {
		if !req.Cache.Zero() {
			req.Cache.Long = true
		}
		return c.Complete(ctx, req)
	})
}

// client answers a role's calls in a pass: from the last batch, else by
// recording the call for the next one; a real-time role calls its client.
func (w *simWaves) client(role *waveRole, realtime llm.Client, pending *atomic.Bool) llm.Client {
	if role == nil {
		return realtime
	}
	return llm.ClientFunc(func(ctx context.Context, req llm.Request) (llm.Response, error) {
		key := callstore.Key(role.id, req)
		if res, ok := role.answers[key]; ok {
			if res.Err == nil {
				resp := res.Resp
				resp.Cached = false // fresh: the store keeps it, priced at the batch rate
				return resp, nil
			}
			// batch.Run already resubmitted retryable failures; what is
			// left goes in real time like any failed call.
			role.fallback.Add(1)
			return realtime.Complete(ctx, req)
		}
		role.record(key, req)
		pending.Store(true)
		return llm.Response{}, errPending
	})
}

// answersStored drops the state of batches whose answers the last pass
// stored in the call store: a rerun finds them there.
func (w *simWaves) answersStored() error {
	for _, role := range w.roles() {
		if role.answers == nil {
			continue
		}
		role.answers = nil
		if err := batch.Remove(role.state); err != nil {
			return err
		}
	}
	return nil
}

// send submits each role's pending calls as a batch and waits for the
// answers. ok is false when the cost ceiling leaves no room for a wave: the
// real-time pass then goes on up to the ceiling.
func (w *simWaves) send(ctx context.Context) (ok bool, err error) {
	b, roles := w.t.b, w.roles()
	releases := make([]func(float64), len(roles))
	if b.Models.Budget() != nil {
		for k, role := range roles {
			// A batch commits its whole cost at once: reserve it up front.
			est, price := 0.0, b.Models.EstimateCost(role.model)
			for _, it := range role.items {
				if !w.askedElsewhere(role, it) {
					est += price(it.Req) / 2
				}
			}
			rel, err := b.Models.Budget().Reserve(est)
			if err != nil {
				for _, rel := range releases[:k] {
					rel(0)
				}
				b.Logf("simulate %s: the next batch wave (≈$%.4f) would pass the cost ceiling; the rest runs in real time up to the ceiling", w.t.id, est)
				return false, nil
			}
			releases[k] = rel
		}
	}
	for k, role := range roles {
		err := w.sendRole(ctx, role, releases[k])
		if err != nil {
			for _, rel := range releases[k+1:] {
				if rel != nil {
					rel(0)
				}
			}
			return false, err
		}
	}
	return true, nil
}

// sendRole runs one role's batch of this wave: the user's shared openings
// through the batch every target's waves share, the rest through the
// role's own, side by side.
func (w *simWaves) sendRole(ctx context.Context, role *waveRole, release func(float64)) error {
	if len(role.items) == 0 {
		if release != nil {
			release(0)
		}
		return nil
	}
	own, turns, open := w.split(role)
	var (
		wg               sync.WaitGroup
		ownRes, openRes  []batch.Result
		ownErr, openErr  error
		spent, openSpent float64
	)
	if len(open) > 0 {
		wg.Go(func() { openRes, openSpent, openErr = w.sendOpenings(ctx, open) })
	}
	if len(own) > 0 {
		ownRes, ownErr = w.sendOwn(ctx, role, own, turns)
	}
	wg.Wait()
	spent = openSpent
	for _, x := range ownRes {
		spent += x.Resp.Usage.Cost
	}
	if release != nil {
		release(spent)
	}
	if err := errors.Join(ownErr, openErr); err != nil {
		return err
	}
	role.answers = make(map[string]batch.Result, len(ownRes)+len(openRes))
	for _, x := range append(ownRes, openRes...) {
		role.answers[x.CustomID] = x
	}
	return nil
}

// split parts a role's pending calls into its own (with their turns) and
// the shared openings (none unless this is the user and openings are
// shared).
func (w *simWaves) split(role *waveRole) (own []batch.Item, turns []int, open []batch.Item) {
	if role != w.user || w.openings == nil {
		return role.items, role.turns, nil
	}
	for i, it := range role.items {
		if isOpening(it.Req) {
			open = append(open, it)
			continue
		}
		own, turns = append(own, it), append(turns, role.turns[i])
	}
	return own, turns, open
}

// askedElsewhere reports whether another wave already asked for item, an
// opening of the shared batch: this wave will not pay for it.
func (w *simWaves) askedElsewhere(role *waveRole, it batch.Item) bool {
	return role == w.user && w.openings != nil && isOpening(it.Req) && w.openings.asked(it.CustomID)
}

// sendOwn runs a role's own batch of this wave.
func (w *simWaves) sendOwn(ctx context.Context, role *waveRole, items []batch.Item, turns []int) ([]batch.Result, error) {
	wave, waves := w.waveNumber(role, turns)
	w.t.b.Logf("simulate %s: wave %d/%d (%s %s): %d requests sent as a provider batch (50%% price; usually done within an hour, at most 24 h; safe to interrupt and rerun)",
		w.t.id, wave, waves, role.name, turnLabel(turns), len(items))
	res, err := batch.Run(ctx, role.prov, role.state, items, w.batchOptions(role.name))
	if err != nil {
		return res, fmt.Errorf("%s batch (%s): %w", role.name, role.state, err)
	}
	return res, nil
}

// sendOpenings asks for the user's first turns through the batch every
// target's waves share and waits for the answers, whichever wave sends
// them. spent is the price of the openings this wave asked first.
func (w *simWaves) sendOpenings(ctx context.Context, items []batch.Item) (res []batch.Result, spent float64, err error) {
	all, mine := w.openings.ask(items)
	wave, waves := w.waveNumber(w.user, []int{1})
	w.t.b.Logf("simulate %s: wave %d/%d (user turn 1): %d openings in the provider batch every target shares, %d of them asked by another target first (50%% price; usually done within an hour, at most 24 h; safe to interrupt and rerun)",
		w.t.id, wave, waves, len(items), len(items)-len(mine))
	if err := w.openings.wait(ctx, all, w.batchOptions("user, openings")); err != nil {
		return nil, 0, fmt.Errorf("user batch (openings): %w", err)
	}
	for _, f := range all {
		if f.err != nil {
			return nil, 0, f.err
		}
		res = append(res, f.res)
		if mine[f] {
			spent += f.res.Resp.Usage.Cost
		}
	}
	return res, spent, nil
}

// batchOptions are batch.Run's options for a batch of what (a role's name).
func (w *simWaves) batchOptions(what string) batch.Options {
	b, target := w.t.b, w.t.id
	last := time.Time{}
	return batch.Options{
		PollInterval: work.BatchPollInterval,
		Logger:       b.Log,
		OnProgress: func(pr batch.Progress) {
			if time.Since(last) > time.Minute || pr.Succeeded+pr.Failed == pr.Items {
				last = time.Now()
				b.Logf("simulate %s batch (%s): %d/%d answered, %d failed, %d in %d running batch(es)", target, what, pr.Succeeded, pr.Items, pr.Failed, pr.InFlight, pr.Batches)
			}
		},
	}
}

// waveNumber places a role's batch holding turns among the waves a fresh
// run makes (turns × batched roles), from the earliest turn it holds, so
// the count stays right after a resume.
func (w *simWaves) waveNumber(role *waveRole, turns []int) (wave, waves int) {
	perTurn, pos := len(w.roles()), 1
	if role == w.target && perTurn == 2 {
		pos = 2
	}
	first := turns[0]
	for _, t := range turns {
		first = min(first, t)
	}
	return (first-1)*perTurn + pos, w.t.b.Cfg.Generation.Turns * perTurn
}

// turnLabel says which turns a batch holds: "turn 2", or "turns 2, 3"
// after a resume caught conversations at different points.
func turnLabel(turns []int) string {
	seen := map[int]bool{}
	var ts []int
	for _, t := range turns {
		if !seen[t] {
			seen[t] = true
			ts = append(ts, t)
		}
	}
	sort.Ints(ts)
	if len(ts) == 1 {
		return "turn " + strconv.Itoa(ts[0])
	}
	s := make([]string, len(ts))
	for i, t := range ts {
		s[i] = strconv.Itoa(t)
	}
	return "turns " + strings.Join(s, ", ")
}

// paidFor adds to a row's stats in the real-time pass what the waves
// paid for its calls: that pass replays those answers from the store,
// which alone would count them as reused instead of paid now.
func (w *simWaves) paidFor(unit string, st callstore.Stats) callstore.Stats {
	if w == nil {
		return st
	}
	w.mu.Lock()
	p := w.paid[unit]
	w.mu.Unlock()
	st.Misses += p.Misses
	st.Hits -= p.Misses
	st.Spent = st.Spent.Add(p.Spent)
	st.Saved = usageMinus(st.Saved, p.Spent)
	return st
}

// usageMinus is u without o (o is part of u).
func usageMinus(u, o llm.Usage) llm.Usage {
	d := llm.Usage{
		Requests: u.Requests - o.Requests, InputTokens: u.InputTokens - o.InputTokens, OutputTokens: u.OutputTokens - o.OutputTokens,
		CachedInputTokens: u.CachedInputTokens - o.CachedInputTokens, CacheWriteTokens: u.CacheWriteTokens - o.CacheWriteTokens,
		ReasoningTokens: u.ReasoningTokens - o.ReasoningTokens, Cost: u.Cost - o.Cost, CostKnown: u.CostKnown,
	}
	if d.Requests <= 0 && d.InputTokens <= 0 && d.OutputTokens <= 0 {
		return llm.Usage{}
	}
	return d
}

// BatchWaves reports whether simulate sends m's turns in batch waves
// (`batch: true` and a provider with a batch API).
func BatchWaves(b *work.Bench, m config.ModelConfig) bool {
	if !m.Batch {
		return false
	}
	_, err := batch.ForModel(m, b.Models.ProviderOptions(""))
	return err == nil
}
