package runner

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"time"

	"github.com/impactbench/impactbench/internal/artifacts"
	"github.com/impactbench/impactbench/internal/config"
	"github.com/impactbench/impactbench/internal/llm"
	"github.com/impactbench/impactbench/internal/progress"
	"github.com/impactbench/impactbench/internal/stages"
)

// judging is one target's evaluate pass: the panel's clients, the per-row
// keys and the counters that become the phase's report. Evaluate opens one
// over conversations.json; Run opens one before simulate, so each finished
// conversation is judged while the others are still being simulated and the
// judge's share of the provider limits is spent inside the simulation's
// time, not after it.
type judging struct {
	r          *Runner
	target     string
	judges     []config.ModelConfig
	seats      []llm.Client // one per judge; batch replay when the judge batches
	landmarkC  llm.Client
	landmarkM  config.ModelConfig
	rowKeyBase string
	unitDir    string
	seed       uint64 // master seed of the judge calls (a repeat's own for evaluate --repeats)
	bar        *progress.Bar

	mu    sync.Mutex
	spent llm.Usage
	saved llm.Usage
	// reported is set once the phase's report has read spent; what early
	// judges pay after that goes to late as well, for early.go's finish.
	reported  bool
	late      llm.Usage
	failures  []RowFailure
	fatal     error
	scenarios map[string]artifacts.Scenario // landmark check outside a pipeline
	judged    []bool                        // by conversations.json row: judged (or reused) by the pipeline in this process
	// early maps the units judged before simulate took their conversation
	// over (run, early.go) to their row keys: already counted on the bar.
	early map[string]string
}

