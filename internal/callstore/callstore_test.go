package callstore

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/impactbench/impactbench/internal/llm"
)

type counting struct{ n atomic.Int64 }

func (c *counting) Complete(_ context.Context, req llm.Request) (llm.Response, error) {
	n := c.n.Add(1)
	return llm.Response{Text: fmt.Sprintf("answer %d to %s", n, req.Messages[len(req.Messages)-1].Content),
		Usage: llm.Usage{Requests: 1, InputTokens: 10, OutputTokens: 5, Cost: 0.01, CostKnown: true}}, nil
}

var id = Identity{Provider: "openai", Model: "gpt-x"}

func req(content string, seed uint64) llm.Request {
	return llm.Request{Purpose: llm.PurposeTarget, Messages: []llm.Message{{Role: llm.RoleUser, Content: content}}, Seed: seed}
}

func TestReplayAfterReopenMakesNoCalls(t *testing.T) {
	dir := t.TempDir()
	inner := &counting{}
	u, err := Open(dir, false).Unit("t/sim/m01_s001_v01__s0")
	if err != nil {
		t.Fatal(err)
	}
	c := u.Client(id, inner)
	a1, _ := c.Complete(t.Context(), req("hi", 1))
	a2, _ := c.Complete(t.Context(), req("more", 1))
	if inner.n.Load() != 2 {
		t.Fatalf("calls = %d, want 2", inner.n.Load())
	}
	// No SetResult: simulates a kill mid-unit. Reopen and replay.
	u2, _ := Open(dir, false).Unit("t/sim/m01_s001_v01__s0")
	c2 := u2.Client(id, inner)
	b1, _ := c2.Complete(t.Context(), req("hi", 1))
	b2, _ := c2.Complete(t.Context(), req("more", 1))
	if inner.n.Load() != 2 {
		t.Fatalf("replay made %d new calls, want 0", inner.n.Load()-2)
	}
	if b1.Text != a1.Text || b2.Text != a2.Text || !b1.Cached {
		t.Fatalf("replayed answers differ or not marked cached: %q %q", b1.Text, b2.Text)
	}
	st := u2.Stats()
	if st.Hits != 2 || st.Misses != 0 || st.Saved.Cost != 0.02 {
		t.Fatalf("stats = %+v", st)
	}
}

func TestKeySeparatesSamplesModelsAndParams(t *testing.T) {
	base := Key(id, req("hi", 0))
	t1 := 0.5
	cases := map[string]string{
		"sample seed":  Key(id, req("hi", 1)),
		"model":        Key(Identity{Provider: "openai", Model: "gpt-y"}, req("hi", 0)),
		"base url":     Key(Identity{Provider: "openai", Model: "gpt-x", BaseURL: "http://x"}, req("hi", 0)),
		"message":      Key(id, req("hi!", 0)),
		"temperature":  Key(id, func() llm.Request { r := req("hi", 0); r.Temperature = &t1; return r }()),
		"json mode":    Key(id, func() llm.Request { r := req("hi", 0); r.JSON = true; return r }()),
		"max tokens":   Key(id, func() llm.Request { r := req("hi", 0); r.MaxTokens = 10; return r }()),
		"profile knob": Key(Identity{Provider: "offline", Model: "gpt-x", Profile: "care=0.8"}, req("hi", 0)),
	}
	for name, k := range cases {
		if k == base {
			t.Errorf("%s does not change the key", name)
		}
	}
	// Purpose and Meta are labels, not inputs to the model.
	r := req("hi", 0)
	r.Purpose = llm.PurposeJudge
	r.Meta = map[string]string{"x": "y"}
	if Key(id, r) != base {
		t.Error("purpose/meta changed the key")
	}
}

func TestForceIgnoresStoredAnswers(t *testing.T) {
	dir := t.TempDir()
	inner := &counting{}
	u, _ := Open(dir, false).Unit("u")
	u.Client(id, inner).Complete(t.Context(), req("hi", 0))
	u2, _ := Open(dir, true).Unit("u")
	u2.Client(id, inner).Complete(t.Context(), req("hi", 0))
	if inner.n.Load() != 2 {
		t.Fatalf("force reused a stored answer")
	}
}

func TestCorruptFileIsRecomputed(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "u.json"), []byte("{not json"), 0o644); err != nil {
		t.Fatal(err)
	}
	inner := &counting{}
	u, err := Open(dir, false).Unit("u")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := u.Client(id, inner).Complete(t.Context(), req("hi", 0)); err != nil {
		t.Fatal(err)
	}
	u2, _ := Open(dir, false).Unit("u")
	u2.Client(id, inner).Complete(t.Context(), req("hi", 0))
	if inner.n.Load() != 1 {
		t.Fatalf("calls = %d, want 1 (file rewritten after corruption)", inner.n.Load())
	}
}

