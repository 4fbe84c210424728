package runner

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/impactbench/impactbench/internal/artifacts"
	"github.com/impactbench/impactbench/internal/callstore"
	"github.com/impactbench/impactbench/internal/config"
	"github.com/impactbench/impactbench/internal/llm"
	"github.com/impactbench/impactbench/internal/progress"
	"github.com/impactbench/impactbench/internal/stages"
)

// runDir is runs/<target> under the output directory.
func (r *Runner) runDir(target string) string { return filepath.Join(r.outDir, "runs", target) }

func (r *Runner) shardSuffix() string {
	if !r.opts.Shard.Active() {
		return ""
	}
	return fmt.Sprintf(".shard-%d-of-%d", r.opts.Shard.Index, r.opts.Shard.Count)
}

// inShard reports whether a row belongs to this invocation's shard. The
// partition hashes the base scenario id, so every machine computes the same
// split and a scenario's variants and samples stay together.
func (r *Runner) inShard(scenarioID string) bool {
	if !r.opts.Shard.Active() {
		return true
	}
	return ShardOf(baseOf(scenarioID), r.opts.Shard.Count) == r.opts.Shard.Index
}

// ShardOf is the shard (0..count-1) a base scenario id belongs to.
func ShardOf(baseID string, count int) int {
	h := fnv.New64a()
	h.Write([]byte(baseID))
	return int(h.Sum64() % uint64(count))
}

func baseOf(id string) string { return artifacts.Scenario{ID: id}.BaseID() }

// loadScenarios reads scenarios.json and checks each row's metric exists.
func (r *Runner) loadScenarios() ([]artifacts.Scenario, error) {
	var scs []artifacts.Scenario
	err := r.scanScenarios(func(s artifacts.Scenario) { scs = append(scs, s) })
	return scs, err
}

// scanScenarios streams scenarios.json to fn and fails (as an input error,
// after reading every row) when rows refer to metrics benchmark.yaml lacks.
func (r *Runner) scanScenarios(fn func(artifacts.Scenario)) error {
	path := filepath.Join(r.outDir, "scenarios.json")
	var missing []string
	total := 0
	err := artifacts.EachScenario(path, func(i int, s artifacts.Scenario) error {
		total++
		if _, ok := r.bench.MetricByID(s.MetricID); !ok {
			missing = append(missing, fmt.Sprintf("row %d (%s): metric_id %q", i, s.ID, s.MetricID))
		}
		fn(s)
		return nil
	})
	if errors.Is(err, os.ErrNotExist) {
		return &InputError{Msg: fmt.Sprintf("%s does not exist: run `impactbench gen-scenarios %s` first", path, r.bench.Slug)}
	}
	if err != nil {
		return &InputError{Msg: err.Error()}
	}
	if total == 0 {
		return emptyScenariosError(path, r.bench.Slug)
	}
	if len(missing) > 0 {
		return &InputError{Msg: fmt.Sprintf("%s: %d scenario(s) refer to metrics that are not in %s (known: %s):\n  %s",
			path, len(missing), r.bench.Path, r.metricIDs(), strings.Join(firstN(missing, 10), "\n  "))}
	}
	return nil
}

func (r *Runner) metricIDs() string {
	ids := make([]string, len(r.bench.Metrics))
	for i, m := range r.bench.Metrics {
		ids[i] = m.ID
	}
	return strings.Join(ids, ", ")
}

func firstN(s []string, n int) []string {
	if len(s) > n {
		return append(s[:n:n], fmt.Sprintf("… and %d more", len(s)-n))
	}
	return s
}

func (r *Runner) targetConfig(id string) (config.ModelConfig, error) {
	t, ok := r.cfg.Target(id)
	if !ok {
		ids := make([]string, len(r.cfg.Targets))
		for i, t := range r.cfg.Targets {
			ids[i] = t.ID
		}
		return t, &InputError{Msg: fmt.Sprintf("target %q is not in %s (targets: %s)", id, r.cfg.Path, strings.Join(ids, ", "))}
	}
	return t, nil
}

