package runner

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/impactbench/impactbench/internal/artifacts"
	"github.com/impactbench/impactbench/internal/callstore"
	"github.com/impactbench/impactbench/internal/config"
	"github.com/impactbench/impactbench/internal/llm"
	"github.com/impactbench/impactbench/internal/llm/batch"
	"github.com/impactbench/impactbench/internal/llm/provider"
	"github.com/impactbench/impactbench/internal/stages"
)

// earlySims removes the barrier between gen_scenarios and simulate in
// `run`: a variant starts simulating as soon as its base scenario's
// rewrites are done, while other metrics are still being generated.
//
// Early conversations only fill the call store, under the unit and row key
// simulate would use. simulate, once scenarios.json is written, takes each
// row over (waiting for one still running), so conversations.json, its row
// order, the phase records, resume and skip-if-unchanged stay exactly those
// of simulate; a row simulate never reaches (the scenario set changed after
// all) is stored and costs nothing more on a later run.
type earlySims struct {
	byTarget map[string]*earlySim
}

// earlySim is one target's early conversations.
type earlySim struct {
	s     *simRun       // clients, identities and row keys (no rows)
	slots chan struct{} // conversations in flight, shared with simulate
	jobs  chan simJob
	stop  chan struct{} // closed when simulate takes over
	wg    sync.WaitGroup

	mu      sync.Mutex
	stopped bool
	started atomic.Int64
	running map[string]chan struct{} // unit → closed when its job ends
	done    map[string]earlyDone     // unit → what its job stored
	spent   map[string]llm.Usage     // unit → paid, until simulate takes it over
	fatal   error                    // a provider error no conversation escapes (simulate meets it itself)

	// Judging of early conversations: the judging simulate's pipeline
	// adopts (so the evaluate bar and its counts run on), opened at the
	// first early conversation; nil when judges cannot be pipelined.
	judgeOK bool
	rows    int
	jSlots  chan struct{}
	j       *judging
	adopted bool
}

// earlyDone is what an early conversation stored and cost, for simulate's
// report when it takes the row over.
type earlyDone struct {
	resKey string
	stats  callstore.Stats
	dur    time.Duration
}

// startEarly starts early simulation for the targets whose simulate will
// run after gen_scenarios. rows is the number of conversations per target
// gen_scenarios is about to produce (its capacity bound, not a promise).
func (r *Runner) startEarly(ctx context.Context, targets []string, rows int) *earlySims {
	if r.opts.DryRun || r.opts.Shard.Active() || rows == 0 {
		return nil
	}
	if upToDate, _ := r.upToDate("gen_scenarios", filepath.Join(r.outDir, "scenarios.json"), r.scenarioInputs()); upToDate {
		return nil // nothing will be generated: simulate reads the file as always
	}
	es := &earlySims{byTarget: map[string]*earlySim{}}
	for _, id := range targets {
		e, ok := r.newEarlySim(id, rows)
		if ok {
			es.byTarget[id] = e
			e.start(ctx, r.workers(r.cfg.Run.Concurrency.Simulate, rows))
		}
	}
	if len(es.byTarget) == 0 {
		return nil
	}
	return es
}

// newEarlySim prepares a target's early conversations, unless simulate
// would not run for it anyway (its conversations.json is kept as made
// elsewhere or edited by hand) or would refuse to (fewer rows than the file
// holds): money spent early there would buy nothing.
func (r *Runner) newEarlySim(targetID string, rows int) (*earlySim, bool) {
	target, err := r.targetConfig(targetID)
	if err != nil || r.batchWaves(r.cfg.UserModel) || r.batchWaves(target) {
		// Batch waves take every conversation at once, at half price:
		// starting some early in real time would pay them in full.
		return nil, false
	}
	out := filepath.Join(r.runDir(targetID), "conversations.json")
	inputs := r.simInputs(target, "(being generated)")
	if upToDate, _ := r.upToDate("simulate/"+targetID, out, inputs); upToDate {
		return nil, false
	}
	if r.guardRows(out, rows, "") != nil || r.guardRows(r.scoresPath(targetID), rows, "") != nil {
		return nil, false
	}
	s, err := r.newSimRun(targetID, target, nil, inputs)
	if err != nil {
		return nil, false
	}
	workers := r.workers(r.cfg.Run.Concurrency.Simulate, rows)
	judgeOK := true
	for _, jm := range r.judges() {
		judgeOK = judgeOK && !jm.Batch // a batch judge waits for the whole simulation
	}
	return &earlySim{
		judgeOK: judgeOK,
		rows:    rows,
		jSlots:  make(chan struct{}, r.workers(r.cfg.Run.Concurrency.Evaluate, rows)),
		s:       s,
		slots:   make(chan struct{}, workers),
		jobs:    make(chan simJob, rows),
		stop:    make(chan struct{}),
		running: map[string]chan struct{}{},
		done:    map[string]earlyDone{},
		spent:   map[string]llm.Usage{},
	}, true
}

