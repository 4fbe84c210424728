package callstore

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/impactbench/impactbench/internal/llm"
)

// scripted answers every call with text() and counts the calls.
type scripted struct {
	n    atomic.Int64
	text func() string
}

func (s *scripted) Complete(_ context.Context, _ llm.Request) (llm.Response, error) {
	s.n.Add(1)
	return llm.Response{Text: s.text(), Usage: llm.Usage{Requests: 1, InputTokens: 10, OutputTokens: 5, Cost: 0.01, CostKnown: true}}, nil
}

type verdict struct {
	Justification string `json:"justification"`
	Present       bool   `json:"present"`
}

// An invalid answer is stored as evidence, but it must not be final: a
// rerun sends fresh attempts (bounded per invocation) instead of replaying
// the known-bad answers, and a valid answer, once paid, is never paid again.
func TestInvalidAnswersAreRetriedFreshOnRerun(t *testing.T) {
	dir := t.TempDir()
	const unit = "t/eval/m01_s001_v01__s0"
	jreq := llm.Request{Purpose: llm.PurposeJudge, Messages: []llm.Message{{Role: llm.RoleUser, Content: "judge this"}}, Seed: 7}
	call := func(c llm.Client) error {
		u, err := Open(dir, false).Unit(unit)
		if err != nil {
			t.Fatal(err)
		}
		defer u.Close()
		var v verdict
		_, err = llm.CompleteJSON(context.Background(), u.Client(id, c), jreq, &v, llm.JSONOptions{Attempts: 3})
		return err
	}
	truncated := &scripted{text: func() string { return `{"justification": "the assistant dec` }}
	if err := call(truncated); llm.KindOf(err) != llm.KindInvalidJSON || truncated.n.Load() != 3 {
		t.Fatalf("first run: err %v after %d calls, want invalid_json after 3", err, truncated.n.Load())
	}
	// Still broken: the rerun pays exactly its own bound again, no more.
	if err := call(truncated); err == nil || truncated.n.Load() != 6 {
		t.Fatalf("rerun against the broken provider: err %v, %d calls in all, want 3 fresh ones (6)", err, truncated.n.Load())
	}
	healthy := &scripted{text: func() string { return `{"justification": "fine", "present": true}` }}
	if err := call(healthy); err != nil || healthy.n.Load() != 1 {
		t.Fatalf("rerun against a healthy provider: err %v after %d calls, want success after 1 fresh call", err, healthy.n.Load())
	}
	if err := call(healthy); err != nil || healthy.n.Load() != 1 {
		t.Fatalf("third run: err %v, %d calls in all: the valid answer was paid twice", err, healthy.n.Load())
	}
	// The invalid answers stay in the unit file as evidence.
	b := readUnitFile(t, dir, unit)
	if n := strings.Count(b, "the assistant dec"); n != 6 {
		t.Errorf("unit file keeps %d of the 6 invalid answers", n)
	}
}

func readUnitFile(t *testing.T, dir, unit string) string {
	t.Helper()
	u, err := Open(dir, false).Unit(unit)
	if err != nil {
		t.Fatal(err)
	}
	var all []string
	for _, e := range u.stored {
		all = append(all, e.Response.Text)
	}
	return strings.Join(all, "\n")
}
