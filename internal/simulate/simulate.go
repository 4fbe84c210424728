package simulate

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/impactbench/impactbench/internal/artifacts"
	"github.com/impactbench/impactbench/internal/clientset"
	"github.com/impactbench/impactbench/internal/config"
	"github.com/impactbench/impactbench/internal/layout"
	"github.com/impactbench/impactbench/internal/phase"
	"github.com/impactbench/impactbench/internal/schedule"
	"github.com/impactbench/impactbench/internal/summary"
	"github.com/impactbench/impactbench/internal/work"
)

func Inputs(b *work.Bench, target config.ModelConfig, scenariosSHA string) map[string]string {
	return map[string]string{
		layout.ScenariosFile: scenariosSHA, // the input's name in the phase record
		"metrics":            phase.Fingerprint(b.Spec.Metrics),
		"target_prompt":      phase.Fingerprint(b.Spec.Scenario.UserContext, b.Spec.Scenario.TargetSystemPrompt),
		"settings":           settingsInput(b),
		"user_model":         phase.Fingerprint(clientset.Identity(b.Cfg.UserModel)),
		"target_model":       phase.Fingerprint(clientset.Identity(target)),
		"prompts":            b.Prompts.Hash(),
		"validity":           validityInput(b),
	}
}

// settingsInput is what the conversations' shape depends on. A shared
// opening is seeded otherwise, so it changes the input; independent
// openings keep the fingerprint of before the option, so a project that
// asks for them finds its conversations up to date.
func settingsInput(b *work.Bench) string {
	c := b.Cfg
	g := c.Generation
	if !sharedOpenings(b) {
		return phase.Fingerprint(g.Turns, g.NumSamples, c.Landmarks, c.Perfunctory, c.Seed)
	}
	return phase.Fingerprint(g.Turns, g.NumSamples, c.Landmarks, c.Perfunctory, c.Seed, "one opening for every target")
}

// validityInput is what the checks of the simulated user depend on: the
// settings and the audit's model.
func validityInput(b *work.Bench) string {
	v := b.Cfg.Validity
	var audit any
	m, _, ok := b.AuditModel()
	if ok {
		audit = clientset.Identity(m)
	}
	// A share below 1 changes which conversations are audited; auditing
	// every one keeps the fingerprint of the builds before the share.
	share, head := v.EffectiveAuditShare(m), v.EffectiveAuditReplyChars(m)
	switch {
	case ok && head > 0:
		// A compact transcript may change the audit's verdicts.
		return phase.Fingerprint(v.Audit, v.TurnChecks, v.Reasks, v.Redos, audit, share, head)
	case ok && share < 1:
		return phase.Fingerprint(v.Audit, v.TurnChecks, v.Reasks, v.Redos, audit, share)
	}
	return phase.Fingerprint(v.Audit, v.TurnChecks, v.Reasks, v.Redos, audit)
}

// PhaseKey is the phase record's key of target's conversations file
// (this shard's).
func PhaseKey(b *work.Bench, target string) string {
	return layout.RecordKey(phase.StageSimulate.String(), target, b.Opts.Shard)
}

// simRow names one conversation: the row order of conversations.json.
type simRow struct {
	id     string
	sample int
}

// Simulate runs every scenario × sample against one target and writes
// runs/<target>/conversations.json.
func Simulate(ctx context.Context, b *work.Bench, targetID string) error {
	err := simulateOnly(ctx, b, targetID)
	b.Report.Settle()
	return err
}

func simulateOnly(ctx context.Context, b *work.Bench, targetID string) error {
	t, err := NewTarget(b, targetID)
	if err != nil {
		return err
	}
	defer t.Close()
	return Phase(ctx, b, t)
}

// simulation is one conversations file being made.
type simulation struct {
	out, key string
	inputs   map[string]string
	rows     []simRow
}