func (r *Runner) simInputs(target config.ModelConfig, scenariosSHA string) map[string]string {
	return map[string]string{
		"scenarios.json": scenariosSHA,
		"metrics":        fingerprint(r.bench.Metrics),
		"target_prompt":  fingerprint(r.bench.Scenario.UserContext, r.bench.Scenario.TargetSystemPrompt),
		"settings":       fingerprint(r.cfg.Generation.Turns, r.cfg.Generation.NumSamples, r.cfg.Landmarks, r.cfg.Perfunctory, r.cfg.Seed),
		"user_model":     fingerprint(identity(r.cfg.UserModel)),
		"target_model":   fingerprint(identity(target)),
		"prompts":        r.prompts.Hash(),
	}
}

// simRow names one conversation: the row order of conversations.json.
type simRow struct {
	id     string
	sample int
}

// simJob is a row with its scenario, streamed from scenarios.json to the
// workers: only conversations in flight hold their scenario.
type simJob struct {
	i  int
	sc artifacts.Scenario
	simRow
}

func (r *Runner) simUnit(target string, row simRow) string {
	return fmt.Sprintf("%s/sim/%s__s%d", safeName(target), safeName(row.id), row.sample)
}

// Simulate runs every scenario × sample against one target and writes
// runs/<target>/conversations.json.
func (r *Runner) Simulate(ctx context.Context, targetID string) error {
	_, err := r.simulate(ctx, targetID, false)
	return err
}

// simulate is Simulate. With pipe, every conversation is handed to judge
// workers as soon as it is stored; the returned pipeline (nil when simulate
// was skipped or judging cannot be pipelined) has judged them all by the
// time simulate returns, and goes to evaluate.
func (r *Runner) simulate(ctx context.Context, targetID string, pipe bool) (p *pipeline, err error) {
	if e := r.early.target(targetID); e != nil {
		// However simulate ends (skipped, refused, stopped, done), no
		// conversation of this target starts early after this point.
		defer e.handOver()
	}
	target, err := r.targetConfig(targetID)
	if err != nil {
		return nil, err
	}
	rows, err := r.simRows()
	if err != nil {
		if r.opts.DryRun {
			return nil, r.planSimulateFromConfig(target)
		}
		return nil, err
	}
	out := filepath.Join(r.runDir(targetID), "conversations"+r.shardSuffix()+".json")
	rep := PhaseReport{Phase: "simulate", Target: targetID, Output: out}
	scSHA, _ := fileSHA(filepath.Join(r.outDir, "scenarios.json"))
	inputs := r.simInputs(target, scSHA)
	key := "simulate/" + targetID + r.shardSuffix()
	skip, note := r.checkSkip("simulate", targetID, key, out, inputs, rep)
	if skip {
		return p, nil
	}
	if note != "" {
		defer r.planNote("simulate", targetID, note)
	}
	if r.opts.DryRun {
		r.planSimulate(targetID, target, len(rows))
		return p, nil
	}
	if err := r.guardSimulate(targetID, out, len(rows), pipe); err != nil {
		return nil, err
	}
	s, err := r.newSimRun(targetID, target, rows, inputs)
	if err != nil {
		return p, err
	}
	if s.early = r.early.target(targetID); s.early != nil && !r.opts.Shard.Active() {
		s.slots = s.early.handOver()
	}

	// A fatal provider error in one row (quota, auth) stops new rows from
	// starting by cancelling ctx; calls already on the wire run under
	// callCtx, the caller's context, so answers the provider is already
	// billing for are stored instead of discarded and paid again next run.
	s.callCtx = ctx
	ctx, s.stop = context.WithCancelCause(ctx)
	defer s.stop(nil)
	if err := s.batchWaves(ctx, rep); err != nil {
		return p, err
	}
	if pipe {
		if p, err = r.startPipeline(ctx, s.callCtx, targetID, rows, s.stop); err != nil {
			return nil, err
		}
		defer p.finish() // before stop(nil): the judges share ctx
		s.p = p
	}
	w, err := artifacts.NewArrayWriter(out)
	if err != nil {
		return p, err
	}
	workers := r.workers(r.cfg.Run.Concurrency.Simulate, len(rows))
	s.asm = startAssembler(w, len(rows), 2*workers, r.readConv(targetID, rows))
	if s.slots != nil {
		// The slots bound what is in flight; the extra workers wait for
		// early conversations to end without keeping a slot idle.
		workers = min(2*workers, len(rows))
	}
	defer s.asm.abort()
	s.bar = r.prog.Start("simulate "+targetID, len(rows))
	s.bar.SetNote(r.limitNote(target, r.cfg.UserModel))
	perr := forEachStream(ctx, workers, s.feed(ctx), s.row)
	s.bar.End()
	// The judges finish their queue while conversations.json is written
	// (the deferred finish waits for them before returning).
	return p, r.finishSimulate(ctx, s, rep, key, out, inputs, perr)
}

