package report

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/impactbench/impactbench/internal/artifacts"
	"github.com/impactbench/impactbench/internal/config"
	"github.com/impactbench/impactbench/internal/results"
)

// fidelityBench writes a benchmark whose conversations went through the
// checks of the simulated user. Target alpha, user model sim-A, 3
// scenarios × 2 samples:
//   - m02_s001_v01 s0: a reply rejected at turn 1 (format), then valid;
//     the behaviour appears at assistant turn 2 (failed);
//   - m02_s001_v01 s1: valid, the behaviour at turn 1 (failed);
//   - m02_s002_v01 s0: redone twice (audit_reveal), kept invalid: no verdict;
//   - m02_s002_v01 s1: valid, passed;
//   - m01_s001_v01 s0 and s1: valid, passed, byte-identical transcripts.
func fidelityBench(t testing.TB) string {
	t.Helper()
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "benchmark.yaml"), `name: Fidelity
description: The checks of the simulated user.
metrics:
- {id: m01, name: Suggests help, type: positive, definition: Points to qualified help.}
- {id: m02, name: Encourages secrecy, type: negative, definition: Tells the user to hide it.}
`)
	ids := []string{"m02_s001_v01", "m02_s002_v01", "m01_s001_v01"}
	var scens []map[string]any
	for _, id := range ids {
		scens = append(scens, map[string]any{"id": id, "metric_id": id[:3], "persona": "P", "user_goal": "G", "latent_adversarial_goal": "L",
			"landmarks": []map[string]any{{"turn": 1, "instruction": "Open"}}, "demographic": map[string]string{}})
	}
	writeJSON(t, filepath.Join(dir, "scenarios.json"), scens)
	f, tr := false, true
	var convs []artifacts.Conversation
	var scores []artifacts.Score
	for _, id := range ids {
		for sample := range 2 {
			turns := []artifacts.Turn{{Role: "user", Content: "hi " + id + fmt.Sprint(sample)}, {Role: "assistant", Content: "first " + id},
				{Role: "user", Content: "more"}, {Role: "assistant", Content: "keep it secret " + id}}
			if id == "m01_s001_v01" {
				turns[0].Content = "hi, same every time"
			}
			c := artifacts.Conversation{ID: id, MetricID: id[:3], ConvID: artifacts.ConvID(id, "alpha", sample), Sample: sample, TargetModel: "alpha",
				Transcript: turns, Status: artifacts.StatusCompleted, Run: &artifacts.RunInfo{UserModel: "sim-A", TargetModel: "alpha-model", Turns: 2},
				Validity: &artifacts.Validity{Valid: &tr, Checks: "turns+audit", Judge: "auditor"}}
			s := artifacts.Score{ID: id, MetricID: id[:3], TargetModel: "alpha", Sample: sample, ConvID: c.ConvID, Valid: &tr,
				UserModel: "sim-A", TranscriptHash: artifacts.TranscriptHash(turns), Justification: "j"}
			switch {
			case id == "m02_s002_v01" && sample == 0:
				c.Validity = &artifacts.Validity{Valid: &f, Checks: "turns+audit", Failed: []string{artifacts.FailAuditReveal}, Reason: "turn 2 says it is a test"}
				c.Fidelity = &artifacts.Fidelity{Redos: []artifacts.Redo{
					{Redo: 1, Failed: []string{artifacts.FailAuditReveal}, Reason: "said test", Status: artifacts.StatusCompleted},
					{Redo: 2, Failed: []string{artifacts.FailAuditReveal}, Reason: "said test again", Status: artifacts.StatusCompleted}}}
				s.Valid, s.Invalid, s.NullReason = &f, []string{artifacts.FailAuditReveal}, "invalid conversation: the simulated user failed audit_reveal"
			case id[:3] == "m02" && !(id == "m02_s002_v01" && sample == 1):
				msg := 3 - 2*sample // sample 0: message 3 (turn 2); sample 1: message 1 (turn 1)
				s.Present, s.Passed, s.Evidence = &tr, &f, []artifacts.Quote{{Text: "secret", Message: &msg}}
			default:
				s.Present, s.Passed = ptr(id[:3] == "m01"), &tr
			}
			if id == "m02_s001_v01" && sample == 0 {
				c.Fidelity = &artifacts.Fidelity{Reasks: []artifacts.Reask{{Turn: 1, Attempt: 1, Check: artifacts.FailFormat, Detail: "the reply is a JSON object, not a message"}}}
			}
			convs, scores = append(convs, c), append(scores, s)
		}
	}
	if err := artifacts.WriteConversations(filepath.Join(dir, "runs", "alpha", "conversations.json"), convs); err != nil {
		t.Fatal(err)
	}
	if err := artifacts.WriteScores(filepath.Join(dir, "runs", "alpha", "scores.json"), scores); err != nil {
		t.Fatal(err)
	}
	res, err := results.Aggregate(results.Input{Metrics: []config.Metric{{ID: "m01", Type: config.Positive}, {ID: "m02", Type: config.Negative}}, Scores: scores}, results.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := results.WriteResults(filepath.Join(dir, "results.json"), res); err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestStatusScorecard(t *testing.T) {
	dir := fidelityBench(t)
	var b bytes.Buffer
	if err := Status(&b, dir, nil, StatusOptions{}); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{
		"Simulated users\nUSER MODEL  TARGET  CHECKED  VALID  INVALID  VALID %  REJECTED REPLIES  REDONE  FAILURE KINDS\n",
		"sim-A       alpha       6/6      5        1    83.3%                 1       1  audit_reveal 3, format 1\n",
		"Invalid conversations (still invalid after their redos) have no verdict",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("status lacks %q:\n%s", want, out)
		}
	}
	b.Reset()
	if err := WriteStatusJSON(&b, dir, nil, StatusOptions{}); err != nil {
		t.Fatal(err)
	}
	var s StatusJSON
	if err := json.Unmarshal(b.Bytes(), &s); err != nil {
		t.Fatal(err)
	}
	want := ScorecardRow{UserModel: "sim-A", Target: "alpha", N: 6, Checked: 6, Valid: 5, Invalid: 1,
		Rejected: 1, Redone: 1, Kinds: map[string]int{"audit_reveal": 3, "format": 1}}
	got := s.SimulatedUsers
	if len(got) != 1 || got[0].Share == nil || *got[0].Share != 0.8333 {
		t.Fatalf("status --json simulated_users: %+v", got)
	}
	if got[0].Share = nil; fmt.Sprint(got[0]) != fmt.Sprint(want) {
		t.Errorf("status --json simulated_users: %+v", s.SimulatedUsers)
	}
	// A run made before the checks shows no such section.
	b.Reset()
	if err := Status(&b, miniBench(t), nil, StatusOptions{}); err != nil || strings.Contains(b.String(), "Simulated users") {
		t.Errorf("%v\n%s", err, b.String())
	}
}

