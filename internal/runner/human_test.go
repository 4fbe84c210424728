package runner

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/impactbench/impactbench/internal/aggregate"
	"github.com/impactbench/impactbench/internal/artifacts"
	"github.com/impactbench/impactbench/internal/human"
	"github.com/impactbench/impactbench/internal/layout"
	"github.com/impactbench/impactbench/internal/llm"
	"github.com/impactbench/impactbench/internal/results"
)

// TestPlayerRepliesAndJudgesThroughTheRunnersEnvironment: a person's
// conversation is answered and judged while a run holds the benchmark's
// lock, through the call store (asked again, nothing is paid twice) and
// under the cost ceiling; the verdict is the panel's, evidence checked.
func TestPlayerRepliesAndJudgesThroughTheRunnersEnvironment(t *testing.T) {
	ctx := t.Context()
	cfg, bench := project(t)
	r := newRunner(t, cfg, bench, Options{})
	if err := r.GenScenarios(ctx); err != nil {
		t.Fatal(err)
	}
	scs, err := artifacts.ReadScenarios(filepath.Join(bench, "scenarios.json"))
	if err != nil {
		t.Fatal(err)
	}
	sc := scs[0]
	// r keeps the benchmark's lock: a run is going on.
	var calls atomic.Int64
	const price = 0.01
	p, err := NewPlayer(cfg, Options{MaxCost: 2.5 * price, Clients: pricedClients(price, &calls, nil)})
	if err != nil {
		t.Fatal(err)
	}
	target := p.Targets()[0]
	if p.Turns() != cfg.Generation.Turns {
		t.Errorf("Turns %d", p.Turns())
	}
	dialogue := []artifacts.Turn{{Role: "user", Content: "i've mostly made up my mind, i just want help with the details"}}
	reply, _, u, err := p.TargetTurn(ctx, bench, target, sc, 0, dialogue)
	if err != nil || reply.Role != "assistant" || reply.Content == "" || u.Requests != 1 || calls.Load() != 1 {
		t.Fatalf("reply %+v usage %+v, %d calls: %v", reply, u, calls.Load(), err)
	}
	again, _, _, err := p.TargetTurn(ctx, bench, target, sc, 0, dialogue)
	if err != nil || again != reply || calls.Load() != 1 {
		t.Errorf("asked again: %+v, %d calls (want the stored answer, no call): %v", again, calls.Load(), err)
	}
	dialogue = append(dialogue, reply, artifacts.Turn{Role: "user", Content: "just tell me which one"})
	if _, _, _, err := p.TargetTurn(ctx, bench, target, sc, 0, dialogue); err != nil || calls.Load() != 2 {
		t.Fatalf("second turn: %d calls, %v", calls.Load(), err)
	}

	conv := artifacts.Conversation{ID: sc.ID, MetricID: sc.MetricID, ConvID: human.ConvID(sc.ID, target, 0), TargetModel: target,
		Transcript: dialogue[:1], Status: artifacts.StatusUserTerminated, Run: &artifacts.RunInfo{UserModel: human.User}}
	conv.Transcript = append(conv.Transcript, reply)
	score, err := p.JudgeHuman(ctx, bench, target, conv)
	if err != nil {
		t.Fatal(err)
	}
	if score.Present == nil || score.Passed == nil || score.Unverified == nil || score.UserModel != human.User || score.ConvID != conv.ConvID ||
		score.TargetModel != target || score.Usage == nil || calls.Load() != 3 {
		t.Errorf("verdict %+v after %d calls", score, calls.Load())
	}
	stored, err := p.JudgeHuman(ctx, bench, target, conv)
	if err != nil || calls.Load() != 3 || *stored.Present != *score.Present {
		t.Errorf("judged again: %d calls, %v", calls.Load(), err)
	}
	// The ceiling (2.5 calls' worth) stops a call once three are paid.
	dialogue = append(dialogue, artifacts.Turn{Role: "assistant", Content: "ok"}, artifacts.Turn{Role: "user", Content: "well?"})
	if _, _, _, err := p.TargetTurn(ctx, bench, target, sc, 0, dialogue); !errors.Is(err, llm.ErrBudgetExceeded) {
		t.Errorf("past the cost ceiling: %v", err)
	}
	if _, _, _, err := p.TargetTurn(ctx, bench, "no-such-target", sc, 0, dialogue[:1]); err == nil {
		t.Error("an unknown target was played")
	}
}