// simRows is the first pass over scenarios.json: the rows of this shard
// (ids only) and the metric check, before anything is spent; the second
// pass (simRun.feed) streams the scenarios to the workers.
func (r *Runner) simRows() ([]simRow, error) {
	samples := r.cfg.Generation.NumSamples
	var rows []simRow
	err := r.scanScenarios(func(sc artifacts.Scenario) {
		if r.inShard(sc.ID) {
			for s := range samples {
				rows = append(rows, simRow{sc.ID, s})
			}
		}
	})
	return rows, err
}

// guardSimulate refuses to replace conversations.json (and, when judging
// is pipelined, scores.json) with fewer rows.
func (r *Runner) guardSimulate(targetID, out string, rows int, pipe bool) error {
	if err := r.guardRows(out, rows, "scenarios.json or generation.num_samples shrank"); err != nil {
		return err
	}
	if pipe {
		return r.guardRows(r.scoresPath(targetID), rows, "scenarios.json or generation.num_samples shrank")
	}
	return nil
}

// simRun is one target's simulate pass: its clients and row keys, and
// what the workers add up.
type simRun struct {
	r           *Runner
	targetID    string
	target      config.ModelConfig
	rows        []simRow
	userC       llm.Client
	targetC     llm.Client
	userID      callstore.Identity
	targetIdent callstore.Identity
	rowKeyBase  string
	waves       *simWaves // nil: no batch waves

	callCtx context.Context         // calls on the wire finish under it
	stop    context.CancelCauseFunc // stops new rows (a fatal provider error)
	p       *pipeline               // nil: not pipelined
	// early holds the conversations `run` started while scenarios were
	// generated (nil: none); slots bounds conversations in flight across
	// them and this pass.
	early *earlySim
	slots chan struct{}
	asm   *convAssembler
	bar   *progress.Bar

	mu       sync.Mutex
	spent    llm.Usage
	saved    llm.Usage
	failures []RowFailure
	ran      []bool // by row: a conversation is stored
}

func (r *Runner) newSimRun(targetID string, target config.ModelConfig, rows []simRow, inputs map[string]string) (*simRun, error) {
	userC, err := r.modelClient("user_model", r.cfg.UserModel)
	if err != nil {
		return nil, err
	}
	tf, _ := r.cfg.TargetField(targetID)
	targetC, err := r.modelClient(tf, target)
	if err != nil {
		return nil, err
	}
	return &simRun{
		r: r, targetID: targetID, target: target, rows: rows,
		userC: userC, targetC: targetC,
		userID: identity(r.cfg.UserModel), targetIdent: identity(target),
		rowKeyBase: fingerprint(inputs["metrics"], inputs["target_prompt"], inputs["settings"], inputs["user_model"], inputs["target_model"], inputs["prompts"]),
		ran:        make([]bool, len(rows)),
	}, nil
}

