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
	"github.com/impactbench/impactbench/internal/config"
	"github.com/impactbench/impactbench/internal/llm"
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
	target, err := r.targetConfig(targetID)
	if err != nil {
		return nil, err
	}
	// First pass: the rows (ids only) and the metric check, before anything
	// is spent; the second pass streams the scenarios to the workers.
	samples := r.cfg.Generation.NumSamples
	var rows []simRow
	err = r.scanScenarios(func(sc artifacts.Scenario) {
		if r.inShard(sc.ID) {
			for s := range samples {
				rows = append(rows, simRow{sc.ID, s})
			}
		}
	})
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
	if err := r.guardRows(out, len(rows), "scenarios.json or generation.num_samples shrank"); err != nil {
		return nil, err
	}
	if pipe {
		if err := r.guardRows(r.scoresPath(targetID), len(rows), "scenarios.json or generation.num_samples shrank"); err != nil {
			return nil, err
		}
	}
	userC, err := r.modelClient("user_model", r.cfg.UserModel)
	if err != nil {
		return p, err
	}
	tf, _ := r.cfg.TargetField(targetID)
	targetC, err := r.modelClient(tf, target)
	if err != nil {
		return p, err
	}
	userID, targetIdent := identity(r.cfg.UserModel), identity(target)
	rowKeyBase := fingerprint(inputs["metrics"], inputs["target_prompt"], inputs["settings"], inputs["user_model"], inputs["target_model"], inputs["prompts"])

	// A fatal provider error in one row (quota, auth) stops new rows from
	// starting by cancelling ctx; calls already on the wire run under
	// callCtx, the caller's context, so answers the provider is already
	// billing for are stored instead of discarded and paid again next run.
	callCtx := ctx
	ctx, stop := context.WithCancelCause(ctx)
	defer stop(nil)
	if pipe {
		if p, err = r.startPipeline(ctx, callCtx, targetID, rows, stop); err != nil {
			return nil, err
		}
		defer p.finish() // before stop(nil): the judges share ctx
	}
	w, err := artifacts.NewArrayWriter(out)
	if err != nil {
		return p, err
	}
	workers := r.workers(r.cfg.Run.Concurrency.Simulate, len(rows))
	asm := startAssembler(w, len(rows), 2*workers, r.readConv(targetID, rows))
	defer asm.abort()
	bar := r.prog.Start("simulate "+targetID, len(rows))
	bar.SetNote(r.limitNote(target, r.cfg.UserModel))
	var mu sync.Mutex
	var spent, saved llm.Usage
	var failures []RowFailure
	ran := make([]bool, len(rows))
	feed := func(send func(simJob) bool) error {
		i := 0
		return artifacts.EachScenario(filepath.Join(r.outDir, "scenarios.json"), func(_ int, sc artifacts.Scenario) error {
			if !r.inShard(sc.ID) {
				return nil
			}
			for s := range samples {
				if i >= len(rows) || rows[i] != (simRow{sc.ID, s}) {
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
	perr := forEachStream(ctx, workers, feed, func(_ context.Context, job simJob) {
		i, row := job.i, job.simRow
		start := time.Now()
		rowKey := fingerprint(rowKeyBase, job.sc, row.sample)
		unit, err := r.store.Unit(r.simUnit(targetID, row))
		if err != nil {
			mu.Lock()
			failures = append(failures, RowFailure{Row: row.id, Reason: err.Error()})
			mu.Unlock()
			return
		}
		defer unit.Close()
		var conv artifacts.Conversation
		if unit.Result(rowKey, &conv) && conv.Status != artifacts.StatusError {
			ran[i] = true
			bar.Done(false, true, llm.Usage{}, time.Since(start))
			asm.add(i, &conv)
			p.add(i, row, &job.sc, &conv)
			return
		}
		m, _ := r.bench.MetricByID(job.sc.MetricID)
		conv, err = stages.Simulate(callCtx, unit.Client(userID, userC), unit.Client(targetIdent, targetC), r.prompts, stages.SimSpec{
			Bench: r.bench, Scenario: job.sc, Metric: m,
			TargetID: targetID, TargetModel: target.Model, UserModel: r.cfg.UserModel.Model,
			Sample: row.sample, Turns: r.cfg.Generation.Turns,
			Landmarks: r.cfg.Landmarks, Perfunctory: r.cfg.Perfunctory, Seed: r.cfg.Seed,
			UserTemperature: r.cfg.UserModel.Temperature, TargetTemperature: target.Temperature,
		})
		st := unit.Stats()
		mu.Lock()
		spent, saved = spent.Add(st.Spent), saved.Add(st.Saved)
		mu.Unlock()
		if err != nil {
			// Cancelled or stopped by the ceiling: the calls made so far are
			// stored; the row is simply not finished. A fatal provider error
			// stops the whole phase.
			if fatalErr(err) {
				stop(err)
			}
			bar.Done(false, false, st.Spent, time.Since(start))
			return
		}
		resKey := rowKey
		if conv.Status == artifacts.StatusError {
			resKey = "error:" + rowKey // recorded for the output, retried next run
			mu.Lock()
			failures = append(failures, RowFailure{Row: conv.ConvID, Reason: conv.StatusReason})
			mu.Unlock()
		}
		if err := unit.SetResult(resKey, conv); err != nil {
			mu.Lock()
			failures = append(failures, RowFailure{Row: conv.ConvID, Reason: err.Error()})
			mu.Unlock()
			bar.Done(true, false, st.Spent, time.Since(start))
			return
		}
		ran[i] = true
		asm.add(i, &conv)
		p.add(i, row, &job.sc, &conv)
		if r.cfg.Run.Verbose {
			r.printTurns(conv)
		}
		bar.Done(conv.Status == artifacts.StatusError, st.Misses == 0, st.Spent, time.Since(start))
	})
	bar.End()
	// The judges finish their queue while conversations.json is written
	// (the deferred finish waits for them before returning).
	_, _, reusedCount := bar.Counts()
	rep.Rows, rep.Reused, rep.Spent, rep.Calls = len(rows), reusedCount, spent, spent.Requests
	rep.Failed = len(failures)
	sort.Slice(failures, func(a, b int) bool { return failures[a].Row < failures[b].Row })
	rep.Failures = failures
	if len(rep.Failures) > maxListedFailures {
		rep.Failures = rep.Failures[:maxListedFailures]
	}
	r.Report.addReused(saved)
	notRun := 0
	for _, ok := range ran {
		if !ok {
			notRun++
		}
	}
	if cause := context.Cause(ctx); cause != nil && fatalErr(cause) {
		r.Report.add(rep)
		return p, cause
	}
	if perr != nil && !budgetStopped(perr) {
		return p, perr
	}
	if notRun > 0 {
		rep.Status = "stopped"
		rep.Reason = fmt.Sprintf("%d of %d conversations not finished (cost ceiling or interruption); their completed turns are saved", notRun, len(rows))
		r.noteRemaining(notRun)
		r.Report.add(rep)
		return p, nil
	}
	if err := r.beginOutput(key, inputs); err != nil {
		return p, err
	}
	total, complete, err := asm.close()
	if err != nil {
		return p, err
	}
	if !complete {
		return p, fmt.Errorf("simulate %s: %s is missing rows although every conversation finished; run simulate again", targetID, out)
	}
	if err := r.writeCost(r.runDir(targetID), "simulate", total); err != nil {
		return p, err
	}
	if err := r.record(key, out, inputs, rep.Failed); err != nil {
		return p, err
	}
	rep.Status = "ran"
	if rep.Failed > 0 {
		rep.Status = "failed"
	}
	r.logf("simulated %d conversations (%d sample(s) × %d scenarios) for %s; %d failed", len(rows), samples, len(rows)/max(samples, 1), targetID, rep.Failed)
	r.Report.add(rep)
	return p, nil
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