// Phase writes t's conversations.json: every scenario × sample, streamed
// from scenarios.json in order, each row made (or found, when it was
// started while scenarios were generated) and written as it finishes.
func Phase(ctx context.Context, b *work.Bench, t *Target) error {
	rows, err := simRows(b)
	if err != nil {
		if b.Opts.DryRun {
			b.PlanSimulate(t.id, t.model, b.ExpectedConversations())
			return nil
		}
		return err
	}
	out := b.Conversations(t.id)
	rep := summary.PhaseReport{Phase: phase.StageSimulate, Target: t.id, Output: out}
	scSHA, _ := phase.FileSHA(b.Files.Scenarios())
	sim := simulation{out: out, key: PhaseKey(b, t.id), inputs: Inputs(b, t.model, scSHA), rows: rows}
	skip, note, err := b.CheckSkip(rep, sim.key, sim.inputs)
	if err != nil {
		return err
	}
	if skip {
		return nil
	}
	if note != "" {
		defer b.PlanNote(phase.StageSimulate, t.id, note)
	}
	if b.Opts.DryRun {
		b.PlanSimulate(t.id, t.model, len(rows))
		if note == "" {
			planPendingConversations(b, t, rows)
		}
		return nil
	}
	if err := guardSimulate(b, t, out, len(rows)); err != nil {
		return err
	}
	if t.Bar == nil {
		t.Bar = b.OpenBar(phase.StageSimulate, t.id, len(rows))
	}
	t.Bar.SetTotal(len(rows))
	t.Bar.Bar().SetNote(b.Models.LimitNote(t.model, b.Cfg.UserModel))
	if err := t.batchWaves(ctx, rep, rows); err != nil {
		return err
	}
	if err := t.AttachJudge(len(rows)); err != nil {
		return err
	}
	return writeConversations(ctx, b, t, sim, rep)
}

// simRows is the first pass over scenarios.json: the rows of this shard
// (ids only) and the metric check, before anything is spent; the second
// pass (feedConversations) streams the scenarios to the rows.
func simRows(b *work.Bench) ([]simRow, error) {
	samples := b.Cfg.Generation.NumSamples
	var rows []simRow
	err := b.ScanScenarios(func(sc artifacts.Scenario) {
		if b.InShard(sc.ID) {
			for s := range samples {
				rows = append(rows, simRow{sc.ID, s})
			}
		}
	})
	return rows, err
}

// guardSimulate refuses to replace conversations.json (and, when its
// conversations are judged as they end, scores.json) with fewer rows, and
// conversations.json's audited conversations with unaudited ones.
func guardSimulate(b *work.Bench, t *Target, out string, rows int) error {
	const why = "scenarios.json or generation.num_samples shrank"
	if err := b.GuardRows(out, rows, why); err != nil {
		return err
	}
	if err := GuardAudits(b, t); err != nil {
		return err
	}
	if t.Pipeline {
		return b.GuardRows(b.Scores(t.id), rows, why)
	}
	return nil
}

// GuardAudits refuses to replace t's audited conversations with
// unaudited ones: nil unless t's audit is off and its conversations.json
// holds conversations the audit read (phase.GuardAudits).
func GuardAudits(b *work.Bench, t *Target) error {
	if t.audit != nil {
		return nil
	}
	return phase.GuardAudits(b.Opts.AcceptFewer, b.Conversations(t.id))
}

// writeConversations makes every row, writing conversations.json in row
// order as they finish, and reports the phase.
func writeConversations(ctx context.Context, b *work.Bench, t *Target, sim simulation, rep summary.PhaseReport) error {
	w, err := artifacts.NewArrayWriter(sim.out)
	if err != nil {
		return err
	}
	asm := startConvFile(w, len(sim.rows), 2*t.lane.Cap(), readConv(b, t, sim.rows))
	defer asm.abort()
	done, feedErr := feedConversations(ctx, b, t, sim.rows, asm)
	return finishSimulate(ctx, b, t, sim, rep, asm, done, feedErr)
}

// feedConversations starts the rows in order, waiting for room in the
// lane so that only the rows in flight are in memory, and waits for them.
// done reports, by row, which conversations are stored.
func feedConversations(ctx context.Context, b *work.Bench, t *Target, rows []simRow, asm *convFile) (done []bool, feedErr error) {
	done = make([]bool, len(rows))
	var wg sync.WaitGroup
	i := 0
	feedErr = eachRow(b, rows, func(row convRow) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		if t.halt.Err() != nil {
			return context.Canceled // the target stopped; finishSimulate says why
		}
		k := i
		i++
		wg.Add(1)
		unit := t.unit(row.sc.ID, row.sample)
		st := t.start(ctx, row, true, true)
		st.OnDone(func(o schedule.Outcome[artifacts.Conversation]) {
			if o.Stored {
				done[k] = true
				asm.add(k, o.Val)
			}
			// The output has the conversation now (its verdict was
			// handed it when it ended): the row lets go of it, and
			// a later round finds the row by its outcome.
			t.b.Convs.Retire(unit, st)
			wg.Done()
		})
		return nil
	})
	wg.Wait()
	return done, feedErr
}