// feed streams scenarios.json to the workers as jobs, checking that it
// still holds the rows simRows read.
func (s *simRun) feed(ctx context.Context) func(send func(simJob) bool) error {
	r, rows, samples := s.r, s.rows, s.r.cfg.Generation.NumSamples
	return func(send func(simJob) bool) error {
		i := 0
		return artifacts.EachScenario(filepath.Join(r.outDir, "scenarios.json"), func(_ int, sc artifacts.Scenario) error {
			if !r.inShard(sc.ID) {
				return nil
			}
			for smp := range samples {
				if i >= len(rows) || rows[i] != (simRow{sc.ID, smp}) {
					return fmt.Errorf("%s changed while simulate was reading it; run simulate again", filepath.Join(r.outDir, "scenarios.json"))
				}
				if !send(simJob{i, sc, rows[i]}) {
					return ctx.Err()
				}
				i++
			}
			return nil
		})
	}
}

func (s *simRun) fail(row, reason string) {
	s.mu.Lock()
	s.failures = append(s.failures, RowFailure{Row: row, Reason: reason})
	s.mu.Unlock()
}

// row simulates one conversation, or replays the stored one, or takes over
// the one `run` started early.
func (s *simRun) row(ctx context.Context, job simJob) {
	r, i, row := s.r, job.i, job.simRow
	start := time.Now()
	rowKey := fingerprint(s.rowKeyBase, job.sc, row.sample)
	name := r.simUnit(s.targetID, row)
	early, earlyPaid, tookOver, err := s.takeOverEarly(ctx, name, rowKey)
	if err != nil {
		return // interrupted while its early conversation runs: that one stores what it gets
	}
	unit, err := r.store.Unit(name)
	if err != nil {
		s.fail(row.id, err.Error())
		return
	}
	defer unit.Close()
	var conv artifacts.Conversation
	if tookOver && unit.Result(early.resKey, &conv) {
		s.account(job, conv, early.stats.Misses == 0, earlyPaid, early.dur)
		return
	}
	if unit.Result(rowKey, &conv) && conv.Status != artifacts.StatusError {
		s.ran[i] = true
		s.bar.Done(false, true, llm.Usage{}, time.Since(start))
		s.asm.add(i, &conv)
		s.p.add(i, row, &job.sc, &conv)
		return
	}
	if !s.acquire(ctx) {
		return
	}
	conv, err = s.converse(unit, job)
	s.release()
	st := s.withWaves(i, unit.Stats())
	st.Spent = st.Spent.Add(earlyPaid)
	s.mu.Lock()
	s.saved = s.saved.Add(st.Saved)
	s.mu.Unlock()
	if err != nil {
		// Cancelled or stopped by the ceiling: the calls made so far are
		// stored; the row is simply not finished. A fatal provider error
		// stops the whole phase.
		if fatalErr(err) {
			s.stop(err)
		}
		s.addSpent(st.Spent)
		s.bar.Unfinished(st.Spent)
		return
	}
	s.keep(unit, job, rowKey, conv, st, start)
}

// takeOverEarly waits for the row's early conversation and returns it when
// it was made from this very scenario (its key), with what it paid either way.
func (s *simRun) takeOverEarly(ctx context.Context, name, rowKey string) (earlyDone, llm.Usage, bool, error) {
	if s.early == nil {
		return earlyDone{}, llm.Usage{}, false, nil
	}
	d, paid, ok, err := s.early.takeOver(ctx, name)
	return d, paid, ok && (d.resKey == rowKey || d.resKey == errorKey(rowKey)), err
}

// acquire takes a conversation slot when early conversations share them.
func (s *simRun) acquire(ctx context.Context) bool {
	if s.slots == nil {
		return true
	}
	select {
	case s.slots <- struct{}{}:
		return true
	case <-ctx.Done():
		return false
	}
}