func TestFinalWritePrunesStaleCalls(t *testing.T) {
	dir := t.TempDir()
	inner := &counting{}
	u, _ := Open(dir, false).Unit("u")
	u.Client(id, inner).Complete(t.Context(), req("old prompt", 0))
	u.SetResult("k1", "r1")

	u2, _ := Open(dir, false).Unit("u")
	u2.Client(id, inner).Complete(t.Context(), req("new prompt", 0))
	if err := u2.SetResult("k2", "r2"); err != nil {
		t.Fatal(err)
	}
	u3, _ := Open(dir, false).Unit("u")
	if _, ok := u3.stored[Key(id, req("old prompt", 0))]; ok {
		t.Error("stale call kept after the unit completed")
	}
	var got string
	if !u3.Result("k2", &got) || got != "r2" {
		t.Errorf("result = %q", got)
	}
	if u3.Result("k1", &got) {
		t.Error("result returned for a different input key")
	}
}

func TestFailedCallsAreNotStoredButCounted(t *testing.T) {
	dir := t.TempDir()
	failing := llm.ClientFunc(func(context.Context, llm.Request) (llm.Response, error) {
		return llm.Response{}, &llm.Error{Kind: llm.KindServer, Usage: llm.Usage{Requests: 3}}
	})
	u, _ := Open(dir, false).Unit("u")
	_, err := u.Client(id, failing).Complete(t.Context(), req("hi", 0))
	if llm.KindOf(err) != llm.KindServer {
		t.Fatalf("err = %v", err)
	}
	if u.Stats().Spent.Requests != 3 {
		t.Errorf("failed attempts not counted: %+v", u.Stats())
	}
	if _, err := os.Stat(filepath.Join(dir, "u.json")); !errors.Is(err, os.ErrNotExist) {
		t.Error("a failed call was persisted")
	}
}

func TestConcurrentCallsInOneUnit(t *testing.T) {
	dir := t.TempDir()
	inner := &counting{}
	u, _ := Open(dir, false).Unit("u")
	c := u.Client(id, inner)
	var wg sync.WaitGroup
	for i := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c.Complete(t.Context(), req(fmt.Sprint("q", i), 0))
		}()
	}
	wg.Wait()
	u2, _ := Open(dir, false).Unit("u")
	if len(u2.stored) != 16 {
		t.Fatalf("stored %d calls, want 16", len(u2.stored))
	}
}

func TestSecretHeaders(t *testing.T) {
	for _, h := range []string{"Authorization", "x-api-key", "X-Goog-Api-Key", "X-Auth-Token"} {
		if !IsSecretHeader(h) {
			t.Errorf("%s not treated as secret", h)
		}
	}
	if IsSecretHeader("User-Agent") {
		t.Error("User-Agent treated as secret")
	}
}

func TestTornJournalLineIsIgnored(t *testing.T) {
	dir := t.TempDir()
	inner := &counting{}
	u, _ := Open(dir, false).Unit("u")
	c := u.Client(id, inner)
	c.Complete(t.Context(), req("a", 0))
	c.Complete(t.Context(), req("b", 0))
	// A kill mid-append leaves half a line at the end.
	f, err := os.OpenFile(filepath.Join(dir, "u.jsonl"), os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(`{"key":"abc","response":{"te`)
	f.Close()
	u2, err := Open(dir, false).Unit("u")
	if err != nil {
		t.Fatal(err)
	}
	c2 := u2.Client(id, inner)
	c2.Complete(t.Context(), req("a", 0))
	c2.Complete(t.Context(), req("b", 0))
	if inner.n.Load() != 2 {
		t.Fatalf("calls = %d, want 2: journaled answers lost after a torn line", inner.n.Load())
	}
	if err := u2.SetResult("k", "done"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "u.jsonl")); !errors.Is(err, os.ErrNotExist) {
		t.Error("journal kept after the unit was compacted")
	}
}

func TestForceDropsOldJournal(t *testing.T) {
	dir := t.TempDir()
	inner := &counting{}
	u, _ := Open(dir, false).Unit("u")
	u.Client(id, inner).Complete(t.Context(), req("a", 0))
	if _, err := Open(dir, true).Unit("u"); err != nil {
		t.Fatal(err)
	}
	u3, _ := Open(dir, false).Unit("u")
	u3.Client(id, inner).Complete(t.Context(), req("a", 0))
	if inner.n.Load() != 2 {
		t.Fatal("an answer from before --force came back")
	}
}