func (e *earlySim) start(ctx context.Context, workers int) {
	e.s.callCtx = ctx
	for range workers {
		e.wg.Add(1)
		go func() {
			defer e.wg.Done()
			for {
				select {
				case <-e.stop:
					return
				case <-ctx.Done():
					return
				case job := <-e.jobs:
					e.run(ctx, job)
				}
			}
		}()
	}
}

// offer queues the conversations of finished variants (every sample).
func (es *earlySims) offer(variants []artifacts.Scenario, samples int) {
	if es == nil {
		return
	}
	for _, v := range variants {
		// The row key hashes the scenario as simulate will read it from
		// scenarios.json: a JSON round trip gives exactly that form.
		sc, err := canonicalScenario(v)
		if err != nil {
			continue
		}
		for _, e := range es.byTarget {
			for smp := range samples {
				select {
				case e.jobs <- simJob{sc: sc, simRow: simRow{sc.ID, smp}}:
				default: // more rows than announced: simulate does the rest
				}
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

// run simulates one conversation into the call store, unless simulate has
// taken over or the row is already stored, and judges it.
func (e *earlySim) run(ctx context.Context, job simJob) {
	r, s := e.s.r, e.s
	name := r.simUnit(s.targetID, job.simRow)
	select {
	case e.slots <- struct{}{}:
	case <-e.stop:
		return
	case <-ctx.Done():
		return
	}
	fin, ok := e.claim(name)
	if !ok {
		<-e.slots
		return
	}
	// Closed after judging too: simulate takes the row over only then,
	// so the pipeline never judges it a second time alongside.
	defer close(fin)
	conv, stored := e.converse(ctx, name, job)
	<-e.slots
	if stored {
		e.judge(ctx, conv, job.sc)
	}
}

// converse runs and stores the conversation; stored is false when it was
// stored by an earlier run (simulate replays it) or did not finish.
func (e *earlySim) converse(ctx context.Context, name string, job simJob) (conv artifacts.Conversation, stored bool) {
	r, s := e.s.r, e.s
	start := time.Now()
	rowKey := fingerprint(s.rowKeyBase, job.sc, job.sample)
	unit, err := r.store.Unit(name)
	if err != nil {
		return conv, false
	}
	defer unit.Close()
	if unit.Result(rowKey, &conv) && conv.Status != artifacts.StatusError {
		return conv, false
	}
	conv, err = s.converse(unit, job)
	st := unit.Stats()
	e.mu.Lock()
	if st.Spent.Requests > 0 {
		e.spent[name] = st.Spent
	}
	e.mu.Unlock()
	if err != nil {
		if fatalErr(err) {
			e.halt(err)
		}
		return conv, false // calls so far are stored; simulate finishes the row
	}
	resKey := convResultKey(rowKey, conv)
	if unit.SetResult(resKey, conv) != nil {
		return conv, false
	}
	e.mu.Lock()
	e.done[name] = earlyDone{resKey: resKey, stats: st, dur: time.Since(start)}
	e.mu.Unlock()
	return conv, true
}

// judge judges an early conversation into the call store (and the evaluate
// bar), as the pipeline would once simulate hands it over.
func (e *earlySim) judge(ctx context.Context, conv artifacts.Conversation, sc artifacts.Scenario) {
	j := e.judging()
	if j == nil {
		return
	}
	select {
	case e.jSlots <- struct{}{}:
	case <-ctx.Done():
		return
	}
	defer func() { <-e.jSlots }()
	if fatal := j.judgeEarly(ctx, conv, &sc); fatal != nil {
		e.halt(fatal)
	}
}

// judging opens the target's judging at the first early conversation;
// nil once simulate's pipeline has adopted it (or opened its own).
func (e *earlySim) judging() *judging {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.j == nil && e.judgeOK && !e.adopted {
		j, err := e.s.r.openJudging(e.s.targetID, e.rows)
		if err != nil {
			e.judgeOK = false
			return nil
		}
		e.j = j
	}
	return e.j
}

// adoptJudging hands the judging of early conversations to simulate's
// pipeline (nil: none was opened), with the phase's real row count.
func (e *earlySim) adoptJudging(total int) (*judging, error) {
	if e == nil {
		return nil, nil
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	e.adopted = true
	if e.j != nil {
		e.j.bar.SetTotal(total)
	}
	return e.j, nil
}

// claim marks a unit as running early; false once simulate took over.
func (e *earlySim) claim(name string) (chan struct{}, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.stopped {
		return nil, false
	}
	if _, busy := e.running[name]; busy {
		return nil, false
	}
	if _, did := e.done[name]; did {
		return nil, false
	}
	fin := make(chan struct{})
	e.running[name] = fin
	e.started.Add(1)
	return fin, true
}

// halt stops starting early conversations after a fatal provider error;
// simulate meets the error itself and reports it.
func (e *earlySim) halt(err error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.fatal == nil {
		e.fatal = err
	}
	if !e.stopped {
		e.stopped = true
		close(e.stop)
	}
}

// handOver stops starting early conversations (simulate takes over from
// here) and returns the slots simulate shares with those still running.
func (e *earlySim) handOver() chan struct{} {
	e.mu.Lock()
	if !e.stopped {
		e.stopped = true
		close(e.stop)
	}
	e.mu.Unlock()
	return e.slots
}

// end stops early conversations and waits for those still running.
func (e *earlySim) end() {
	e.handOver()
	e.wg.Wait()
}

// takeOver waits for the unit's early conversation, if one is running, and
// returns what it stored (ok) and what it paid, finished or not: from here
// on the row and its cost are simulate's.
//
// It returns errStillRunning when ctx ends first: the caller must then
// leave the unit alone (two openings of one unit would write one journal).
func (e *earlySim) takeOver(ctx context.Context, name string) (d earlyDone, paid llm.Usage, ok bool, err error) {
	e.mu.Lock()
	fin := e.running[name]
	e.mu.Unlock()
	if fin != nil {
		select {
		case <-fin:
		case <-ctx.Done():
			return earlyDone{}, llm.Usage{}, false, errStillRunning
		}
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	d, ok = e.done[name]
	paid = e.spent[name]
	delete(e.done, name)
	delete(e.spent, name)
	return d, paid, ok, nil
}

var errStillRunning = errors.New("the early conversation of this row is still running")

// finish waits for the early workers and reports what was paid for
// conversations simulate never took over (a run that stopped after
// gen_scenarios): they are stored for the next run.
func (es *earlySims) finish(r *Runner) {
	if es == nil {
		return
	}
	for _, id := range slices.Sorted(maps.Keys(es.byTarget)) {
		e := es.byTarget[id]
		e.end()
		e.mu.Lock()
		j, adopted := e.j, e.adopted
		e.adopted = true
		e.mu.Unlock()
		if j != nil && !adopted {
			// No pipeline took it: simulate never started.
			r.abandonJudging(&pipeline{j: j})
		}
		if j != nil {
			// Simulate stopped (a fatal error) while early conversations
			// were still being judged: what they paid after evaluate was
			// reported is this run's spending too.
			if late := j.takeLate(); late.Requests > 0 {
				r.Report.add(PhaseReport{Phase: "evaluate (started early)", Target: id, Status: "ran", Calls: late.Requests, Spent: late,
					Reason: "judge calls of conversations started early that ended after simulate stopped; their verdicts are stored for the next run"})
			}
		}
		e.mu.Lock()
		var left llm.Usage
		for _, u := range e.spent {
			left = left.Add(u)
		}
		n := len(e.spent)
		e.mu.Unlock()
		if left.Requests > 0 {
			r.Report.add(PhaseReport{Phase: "simulate (started early)", Target: id, Status: "ran", Rows: n, Calls: left.Requests, Spent: left,
				Reason: fmt.Sprintf("%d conversation(s) started while scenarios were generated are stored for the next run", n)})
		}
	}
}

// target returns the early simulation of a target, if any.
func (es *earlySims) target(id string) *earlySim {
	if es == nil {
		return nil
	}
	return es.byTarget[id]
}

// expectedScenarios is how many variants gen_scenarios writes when every
// metric gets all its scenarios (0 when that cannot be known).
func (r *Runner) expectedScenarios() int {
	combos, err := stages.Combos(r.cfg.Demographics)
	if err != nil {
		return 0
	}
	return len(r.bench.Metrics) * r.cfg.Generation.ScenariosPerMetric * len(combos)
}

// note adds the conversations started so far to a progress note, so the
// gen_scenarios line shows that simulation is already under way.
func (es *earlySims) note(base func() string) func() string {
	if es == nil {
		return base
	}
	return func() string {
		n := int64(0)
		for _, e := range es.byTarget {
			n += e.started.Load()
		}
		b := base()
		if n == 0 {
			return b
		}
		if b != "" {
			b += " · "
		}
		return b + fmt.Sprintf("%d conversation(s) started", n)
	}
}

// batchWaves reports whether simulate sends m's turns in batch waves
// (`batch: true` and a provider with a batch API; see simulate_batch.go).
func (r *Runner) batchWaves(m config.ModelConfig) bool {
	if !m.Batch {
		return false
	}
	_, err := batch.ForModel(m, provider.Options{HTTP: r.http, Prices: r.prices, Pricing: r.cfg.Pricing})
	return err == nil
}