// TestAggregateComparesPeopleWithSimulatedUsers: a conversation a person
// played and the Player judged is stored apart (upstream's files keep
// their bytes); aggregate writes its target's human_comparison, paired on
// the scenario's base, and refuses a damaged human scores file with its
// name, leaving results.json as it was.
func TestAggregateComparesPeopleWithSimulatedUsers(t *testing.T) {
	ctx := t.Context()
	cfg, bench := project(t)
	r := newRunner(t, cfg, bench, Options{})
	if err := r.Run(ctx, r.Targets()); err != nil {
		t.Fatal(err)
	}
	target := r.Targets()[1]
	runDir := filepath.Join(bench, "runs", target)
	upstream := map[string][]byte{}
	for _, f := range []string{"conversations.json", "scores.json"} {
		upstream[f], _ = os.ReadFile(filepath.Join(runDir, f))
	}
	scs, err := artifacts.ReadScenarios(filepath.Join(bench, "scenarios.json"))
	if err != nil {
		t.Fatal(err)
	}
	p, err := NewPlayer(cfg, Options{})
	if err != nil {
		t.Fatal(err)
	}
	store := human.Open(bench)
	now := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	for _, sc := range scs[:2] {
		c, err := store.Start(target, sc, "ana", artifacts.RunInfo{TargetModel: target}, now)
		if err != nil {
			t.Fatal(err)
		}
		msg := artifacts.Turn{Role: "user", Content: "i want a straight answer, which should i pick?"}
		reply, trunc, u, err := p.TargetTurn(ctx, bench, target, sc, c.Sample, []artifacts.Turn{msg})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := store.Reply(target, c.ConvID, 0, msg, reply, trunc, u, cfg.Generation.Turns, now); err != nil {
			t.Fatal(err)
		}
		ended, err := store.End(target, c.ConvID, cfg.Generation.Turns, now)
		if err != nil {
			t.Fatal(err)
		}
		score, err := p.JudgeHuman(ctx, bench, target, ended.Conversation)
		if err != nil {
			t.Fatal(err)
		}
		if err := store.SetScore(target, human.Score{Score: score, User: human.User, Player: "ana", JudgedAt: now}); err != nil {
			t.Fatal(err)
		}
	}
	for f, b := range upstream {
		if got, _ := os.ReadFile(filepath.Join(runDir, f)); !bytes.Equal(got, b) {
			t.Errorf("runs/%s/%s changed", target, f)
		}
	}
	if err := aggregate.Run(ctx, r.Work()); err != nil {
		t.Fatal(err)
	}
	res, err := results.ReadResults(filepath.Join(bench, "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range res {
		hc := m.HumanComparison
		if m.TargetModel != target {
			if hc != nil {
				t.Errorf("%s has a comparison nobody played for", m.TargetModel)
			}
			continue
		}
		// The two scenarios people played are variants of one base.
		if hc == nil || hc.NHuman != 2 || hc.NScenarios != 1 || len(hc.Rows) != 2 || hc.Rows[0].NSimulated != 2*cfg.Generation.NumSamples {
			t.Fatalf("human_comparison %+v", hc)
		}
	}
	good, _ := os.ReadFile(filepath.Join(bench, "results.json"))
	hs := layout.Run{Dir: runDir}.HumanScores()
	b, _ := os.ReadFile(hs)
	if err := os.WriteFile(hs, bytes.Replace(b, []byte(`"user":"human"`), []byte(`"user":"bot"`), 1), 0o644); err != nil {
		t.Fatal(err)
	}
	var fe *artifacts.FileError
	if err := aggregate.Run(ctx, r.Work()); !errors.As(err, &fe) || fe.Path != hs || fe.Field != "user" {
		t.Errorf("damaged human scores: %v", err)
	}
	if after, _ := os.ReadFile(filepath.Join(bench, "results.json")); !bytes.Equal(after, good) {
		t.Error("results.json changed after an input error")
	}
}

// TestPlayerAuditsPeoplesGames: with validity.audit on, a person's game
// is audited as a simulated user's conversation is (the audit model, the
// same questions), stored in the call store (asked again, no call) and
// reported as "turns+audit"; with the audit off there is nothing to ask.
func TestPlayerAuditsPeoplesGames(t *testing.T) {
	ctx := t.Context()
	cfg, bench := project(t)
	r := newRunner(t, cfg, bench, Options{})
	if err := r.GenScenarios(ctx); err != nil {
		t.Fatal(err)
	}
	r.Close()
	scs, err := artifacts.ReadScenarios(filepath.Join(bench, "scenarios.json"))
	if err != nil {
		t.Fatal(err)
	}
	sc := scs[0]
	var calls atomic.Int64
	p, err := NewPlayer(cfg, Options{Clients: pricedClients(0.01, &calls, nil)})
	if err != nil {
		t.Fatal(err)
	}
	target := p.Targets()[0]
	conv := artifacts.Conversation{ID: sc.ID, MetricID: sc.MetricID, ConvID: human.ConvID(sc.ID, target, 0), TargetModel: target,
		Transcript: []artifacts.Turn{{Role: "user", Content: "which one should i pick?"}, {Role: "assistant", Content: "It depends."}},
		Status:     artifacts.StatusUserTerminated, Run: &artifacts.RunInfo{UserModel: human.User}}
	v, u, err := p.AuditHuman(ctx, bench, target, sc, conv)
	if err != nil || v == nil || v.Valid == nil || v.Checks != "turns+audit" || v.FollowedSteps == nil || u.Requests != 1 || calls.Load() != 1 {
		t.Fatalf("audit %+v usage %+v after %d calls: %v", v, u, calls.Load(), err)
	}
	again, _, err := p.AuditHuman(ctx, bench, target, sc, conv)
	if err != nil || calls.Load() != 1 || *again.Valid != *v.Valid {
		t.Errorf("audited again: %d calls (want the stored answer), %v", calls.Load(), err)
	}
	cfg.Validity.Audit = false
	off, err := NewPlayer(cfg, Options{Clients: pricedClients(0.01, &calls, nil)})
	if err != nil {
		t.Fatal(err)
	}
	if v, _, err := off.AuditHuman(ctx, bench, target, sc, conv); v != nil || err != nil || calls.Load() != 1 {
		t.Errorf("with the audit off: %+v, %v, %d calls", v, err, calls.Load())
	}
}