// eachRow streams scenarios.json's rows of this shard (every sample) to fn,
// in order, checking that it still holds the rows simRows read.
func eachRow(b *work.Bench, rows []simRow, fn func(convRow) error) error {
	i, samples := 0, b.Cfg.Generation.NumSamples
	path := b.Files.Scenarios()
	return artifacts.EachScenario(path, func(_ int, sc artifacts.Scenario) error {
		if !b.InShard(sc.ID) {
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
func finishSimulate(ctx context.Context, b *work.Bench, t *Target, sim simulation, rep summary.PhaseReport, asm *convFile, done []bool, feedErr error) error {
	rep.Rows = len(sim.rows)
	notRun := 0
	for _, ok := range done {
		if !ok {
			notRun++
		}
	}
	if cause := t.halt.Err(); cause != nil && work.Fatal(cause) {
		b.Report.Add(rep)
		return cause
	}
	if err := ctx.Err(); err != nil || feedErr != nil && !errors.Is(feedErr, context.Canceled) {
		if err == nil {
			err = feedErr
		}
		// Interrupted: what this invocation paid still goes in the summary.
		rep.Status, rep.Reason = phase.StatusStopped, fmt.Sprintf("interrupted; %d of %d conversations finished, and the calls of the others so far are saved", len(sim.rows)-notRun, len(sim.rows))
		b.Report.Add(rep)
		return err
	}
	if notRun > 0 {
		rep.Status = phase.StatusStopped
		rep.Reason = fmt.Sprintf("%d of %d conversations not finished (cost ceiling or interruption); their completed turns are saved", notRun, len(sim.rows))
		b.NoteRemaining(notRun)
		b.Report.Add(rep)
		return nil
	}
	return commitConversations(b, t, sim, rep, asm)
}

// commitConversations completes conversations.json, its cost and its record.
func commitConversations(b *work.Bench, t *Target, sim simulation, rep summary.PhaseReport, asm *convFile) error {
	if err := b.BeginOutput(sim.key, sim.inputs); err != nil {
		return err
	}
	total, complete, err := asm.close()
	if err != nil {
		return err
	}
	if !complete {
		return fmt.Errorf("simulate %s: %s is missing rows although every conversation finished; run simulate again", t.id, sim.out)
	}
	models := work.ByModel{}
	models.Add("user_model: "+b.Cfg.UserModel.Model, asm.user)
	target := total.Sub(asm.user)
	if t.audit != nil {
		models.Add("audit: "+t.audit.model.Model, asm.audit)
		target = target.Sub(asm.audit)
	}
	models.Add("target: "+t.model.Model, target)
	if err := b.WriteCost(b.Files.RunDir(t.id), phase.StageSimulate.String(), total, models); err != nil {
		return err
	}
	failed := b.Report.FailedRows(phase.StageSimulate, t.id)
	if err := b.Record(sim.key, sim.out, sim.inputs, failed); err != nil {
		return err
	}
	rep.Status = phase.StatusRan
	samples := b.Cfg.Generation.NumSamples
	b.Logf("simulated %d conversations (%d sample(s) × %d scenarios) for %s; %d failed%s", len(sim.rows), samples, len(sim.rows)/max(samples, 1), t.id, failed,
		work.FromStoreNote(b.Report.ReusedRows(phase.StageSimulate, t.id)))
	b.Report.Add(rep)
	return nil
}

// printTurns shows a finished conversation turn by turn (run.verbose), like
// upstream's per-turn lines, truncated to 120 characters.
func printTurns(b *work.Bench, c artifacts.Conversation) {
	for i, t := range c.Transcript {
		text := []rune(t.Content)
		if len(text) > 120 {
			text = append(text[:120], '…')
		}
		b.Logf("  [%s s%d] turn %d %s: %q", c.ID, c.Sample, i/2+1, map[string]string{"user": "user", "assistant": "target"}[t.Role], string(text))
	}
	if c.Status == artifacts.StatusUserTerminated {
		b.Logf("  [%s s%d] turn %d: user terminated", c.ID, c.Sample, len(c.Transcript)/2+1)
	}
	if c.Status == artifacts.StatusError {
		b.Logf("  [%s s%d] error: %s", c.ID, c.Sample, c.StatusReason)
	}
	if c.Fidelity != nil {
		b.Logf("  [%s s%d] the simulated user: %d repl(ies) rejected, %d redo(s)", c.ID, c.Sample, len(c.Fidelity.Reasks), len(c.Fidelity.Redos))
	}
	if c.Validity.IsInvalid() {
		b.Logf("  [%s s%d] invalid (%s), left out of the rates: %s", c.ID, c.Sample, strings.Join(c.Validity.Failed, ", "), c.Validity.Reason)
	}
}
