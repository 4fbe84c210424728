package runner

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/impactbench/impactbench/internal/artifacts"
	"github.com/impactbench/impactbench/internal/config"
	"github.com/impactbench/impactbench/internal/llm"
	"github.com/impactbench/impactbench/internal/phase"
)

// finishedRun runs the scaffold project to the end on the offline models.
func finishedRun(t *testing.T) (*config.Config, string) {
	t.Helper()
	cfg, bench := project(t)
	r := newRunner(t, cfg, bench, Options{})
	if err := r.Run(t.Context(), r.Targets()); err != nil {
		t.Fatal(err)
	}
	r.Close()
	return cfg, bench
}

// TestNullVerdictsNeverReplaceVerdicts: a judge that fails (here: every
// judgement, or one in three) must not turn stored verdicts into nulls.
// scores.json stays byte-identical and the error names the file and the
// counts; --force (a redo) is refused the same way, --accept-fewer writes
// the nulls. A refused write leaves scores.json's phase record as it was.
func TestNullVerdictsNeverReplaceVerdicts(t *testing.T) {
	cases := []struct {
		name     string
		fail     func(llm.Request) bool
		wantLost string
	}{
		{"judge always fails", func(req llm.Request) bool { return req.Purpose == llm.PurposeJudge }, "16 of its 16 verdicts would become null"},
		{"judge fails one in three", func(req llm.Request) bool {
			return req.Purpose == llm.PurposeJudge && (strings.Contains(req.Messages[len(req.Messages)-1].Content, "s001_v01") || req.Seed%3 == 0)
		}, " of its 16 verdicts would become null"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx := t.Context()
			cfg, bench := finishedRun(t)
			scores := filepath.Join(bench, "runs", "offline-careful", "scores.json")
			before, err := os.ReadFile(scores)
			if err != nil {
				t.Fatal(err)
			}
			// A new judge setting: evaluate must judge again.
			temp := 0.3
			cfg.EvaluatorModels[0].Temperature = &temp

			var calls atomic.Int64
			r := newRunner(t, cfg, bench, Options{Clients: pricedClients(0, &calls, tc.fail)})
			err = r.Evaluate(ctx, "offline-careful")
			var re *phase.RefusedError
			if !errors.As(err, &re) {
				t.Fatalf("evaluate with a failing judge: %v, want a RefusedError", err)
			}
			if re.File != scores || !strings.Contains(err.Error(), tc.wantLost) || !strings.Contains(err.Error(), "refusing to replace "+scores) {
				t.Errorf("error does not name the file and the lost verdicts (%q): %v", tc.wantLost, err)
			}
			after, _ := os.ReadFile(scores)
			if !bytes.Equal(before, after) {
				t.Fatal("scores.json changed although the write was refused")
			}
			if calls.Load() == 0 {
				t.Fatal("the judge was never called: the test proves nothing")
			}
			r.Close()

			calls.Store(0)
			rf := newRunner(t, cfg, bench, Options{Force: true, Clients: pricedClients(0, &calls, tc.fail)})
			err = rf.Evaluate(ctx, "offline-careful")
			if !errors.As(err, &re) || !strings.Contains(err.Error(), tc.wantLost) || !strings.Contains(err.Error(), phase.AcceptFewerFlag) {
				t.Fatalf("evaluate --force with a failing judge: %v, want a RefusedError naming %s", err, phase.AcceptFewerFlag)
			}
			if after, _ := os.ReadFile(scores); !bytes.Equal(before, after) {
				t.Fatal("evaluate --force replaced verdicts with nulls without --accept-fewer")
			}
			if calls.Load() == 0 {
				t.Fatal("evaluate --force judged nothing again: it did not redo")
			}
			rf.Close()

			// A refused write wrote nothing, so scores.json's record stands
			// too: with the judge setting it was made from, the next
			// evaluate finds it up to date instead of "the last run
			// stopped while writing" it and judging all again.
			cfg.EvaluatorModels[0].Temperature = nil
			calls.Store(0)
			rs := newRunner(t, cfg, bench, Options{Clients: pricedClients(0, &calls, nil)})
			if err := rs.Evaluate(ctx, "offline-careful"); err != nil {
				t.Fatal(err)
			}
			if ev := phaseOf(rs, phase.StageEvaluate); ev.Status != phase.StatusSkipped || calls.Load() != 0 {
				t.Errorf("after refused writes, evaluate with the old judge: %s (%s), %d calls; want skipped as up to date, none", ev.Status, ev.Reason, calls.Load())
			}
			rs.Close()
			cfg.EvaluatorModels[0].Temperature = &temp

			ra := newRunner(t, cfg, bench, Options{AcceptFewer: true, Clients: pricedClients(0, &calls, tc.fail)})
			if err := ra.Evaluate(ctx, "offline-careful"); err != nil {
				t.Fatalf("evaluate --accept-fewer: %v", err)
			}
			rows, err := artifacts.ReadScores(scores)
			if err != nil {
				t.Fatal(err)
			}
			nulls := 0
			for _, s := range rows {
				if s.Passed == nil {
					nulls++
				}
			}
			if nulls == 0 || len(rows) != 16 {
				t.Errorf("evaluate --accept-fewer wrote %d rows with %d nulls; want all 16 rows, the failed ones null", len(rows), nulls)
			}
		})
	}
}

