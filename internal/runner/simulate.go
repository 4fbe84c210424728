package runner

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/impactbench/impactbench/internal/artifacts"
	"github.com/impactbench/impactbench/internal/clientset"
	"github.com/impactbench/impactbench/internal/config"
	"github.com/impactbench/impactbench/internal/fault"
	"github.com/impactbench/impactbench/internal/llm"
	"github.com/impactbench/impactbench/internal/phase"
	"github.com/impactbench/impactbench/internal/schedule"
	"github.com/impactbench/impactbench/internal/summary"
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
		return fault.Inputf("%s does not exist: run `impactbench gen-scenarios %s` first", path, r.bench.Slug)
	}
	if err != nil {
		return fault.AsInput(err)
	}
	if total == 0 {
		return emptyScenariosError(path, r.bench.Slug)
	}
	if len(missing) > 0 {
		return fault.Inputf("%s: %d scenario(s) refer to metrics that are not in %s (known: %s):\n  %s",
			path, len(missing), r.bench.Path, r.metricIDs(), strings.Join(firstN(missing, 10), "\n  "))
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
		return t, fault.Inputf("target %q is not in %s (targets: %s)", id, r.cfg.Path, strings.Join(ids, ", "))
	}
	return t, nil
}

func (r *Runner) simInputs(target config.ModelConfig, scenariosSHA string) map[string]string {
	return map[string]string{
		"scenarios.json": scenariosSHA,
		"metrics":        fingerprint(r.bench.Metrics),
		"target_prompt":  fingerprint(r.bench.Scenario.UserContext, r.bench.Scenario.TargetSystemPrompt),
		"settings":       fingerprint(r.cfg.Generation.Turns, r.cfg.Generation.NumSamples, r.cfg.Landmarks, r.cfg.Perfunctory, r.cfg.Seed),
		"user_model":     fingerprint(clientset.Identity(r.cfg.UserModel)),
		"target_model":   fingerprint(clientset.Identity(target)),
		"prompts":        r.prompts.Hash(),
		"validity":       r.validityInput(),
	}
}

// validityInput is what the checks of the simulated user depend on: the
// settings and the audit's model.
func (r *Runner) validityInput() string {
	v := r.cfg.Validity
	var audit any
	if m, _, ok := r.auditModel(); ok {
		audit = clientset.Identity(m)
	}
	return fingerprint(v.Audit, v.TurnChecks, v.Reasks, v.Redos, audit)
}

// simRow names one conversation: the row order of conversations.json.
type simRow struct {
	id     string
	sample int
}

// Simulate runs every scenario × sample against one target and writes
// runs/<target>/conversations.json.
func (r *Runner) Simulate(ctx context.Context, targetID string) error {
	err := r.simulateOnly(ctx, targetID)
	r.Report.Settle()
	return err
}

func (r *Runner) simulateOnly(ctx context.Context, targetID string) error {
	t, err := r.newSimTarget(ctx, targetID)
	if err != nil {
		return err
	}
	defer t.close()
	return r.simulate(t)
}

// simulation is one conversations file being made.
type simulation struct {
	out, key string
	inputs   map[string]string
	rows     []simRow
}

// simulate writes t's conversations.json: every scenario × sample, streamed
// from scenarios.json in order, each row made (or found, when it was
// started while scenarios were generated) and written as it finishes.
func (r *Runner) simulate(t *simTarget) error {
	rows, err := r.simRows()
	if err != nil {
		if r.opts.DryRun {
			r.planSimulate(t.id, t.model, r.expectedConversations())
			return nil
		}
		return err
	}
	out := filepath.Join(r.runDir(t.id), "conversations"+r.shardSuffix()+".json")
	rep := summary.PhaseReport{Phase: phase.StageSimulate, Target: t.id, Output: out}
	scSHA, _ := fileSHA(filepath.Join(r.outDir, "scenarios.json"))
	sim := simulation{out: out, key: phase.StageSimulate.String() + "/" + t.id + r.shardSuffix(), inputs: r.simInputs(t.model, scSHA), rows: rows}
	skip, note := r.checkSkip(phase.StageSimulate, t.id, sim.key, out, sim.inputs, rep)
	if skip {
		return nil
	}
	if note != "" {
		defer r.planNote(phase.StageSimulate, t.id, note)
	}
	if r.opts.DryRun {
		r.planSimulate(t.id, t.model, len(rows))
		if note == "" {
			r.planPendingConversations(t, rows)
		}
		return nil
	}
	if err := r.guardSimulate(t, out, len(rows)); err != nil {
		return err
	}
	if t.bar == nil {
		t.bar = r.openBar(phase.StageSimulate, t.id, len(rows))
	}
	t.bar.SetTotal(len(rows))
	t.bar.Bar().SetNote(r.models.LimitNote(t.model, r.cfg.UserModel))
	if err := t.batchWaves(rep, rows); err != nil {
		return err
	}
	if err := t.attachJudge(len(rows)); err != nil {
		return err
	}
	return r.writeConversations(t, sim, rep)
}