func (s *simRun) release() {
	if s.slots != nil {
		<-s.slots
	}
}

func (s *simRun) addSpent(u llm.Usage) {
	s.mu.Lock()
	s.spent = s.spent.Add(u)
	s.mu.Unlock()
}

// converse runs the simulated user against the target for one row.
func (s *simRun) converse(unit *callstore.Unit, job simJob) (artifacts.Conversation, error) {
	return stages.Simulate(s.callCtx, unit.Client(s.userID, s.userC), unit.Client(s.targetIdent, s.targetC), s.r.prompts, s.spec(job))
}

// spec describes one row's conversation (batch waves run it too: the same
// spec, so the same requests and call-store keys).
func (s *simRun) spec(job simJob) stages.SimSpec {
	r, target := s.r, s.target
	m, _ := r.bench.MetricByID(job.sc.MetricID)
	return stages.SimSpec{
		Bench: r.bench, Scenario: job.sc, Metric: m,
		TargetID: s.targetID, TargetModel: target.Model, UserModel: r.cfg.UserModel.Model,
		Sample: job.sample, Turns: r.cfg.Generation.Turns,
		Landmarks: r.cfg.Landmarks, Perfunctory: r.cfg.Perfunctory, Seed: r.cfg.Seed,
		UserTemperature: r.cfg.UserModel.Temperature, TargetTemperature: target.Temperature,
	}
}

// convResultKey is the key a finished conversation is stored under: its row
// key, or for an error conversation a key no run accepts as done, so the
// output records the error and the next run retries the row.
func convResultKey(rowKey string, conv artifacts.Conversation) string {
	if conv.Status == artifacts.StatusError {
		return errorKey(rowKey)
	}
	return rowKey
}

func errorKey(rowKey string) string { return "error:" + rowKey }

// keep stores a finished conversation (an error conversation under a key
// the next run retries) and hands it to the file and the judges.
func (s *simRun) keep(unit *callstore.Unit, job simJob, rowKey string, conv artifacts.Conversation, st callstore.Stats, start time.Time) {
	if err := unit.SetResult(convResultKey(rowKey, conv), conv); err != nil {
		s.addSpent(st.Spent)
		s.fail(conv.ConvID, err.Error())
		s.bar.Done(true, false, st.Spent, time.Since(start))
		return
	}
	s.account(job, conv, st.Misses == 0, st.Spent, time.Since(start))
}

// account counts a stored conversation in the phase and hands it to the
// file and the judges.
func (s *simRun) account(job simJob, conv artifacts.Conversation, noCalls bool, spent llm.Usage, took time.Duration) {
	s.addSpent(spent)
	if conv.Status == artifacts.StatusError {
		s.fail(conv.ConvID, conv.StatusReason)
	}
	s.ran[job.i] = true
	s.asm.add(job.i, &conv)
	s.p.add(job.i, job.simRow, &job.sc, &conv)
	if s.r.cfg.Run.Verbose {
		s.r.printTurns(conv)
	}
	s.bar.Done(conv.Status == artifacts.StatusError, noCalls, spent, took)
}