// TestPreflightStopsBeforeAnyCall: a model whose client cannot be built
// (no key, bad URL) stops `run` before the first call of any role, and
// before scenarios.json exists.
func TestPreflightStopsBeforeAnyCall(t *testing.T) {
	for _, broken := range []string{"offline-careless", "offline-judge", "offline-user"} {
		t.Run(broken, func(t *testing.T) {
			cfg, bench := project(t)
			var calls atomic.Int64
			ok := pricedClients(0, &calls, nil)
			clients := func(m config.ModelConfig) (llm.Client, error) {
				if m.Model == broken {
					return nil, &llm.Error{Kind: llm.KindConfig, Provider: "anthropic", Model: m.Model, Message: "API key is empty"}
				}
				return ok(m)
			}
			r := newRunner(t, cfg, bench, Options{Clients: clients})
			err := r.Run(t.Context(), r.Targets())
			if llm.KindOf(err) != llm.KindConfig || !strings.Contains(err.Error(), "API key is empty") {
				t.Fatalf("run: %v, want the client's config error", err)
			}
			if !strings.Contains(err.Error(), cfg.Path+": ") {
				t.Errorf("error does not name config.yaml: %v", err)
			}
			if n := calls.Load(); n != 0 {
				t.Errorf("%d calls were made before the broken model was noticed", n)
			}
			if _, err := os.Stat(filepath.Join(bench, "scenarios.json")); err == nil {
				t.Error("scenarios.json was written before the broken model was noticed")
			}
		})
	}
}