// simRows is the first pass over scenarios.json: the rows of this shard
// (ids only) and the metric check, before anything is spent; the second
// pass (feedConversations) streams the scenarios to the rows.
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

// guardSimulate refuses to replace conversations.json (and, when its
// conversations are judged as they end, scores.json) with fewer rows.
func (r *Runner) guardSimulate(t *simTarget, out string, rows int) error {
	const why = "scenarios.json or generation.num_samples shrank"
	if err := r.guardRows(out, rows, why); err != nil {
		return err
	}
	if t.pipeline {
		return r.guardRows(r.scoresPath(t.id), rows, why)
	}
	return nil
}

// writeConversations makes every row, writing conversations.json in row
// order as they finish, and reports the phase.
func (r *Runner) writeConversations(t *simTarget, sim simulation, rep summary.PhaseReport) error {
	w, err := artifacts.NewArrayWriter(sim.out)
	if err != nil {
		return err
	}
	asm := startConvFile(w, len(sim.rows), 2*t.lane.Cap(), r.readConv(t, sim.rows))
	defer asm.abort()
	done, feedErr := r.feedConversations(t, sim.rows, asm)
	return r.finishSimulate(t, sim, rep, asm, done, feedErr)
}

// feedConversations starts the rows in order, waiting for room in the
// lane so that only the rows in flight are in memory, and waits for them.
// done reports, by row, which conversations are stored.
func (r *Runner) feedConversations(t *simTarget, rows []simRow, asm *convFile) (done []bool, feedErr error) {
	done = make([]bool, len(rows))
	var wg sync.WaitGroup
	i := 0
	feedErr = r.eachRow(rows, func(row convRow) error {
		if err := t.ctx.Err(); err != nil {
			return err
		}
		k := i
		i++
		wg.Add(1)
		unit := t.unit(row.sc.ID, row.sample)
		st := t.start(row, true, true)
		st.OnDone(func(o schedule.Outcome[artifacts.Conversation]) {
			if o.Stored {
				done[k] = true
				asm.add(k, o.Val)
			}
			// The output has the conversation now (its verdict was
			// handed it when it ended): the row lets go of it, and
			// a later round finds the row by its outcome.
			t.r.rows.convs.Retire(unit, st)
			wg.Done()
		})
		return nil
	})
	wg.Wait()
	return done, feedErr
}

// eachRow streams scenarios.json's rows of this shard (every sample) to fn,
// in order, checking that it still holds the rows simRows read.
func (r *Runner) eachRow(rows []simRow, fn func(convRow) error) error {
	i, samples := 0, r.cfg.Generation.NumSamples
	path := filepath.Join(r.outDir, "scenarios.json")
	return artifacts.EachScenario(path, func(_ int, sc artifacts.Scenario) error {
		if !r.inShard(sc.ID) {
			return nil
		}
		for smp := range samples {
			if i >= len(rows) || rows[i] != (simRow{sc.ID, smp}) {
				return fmt.Errorf("%s changed while simulate was reading it; run simulate again", path)
			}
			if err := fn(convRow{sc, smp}); err != nil {
				return err
			}
			i++
		}
		return nil
	})
}