// finishSimulate reports the phase and, when every row finished, completes
// conversations.json and records it; a fatal provider error, a stop by the
// ceiling or an interruption leaves the old file in place.
func (r *Runner) finishSimulate(ctx context.Context, s *simRun, rep PhaseReport, key, out string, inputs map[string]string, perr error) error {
	rows, samples := s.rows, r.cfg.Generation.NumSamples
	_, _, reusedCount := s.bar.Counts()
	rep.Rows, rep.Reused, rep.Spent, rep.Calls = len(rows), reusedCount, s.spent, s.spent.Requests
	rep.Failed = len(s.failures)
	sort.Slice(s.failures, func(a, b int) bool { return s.failures[a].Row < s.failures[b].Row })
	rep.Failures = s.failures
	if len(rep.Failures) > maxListedFailures {
		rep.Failures = rep.Failures[:maxListedFailures]
	}
	r.Report.addReused(s.saved)
	notRun := 0
	for _, ok := range s.ran {
		if !ok {
			notRun++
		}
	}
	if cause := context.Cause(ctx); cause != nil && fatalErr(cause) {
		r.Report.add(rep)
		return cause
	}
	if perr != nil && !budgetStopped(perr) {
		// Interrupted: what this invocation paid still goes in the summary.
		rep.Status, rep.Reason = "stopped", fmt.Sprintf("interrupted; %d of %d conversations finished, and the calls of the others so far are saved", len(rows)-notRun, len(rows))
		r.Report.add(rep)
		return perr
	}
	if notRun > 0 {
		rep.Status = "stopped"
		rep.Reason = fmt.Sprintf("%d of %d conversations not finished (cost ceiling or interruption); their completed turns are saved", notRun, len(rows))
		r.noteRemaining(notRun)
		r.Report.add(rep)
		return nil
	}
	if err := r.beginOutput(key, inputs); err != nil {
		return err
	}
	total, complete, err := s.asm.close()
	if err != nil {
		return err
	}
	if !complete {
		return fmt.Errorf("simulate %s: %s is missing rows although every conversation finished; run simulate again", s.targetID, out)
	}
	if err := r.writeCost(r.runDir(s.targetID), "simulate", total); err != nil {
		return err
	}
	if err := r.record(key, out, inputs, rep.Failed); err != nil {
		return err
	}
	rep.Status = "ran"
	if rep.Failed > 0 {
		rep.Status = "failed"
	}
	r.logf("simulated %d conversations (%d sample(s) × %d scenarios) for %s; %d failed", len(rows), samples, len(rows)/max(samples, 1), s.targetID, rep.Failed)
	r.Report.add(rep)
	return nil
}

// printTurns shows a finished conversation turn by turn (run.verbose), like
// upstream's per-turn lines, truncated to 120 characters.
func (r *Runner) printTurns(c artifacts.Conversation) {
	for i, t := range c.Transcript {
		text := []rune(t.Content)
		if len(text) > 120 {
			text = append(text[:120], '…')
		}
		r.logf("  [%s s%d] turn %d %s: %q", c.ID, c.Sample, i/2+1, map[string]string{"user": "user", "assistant": "target"}[t.Role], string(text))
	}
	if c.Status == artifacts.StatusUserTerminated {
		r.logf("  [%s s%d] turn %d: user terminated", c.ID, c.Sample, len(c.Transcript)/2+1)
	}
	if c.Status == artifacts.StatusError {
		r.logf("  [%s s%d] error: %s", c.ID, c.Sample, c.StatusReason)
	}
}

func (r *Runner) noteRemaining(n int) {
	r.Report.mu.Lock()
	defer r.Report.mu.Unlock()
	if r.Report.Budget == nil && r.budget != nil {
		r.Report.Budget = &BudgetReport{Max: r.budget.Max()}
	}
	if r.Report.Budget != nil {
		r.Report.Budget.Remaining += n
		r.Report.Budget.Stopped = r.budget != nil && r.budget.Exhausted()
		if r.budget != nil {
			r.Report.Budget.Spent = r.budget.Spent()
		}
	}
}

// usageOf converts an on-disk usage record back (for phase totals).
func usageOf(u artifacts.UsageRecord) llm.Usage {
	known := u.CostKnown == nil || *u.CostKnown
	req := u.Requests
	if req == 0 && (u.InputTokens > 0 || u.OutputTokens > 0) {
		req = 1
	}
	return llm.Usage{Requests: req, InputTokens: u.InputTokens, OutputTokens: u.OutputTokens,
		CachedInputTokens: u.CachedInputTokens, CacheWriteTokens: u.CacheWriteTokens,
		ReasoningTokens: u.ReasoningTokens, Cost: u.Cost, CostKnown: known}
}