// TestGuardRows covers the row-count rule on its own, file by file state.
func TestGuardRows(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, rows int) string {
		p := filepath.Join(dir, name)
		var b strings.Builder
		b.WriteString("[")
		for i := range rows {
			if i > 0 {
				b.WriteString(",")
			}
			fmt.Fprintf(&b, `{"id":"r%d"}`, i)
		}
		b.WriteString("]")
		if err := os.WriteFile(p, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	truncated := filepath.Join(dir, "truncated.json")
	if err := os.WriteFile(truncated, []byte(`[{"id":"r0"},{`), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name        string
		path        string
		newRows     int
		acceptFewer bool
		refused     bool
	}{
		{"fewer rows", write("a.json", 10), 9, false, true},
		{"no rows", write("b.json", 1), 0, false, true},
		{"fewer rows, accepted", write("c.json", 10), 0, true, false},
		{"same rows", write("d.json", 10), 10, false, false},
		{"more rows", write("e.json", 10), 11, false, false},
		{"no old file", filepath.Join(dir, "none.json"), 0, false, false},
		{"truncated old file: nothing to protect", truncated, 0, false, false},
	}
	for _, tc := range cases {
		err := phase.GuardRows(tc.acceptFewer, tc.path, tc.newRows, "why")
		var re *phase.RefusedError
		if got := errors.As(err, &re); got != tc.refused {
			t.Errorf("%s: refused=%v (%v), want %v", tc.name, got, err, tc.refused)
		}
		if tc.refused && !strings.Contains(err.Error(), fmt.Sprintf("the new one would hold %d (why)", tc.newRows)) {
			t.Errorf("%s: message lacks the counts: %v", tc.name, err)
		}
		if tc.refused && !strings.Contains(err.Error(), "pass "+phase.AcceptFewerFlag) {
			t.Errorf("%s: message does not name %s: %v", tc.name, phase.AcceptFewerFlag, err)
		}
	}
}

// TestRunRefusesBeforeAnyTargetPays: targets simulate concurrently, so the
// row-count rule is applied to all of them before the first starts. Here
// only offline-careful would shrink (it was simulated with 3 samples, the
// config now says 2); both targets' settings changed, so without the
// up-front check offline-careless would be simulated and paid for while
// offline-careful refuses.
func TestRunRefusesBeforeAnyTargetPays(t *testing.T) {
	ctx := t.Context()
	cfg, bench := finishedRun(t)
	cfg.Generation.NumSamples = 3
	r3 := newRunner(t, cfg, bench, Options{})
	if err := r3.Simulate(ctx, "offline-careful"); err != nil {
		t.Fatal(err)
	}
	r3.Close()
	cfg.Generation.NumSamples = 2

	careful := filepath.Join(bench, "runs", "offline-careful", "conversations.json")
	careless := filepath.Join(bench, "runs", "offline-careless", "conversations.json")
	beforeCareful, _ := os.ReadFile(careful)
	beforeCareless, _ := os.ReadFile(careless)
	for i := range cfg.Targets {
		care := 0.5
		cfg.Targets[i].Offline.Care = &care
	}
	var calls atomic.Int64
	r := newRunner(t, cfg, bench, Options{Clients: pricedClients(0, &calls, nil)})
	err := r.Run(ctx, r.Targets())
	var re *phase.RefusedError
	if !errors.As(err, &re) || re.File != careful || !strings.Contains(err.Error(), "it holds 24 rows, the new one would hold 16") {
		t.Fatalf("run: %v, want offline-careful's conversations.json refused with its counts", err)
	}
	if n := calls.Load(); n != 0 {
		t.Errorf("%d calls made although the run was refused", n)
	}
	if after, _ := os.ReadFile(careless); !bytes.Equal(beforeCareless, after) {
		t.Error("offline-careless was simulated and rewritten although the run was refused")
	}
	if after, _ := os.ReadFile(careful); !bytes.Equal(beforeCareful, after) {
		t.Error("offline-careful's conversations.json changed although refused")
	}
}

// TestRunForceRefusesBeforeRegenerating: `run --force` after num_samples
// was lowered would shrink every target's outputs. A redo is no licence to
// lose rows, so it is refused — before it pays to regenerate the scenarios
// or rewrites scenarios.json; with AcceptFewer it goes through.
func TestRunForceRefusesBeforeRegenerating(t *testing.T) {
	ctx := t.Context()
	cfg, bench := finishedRun(t)
	cfg.Generation.NumSamples = 1
	scenarios := filepath.Join(bench, "scenarios.json")
	before, err := os.ReadFile(scenarios)
	if err != nil {
		t.Fatal(err)
	}
	var calls atomic.Int64
	r := newRunner(t, cfg, bench, Options{Force: true, Clients: pricedClients(0, &calls, nil)})
	err = r.Run(ctx, r.Targets())
	var re *phase.RefusedError
	if !errors.As(err, &re) || !strings.Contains(err.Error(), "it holds 16 rows, the new one would hold 8") || !strings.Contains(err.Error(), phase.AcceptFewerFlag) {
		t.Fatalf("run --force with fewer samples: %v, want a refusal with the counts naming %s", err, phase.AcceptFewerFlag)
	}
	if n := calls.Load(); n != 0 {
		t.Errorf("run --force made %d calls before it was refused", n)
	}
	if after, _ := os.ReadFile(scenarios); !bytes.Equal(before, after) {
		t.Error("scenarios.json was rewritten although the run was refused")
	}
	r.Close()

	ra := newRunner(t, cfg, bench, Options{Force: true, AcceptFewer: true, Clients: pricedClients(0, &calls, nil)})
	if err := ra.Run(ctx, ra.Targets()); err != nil {
		t.Fatalf("run --force --accept-fewer: %v", err)
	}
	if calls.Load() == 0 {
		t.Error("run --force --accept-fewer paid for nothing: it did not redo")
	}
	rows, err := artifacts.ReadScores(filepath.Join(bench, "runs", "offline-careful", "scores.json"))
	if err != nil || len(rows) != 8 {
		t.Errorf("scores.json after run --force --accept-fewer: %d rows (%v), want 8", len(rows), err)
	}
}