// finishSimulate reports the phase and, when every row finished, completes
// conversations.json and records it; a fatal provider error, a stop by the
// ceiling or an interruption leaves the old file in place.
func (r *Runner) finishSimulate(t *simTarget, sim simulation, rep summary.PhaseReport, asm *convFile, done []bool, feedErr error) error {
	rep.Rows = len(sim.rows)
	notRun := 0
	for _, ok := range done {
		if !ok {
			notRun++
		}
	}
	if cause := context.Cause(t.ctx); cause != nil && fatalErr(cause) {
		r.Report.Add(rep)
		return cause
	}
	if err := t.callCtx.Err(); err != nil || feedErr != nil && !errors.Is(feedErr, context.Canceled) {
		if err == nil {
			err = feedErr
		}
		// Interrupted: what this invocation paid still goes in the summary.
		rep.Status, rep.Reason = phase.StatusStopped, fmt.Sprintf("interrupted; %d of %d conversations finished, and the calls of the others so far are saved", len(sim.rows)-notRun, len(sim.rows))
		r.Report.Add(rep)
		return err
	}
	if notRun > 0 {
		rep.Status = phase.StatusStopped
		rep.Reason = fmt.Sprintf("%d of %d conversations not finished (cost ceiling or interruption); their completed turns are saved", notRun, len(sim.rows))
		r.noteRemaining(notRun)
		r.Report.Add(rep)
		return nil
	}
	return r.commitConversations(t, sim, rep, asm)
}

// commitConversations completes conversations.json, its cost and its record.
func (r *Runner) commitConversations(t *simTarget, sim simulation, rep summary.PhaseReport, asm *convFile) error {
	if err := r.beginOutput(sim.key, sim.inputs); err != nil {
		return err
	}
	total, complete, err := asm.close()
	if err != nil {
		return err
	}
	if !complete {
		return fmt.Errorf("simulate %s: %s is missing rows although every conversation finished; run simulate again", t.id, sim.out)
	}
	models := byModel{}
	models.add("user_model: "+r.cfg.UserModel.Model, asm.user)
	target := total.Sub(asm.user)
	if t.audit != nil {
		models.add("audit: "+t.audit.model.Model, asm.audit)
		target = target.Sub(asm.audit)
	}
	models.add("target: "+t.model.Model, target)
	if err := r.writeCost(r.runDir(t.id), phase.StageSimulate.String(), total, models); err != nil {
		return err
	}
	failed := r.Report.FailedRows(phase.StageSimulate, t.id)
	if err := r.record(sim.key, sim.out, sim.inputs, failed); err != nil {
		return err
	}
	rep.Status = phase.StatusRan
	samples := r.cfg.Generation.NumSamples
	r.logf("simulated %d conversations (%d sample(s) × %d scenarios) for %s; %d failed", len(sim.rows), samples, len(sim.rows)/max(samples, 1), t.id, failed)
	r.Report.Add(rep)
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
	if c.Fidelity != nil {
		r.logf("  [%s s%d] the simulated user: %d repl(ies) rejected, %d redo(s)", c.ID, c.Sample, len(c.Fidelity.Reasks), len(c.Fidelity.Redos))
	}
	if c.Validity.IsInvalid() {
		r.logf("  [%s s%d] invalid (%s), left out of the rates: %s", c.ID, c.Sample, strings.Join(c.Validity.Failed, ", "), c.Validity.Reason)
	}
}

// noteRemaining adds n rows left undone to the summary's budget line.
func (r *Runner) noteRemaining(n int) {
	var b summary.BudgetView
	if r.models.Budget() != nil {
		b = r.models.Budget()
	}
	r.Report.NoteRemaining(n, b)
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
		CacheWriteLongTokens: u.CacheWriteLongTokens, CacheSaving: u.CacheSaving,
		ReasoningTokens: u.ReasoningTokens, Cost: u.Cost, CostKnown: known}
}

// byModel adds usages up per model label (cost.json's "models").
type byModel map[string]llm.Usage

func (m byModel) add(label string, u llm.Usage) {
	if u.Requests > 0 || u.InputTokens > 0 {
		m[label] = m[label].Add(u)
	}
}