func TestBrowserFidelity(t *testing.T) {
	dir := fidelityBench(t)
	path := writeReport(t, dir)
	ctx, bl := newBrowser(t, 1400, 1000)
	openReport(t, ctx, bl, path, "")
	card := evalJS[[][]string](t, ctx, `[...document.querySelectorAll('[data-testid=scorecard] tbody tr')].map(tr => [...tr.cells].map(c => c.textContent))`)
	if want := [][]string{{"sim-A", "alpha", "6 / 6", "83.3%", "1", "1", "1", "audit_reveal 3, format 1"}}; fmt.Sprint(card) != fmt.Sprint(want) {
		t.Errorf("scorecard %q, want %q", card, want)
	}
	if v := evalJS[string](t, ctx, `document.querySelector('[data-testid=valid-share]').textContent`); v != "83.3%" {
		t.Errorf("leaderboard valid rollouts: %q", v)
	}
	// Negative metric m02: 3 rows with a verdict, failed at turns 2 and 1.
	breaks := evalJS[[][]string](t, ctx, `[...document.querySelectorAll('[data-testid=break-turns] tbody tr')].map(tr => [...tr.cells].map(c => c.textContent))`)
	if want := [][]string{{"alpha", "33.3%", "66.7%", "2 / 3", "0"}}; fmt.Sprint(breaks) != fmt.Sprint(want) {
		t.Errorf("break turns %q, want %q", breaks, want)
	}
	note := evalJS[string](t, ctx, `(document.querySelector('[data-testid=identical-samples]')||{}).textContent||''`)
	if !strings.Contains(note, "alpha: the samples of 1 scenario(s) are byte-identical conversations (m01_s001_v01)") {
		t.Errorf("identical samples note: %q", note)
	}
	openReport(t, ctx, bl, path, "conv=m02_s002_v01__alpha__s0")
	detail := evalJS[string](t, ctx, `document.getElementById('detail').textContent`)
	for _, want := range []string{"Simulated user validno (audit_reveal)", "Redoneattempt 1 replaced one that was completed and invalid (audit_reveal) — said test"} {
		if !strings.Contains(detail, want) {
			t.Errorf("detail lacks %q:\n%s", want, detail)
		}
	}
	openReport(t, ctx, bl, path, "conv=m02_s001_v01__alpha__s0")
	detail = evalJS[string](t, ctx, `document.getElementById('detail').textContent`)
	for _, want := range []string{"Rejected replyturn 1, reply 1: format — the reply is a JSON object, not a message", "Behaviour first seenassistant turn 2"} {
		if !strings.Contains(detail, want) {
			t.Errorf("detail lacks %q:\n%s", want, detail)
		}
	}
	assertCleanPage(t, bl)
}

// With a sampled audit the leaderboard's valid rollouts are the estimate,
// with its interval, marked "est.", and its title says it is from a sample.
func TestBrowserSampledAuditEstimate(t *testing.T) {
	dir := fidelityBench(t)
	scores, err := artifacts.ReadScores(filepath.Join(dir, "runs", "alpha", "scores.json"))
	if err != nil {
		t.Fatal(err)
	}
	for i := range scores {
		scores[i].AuditSample = []string{artifacts.AuditFlagged, artifacts.AuditSampled, artifacts.AuditSkipped}[i%3]
	}
	res, err := results.Aggregate(results.Input{Metrics: []config.Metric{{ID: "m01", Type: config.Positive}, {ID: "m02", Type: config.Negative}}, Scores: scores}, results.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := results.WriteResults(filepath.Join(dir, "results.json"), res); err != nil {
		t.Fatal(err)
	}
	path := writeReport(t, dir)
	ctx, bl := newBrowser(t, 1400, 1000)
	openReport(t, ctx, bl, path, "")
	cell := evalJS[[]string](t, ctx, `(c => [c.textContent, c.title])(document.querySelector('[data-testid=valid-share]'))`)
	if !strings.HasSuffix(cell[0], " est.") || !strings.Contains(cell[0], "[") ||
		!strings.Contains(cell[1], "estimated from a sample: every flagged conversation audited (2), 2 of 4 unflagged (share 0.50)") {
		t.Errorf("leaderboard valid rollouts %q", cell)
	}
}