// openJudging builds the judge panel of targetID. total sizes the progress bar.
func (r *Runner) openJudging(targetID string, total int) (*judging, error) {
	judges := r.judges()
	j := &judging{r: r, target: targetID, judges: judges, unitDir: "eval", seed: r.cfg.Seed}
	if len(r.opts.Judges) > 0 {
		j.unitDir = "eval-" + filepath.Base(filepath.Dir(r.scoresPath(targetID)))
	}
	judgeField := "evaluator_model"
	if len(r.opts.Judges) > 0 {
		judgeField = ""
	}
	j.seats = make([]llm.Client, len(judges))
	for i, m := range judges {
		c, err := r.modelClient(judgeField, m)
		if err != nil {
			return nil, err
		}
		j.seats[i] = c
	}
	if r.cfg.Validity.LandmarkCheck {
		j.landmarkM = judges[0]
		if r.cfg.LandmarkModel != nil {
			j.landmarkM = *r.cfg.LandmarkModel
		}
		c, err := r.modelClient("", j.landmarkM)
		if err != nil {
			return nil, err
		}
		j.landmarkC = c
	}
	in := r.evalInputs("")
	j.rowKeyBase = fingerprint(in["metrics"], in["judges"], in["options"], in["prompts"])
	j.bar = r.prog.Start("evaluate "+targetID, total)
	j.bar.SetNote(r.limitNote(judges...))
	return j, nil
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

func (j *judging) unitName(id string, sample int) string {
	return fmt.Sprintf("%s/%s/%s__s%d", safeName(j.target), j.unitDir, safeName(id), sample)
}

func (j *judging) fail(row, reason string) {
	j.mu.Lock()
	j.failures = append(j.failures, RowFailure{Row: row, Reason: reason})
	j.mu.Unlock()
}

// scenario returns the scenario of a row for the landmark check (sc when the
// caller has it; otherwise scenarios.json, read once).
func (j *judging) scenario(id string, sc *artifacts.Scenario) (artifacts.Scenario, error) {
	if sc != nil {
		return *sc, nil
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.scenarios == nil {
		scs, err := j.r.loadScenarios()
		if err != nil {
			return artifacts.Scenario{}, err
		}
		j.scenarios = make(map[string]artifacts.Scenario, len(scs))
		for _, s := range scs {
			j.scenarios[s.ID] = s
		}
	}
	return j.scenarios[id], nil
}

// judge evaluates one conversation and stores its score in the call store.
// done reports whether the row now has a stored score (false when the
// context ended or the cost ceiling stopped it). A fatal provider error is
// kept in j.fatal and returned so the caller can stop.
func (j *judging) judge(ctx context.Context, conv artifacts.Conversation, sc *artifacts.Scenario) (done bool, fatal error) {
	r := j.r
	start := time.Now()
	if conv.ConvID == "" {
		conv.ConvID = artifacts.ConvID(conv.ID, j.target, conv.Sample)
	}
	rowKey := fingerprint(j.rowKeyBase, conv.Transcript, conv.Status, conv.StatusReason, conv.MetricID)
	name := j.unitName(conv.ID, conv.Sample)
	if j.judgedEarly(name, rowKey) {
		return true, nil
	}
	unit, err := r.store.Unit(name)
	if err != nil {
		j.fail(conv.ConvID, err.Error())
		j.bar.Done(true, false, llm.Usage{}, time.Since(start))
		return false, nil
	}
	defer unit.Close()
	var score artifacts.Score
	if unit.Result(rowKey, &score) {
		j.bar.Done(false, true, llm.Usage{}, time.Since(start))
		return true, nil
	}
	m, _ := r.bench.MetricByID(conv.MetricID)
	panel := make([]stages.NamedClient, len(j.judges))
	for k, jm := range j.judges {
		panel[k] = stages.NamedClient{Name: JudgeLabel(jm), Client: unit.Client(identity(jm), j.seats[k])}
	}
	score, u, err := stages.Evaluate(ctx, panel, r.prompts, m, conv, stages.JudgeOptions{ShowExamples: r.cfg.Judge.ShowExamples, Seed: j.seed})
	if err == nil && j.landmarkC != nil && conv.Status != artifacts.StatusError && len(conv.Transcript) > 0 {
		var s artifacts.Scenario
		if s, err = j.scenario(conv.ID, sc); err == nil {
			var v artifacts.Validity
			var lu llm.Usage
			v, lu, err = stages.CheckLandmarks(ctx, unit.Client(identity(j.landmarkM), j.landmarkC), r.prompts, s, conv, JudgeLabel(j.landmarkM))
			u = u.Add(lu)
			if err == nil {
				score.Valid = v.Valid
			}
		}
	}
	st := unit.Stats()
	j.addStats(st.Spent, st.Saved)
	if err != nil {
		if fatalErr(err) {
			j.mu.Lock()
			if j.fatal == nil {
				j.fatal = err
			}
			j.mu.Unlock()
			j.bar.Unfinished(st.Spent)
			return false, err
		}
		if ctx.Err() != nil || budgetStopped(err) {
			j.bar.Unfinished(st.Spent)
			return false, nil
		}
		j.fail(conv.ConvID, err.Error())
		// Recorded as a null verdict with its reason; retried next run.
		score = artifacts.Score{ID: conv.ID, MetricID: conv.MetricID, TargetModel: j.target, Sample: conv.Sample,
			ConvID: conv.ConvID, NullReason: "judge failed: " + err.Error()}
		_ = unit.SetResult(errorKey(rowKey), score)
		j.bar.Done(true, false, st.Spent, time.Since(start))
		return true, nil
	}
	ur := artifacts.UsageFrom(u)
	score.Usage = &ur
	if score.TargetModel == "" {
		score.TargetModel = j.target
	}
	if err := unit.SetResult(rowKey, score); err != nil {
		j.fail(conv.ConvID, err.Error())
		j.bar.Done(true, false, st.Spent, time.Since(start))
		return false, nil
	}
	j.bar.Done(false, st.Misses == 0, st.Spent, time.Since(start))
	return true, nil
}

// judgedEarly reports (once) whether the unit was judged in this process
// before simulate took its conversation over, from this very conversation.
func (j *judging) judgedEarly(name, rowKey string) bool {
	j.mu.Lock()
	defer j.mu.Unlock()
	k, ok := j.early[name]
	delete(j.early, name)
	return ok && k == rowKey
}

// judgeEarly judges a conversation stored before simulate started and
// remembers it, so the pipeline does not judge or count it again.
func (j *judging) judgeEarly(ctx context.Context, conv artifacts.Conversation, sc *artifacts.Scenario) (fatal error) {
	done, fatal := j.judge(ctx, conv, sc)
	if done {
		rowKey := fingerprint(j.rowKeyBase, conv.Transcript, conv.Status, conv.StatusReason, conv.MetricID)
		j.mu.Lock()
		if j.early == nil {
			j.early = map[string]string{}
		}
		j.early[j.unitName(conv.ID, conv.Sample)] = rowKey
		j.mu.Unlock()
	}
	return fatal
}

// pipeline judges conversations as simulate finishes them. Its queue holds
// transcripts only while it is short (keep); further back it holds
// references and the conversation is read back from the call store, so a
// judge that lags far behind costs no memory worth counting, a judge pool
// paused by Retry-After never stalls the simulation, and a judge that keeps
// up never pays for re-reading what simulate just wrote.
type pipeline struct {
	j    *judging
	rows []simRow // conversations.json's rows, in order

	mu     sync.Mutex
	cond   *sync.Cond
	queue  []pipeItem
	keep   int // queued items that may carry their conversation
	closed bool
	wg     sync.WaitGroup
}

type pipeItem struct {
	i    int // conversations.json row
	row  simRow
	sc   *artifacts.Scenario // only with the landmark check
	conv *artifacts.Conversation
}

// startPipeline opens the judging of targetID and starts its workers. It
// returns nil when judging cannot start before conversations.json exists:
// batch judges (their point is one batch after simulation) and dry runs.
// Rows are taken while ctx lives; their calls run under callCtx (see simulate).
func (r *Runner) startPipeline(ctx, callCtx context.Context, targetID string, rows []simRow, stop context.CancelCauseFunc) (*pipeline, error) {
	if r.opts.DryRun {
		return nil, nil
	}
	for _, jm := range r.judges() {
		if jm.Batch {
			return nil, nil
		}
	}
	j, err := r.early.target(targetID).adoptJudging(len(rows))
	if j == nil && err == nil {
		j, err = r.openJudging(targetID, len(rows))
	}
	if err != nil {
		return nil, err
	}
	j.judged = make([]bool, len(rows))
	read := r.readConv(targetID, rows)
	workers := r.workers(r.cfg.Run.Concurrency.Evaluate, len(rows))
	p := &pipeline{j: j, rows: rows, keep: 2 * workers}
	p.cond = sync.NewCond(&p.mu)
	for range workers {
		p.wg.Add(1)
		go func() {
			defer p.wg.Done()
			for {
				it, ok := p.next()
				if !ok {
					return
				}
				if ctx.Err() != nil {
					continue // drain: the rows stay unjudged, Evaluate is not reached
				}
				conv := it.conv
				if conv == nil {
					c, err := read(it.i)
					if err != nil {
						continue // Evaluate judges it from conversations.json
					}
					conv = &c
				}
				done, fatal := j.judge(callCtx, *conv, it.sc)
				if fatal != nil {
					stop(fatal)
				}
				j.judged[it.i] = done // each row is queued once: no two workers share an index
			}
		}()
	}
	return p, nil
}

func (p *pipeline) next() (pipeItem, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for len(p.queue) == 0 && !p.closed {
		p.cond.Wait()
	}
	if len(p.queue) == 0 {
		return pipeItem{}, false
	}
	it := p.queue[0]
	p.queue[0] = pipeItem{}
	p.queue = p.queue[1:]
	return it, true
}

// add queues conversation i (row) that simulate has just stored; conv is
// its transcript, which the caller must not modify afterwards.
func (p *pipeline) add(i int, row simRow, sc *artifacts.Scenario, conv *artifacts.Conversation) {
	if p == nil {
		return
	}
	if p.j.landmarkC == nil {
		sc = nil
	}
	p.mu.Lock()
	if len(p.queue) >= p.keep {
		conv = nil
	}
	p.queue = append(p.queue, pipeItem{i, row, sc, conv})
	p.mu.Unlock()
	p.cond.Signal()
}

// finish waits until every queued conversation is judged.
func (p *pipeline) finish() {
	if p == nil {
		return
	}
	p.mu.Lock()
	p.closed = true
	p.mu.Unlock()
	p.cond.Broadcast()
	p.wg.Wait()
}

// abandonJudging reports a pipeline whose simulate did not finish: what its
// judges spent, and that evaluate did not run. Its scores are stored and
// reused by the next run.
func (r *Runner) abandonJudging(p *pipeline) {
	if p == nil {
		return
	}
	j := p.j
	j.bar.End()
	done, _, reused := j.bar.Counts()
	spent, saved := j.report()
	j.mu.Lock()
	failed := len(j.failures)
	j.mu.Unlock()
	r.Report.addReused(saved)
	r.Report.add(PhaseReport{Phase: "evaluate", Target: j.target, Output: r.scoresPath(j.target),
		Status: "stopped", Reason: fmt.Sprintf("simulate did not finish; %d conversations judged meanwhile are saved", done),
		Rows: done, Reused: reused, Spent: spent, Calls: spent.Requests, Failed: failed})
}

// addStats counts what one judged row paid and replayed.
func (j *judging) addStats(spent, saved llm.Usage) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.spent, j.saved = j.spent.Add(spent), j.saved.Add(saved)
	if j.reported {
		j.late = j.late.Add(spent)
	}
}

// report returns what the judges paid and replayed so far, for the phase's
// report; anything paid later is kept apart (takeLate).
func (j *judging) report() (spent, saved llm.Usage) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.reported = true
	return j.spent, j.saved
}

// takeLate returns what was paid after the report, once.
func (j *judging) takeLate() llm.Usage {
	j.mu.Lock()
	defer j.mu.Unlock()
	late := j.late
	j.late = llm.Usage{}
	return late
}
