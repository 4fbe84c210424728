package callstore

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
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

// Force ignores what earlier invocations stored, not what this one did: a
// unit opened twice under one forced store keeps the first opening's work.
func TestForceKeepsThisInvocationsAnswers(t *testing.T) {
	dir := t.TempDir()
	inner := &counting{}
	old, _ := Open(dir, false).Unit("u")
	old.Client(id, inner).Complete(t.Context(), req("hi", 0))
	old.SetResult("k", "old")
	old.Close()
	forced := Open(dir, true)
	u1, _ := forced.Unit("u")
	u1.Client(id, inner).Complete(t.Context(), req("hi", 0))
	if err := u1.SetResult("k", "new"); err != nil {
		t.Fatal(err)
	}
	u1.Close()
	u2, _ := forced.Unit("u")
	defer u2.Close()
	var got string
	if !u2.Result("k", &got) || got != "new" {
		t.Fatalf("second opening under force: result %q, want this invocation's \"new\"", got)
	}
	u2.Client(id, inner).Complete(t.Context(), req("hi", 0))
	if n := inner.n.Load(); n != 2 {
		t.Fatalf("%d calls, want 2: the first opening under force pays again, the second replays it", n)
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

// The journal stays open between a unit's calls; each call is readable by
// another process (here: another unit) the moment Complete returns, also
// after Close and after SetResult, when later calls reopen the journal.
func TestJournalHeldOpenStillRecordsEveryCall(t *testing.T) {
	dir := t.TempDir()
	inner := &counting{}
	u, _ := Open(dir, false).Unit("t/judge/row")
	c := u.Client(id, inner)
	visible := func(prompts ...string) {
		t.Helper()
		other, err := Open(dir, false).Unit("t/judge/row")
		if err != nil {
			t.Fatal(err)
		}
		defer other.Close()
		for _, p := range prompts {
			if _, ok := other.stored[Key(id, req(p, 0))]; !ok {
				t.Errorf("call %q not on disk", p)
			}
		}
	}
	c.Complete(t.Context(), req("a", 0))
	c.Complete(t.Context(), req("b", 0))
	visible("a", "b")
	if err := u.Close(); err != nil {
		t.Fatal(err)
	}
	c.Complete(t.Context(), req("c", 0)) // reopens the journal
	visible("a", "b", "c")
	if err := u.SetResult("k", "r"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "t", "judge", "row.jsonl")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("journal left after SetResult: %v", err)
	}
	c.Complete(t.Context(), req("d", 0))
	visible("a", "b", "c", "d")
	if err := u.Close(); err != nil {
		t.Fatal(err)
	}
	if err := u.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if inner.n.Load() != 4 {
		t.Errorf("%d calls sent, want 4", inner.n.Load())
	}
}

// A unit completed in one execution is committed as its journal plus a
// result line; one resumed or rewritten is compact. Both forms read back the
// same calls and result, and a journal left with its result line (killed
// before the rename) still replays its calls.
func TestUnitFileFormsReadBackAlike(t *testing.T) {
	complete := func(t *testing.T, s *Store, inner llm.Client, prompts ...string) {
		t.Helper()
		u, err := s.Unit("u")
		if err != nil {
			t.Fatal(err)
		}
		defer u.Close()
		for _, p := range prompts {
			if _, err := u.Client(id, inner).Complete(t.Context(), req(p, 0)); err != nil {
				t.Fatal(err)
			}
		}
		if err := u.SetResult("k", map[string]string{"r": "ok"}); err != nil {
			t.Fatal(err)
		}
	}
	form := func(t *testing.T, dir string) string {
		b, err := os.ReadFile(filepath.Join(dir, "u.json"))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(filepath.Join(dir, "u.jsonl")); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("journal left beside the unit file: %v", err)
		}
		if b[0] == '{' && b[len(b)-1] == '}' && !strings.Contains(string(b), "\n") {
			return "compact"
		}
		return "journal"
	}
	for _, tc := range []struct {
		name     string
		setup    func(t *testing.T, dir string, inner llm.Client)
		wantForm string
	}{
		{"completed in one execution", func(t *testing.T, dir string, inner llm.Client) {
			complete(t, Open(dir, false), inner, "a", "b")
		}, "journal"},
		{"forced", func(t *testing.T, dir string, inner llm.Client) {
			complete(t, Open(dir, false), inner, "a", "b")
			complete(t, Open(dir, true), inner, "a", "b")
		}, "journal"},
		{"resumed after a kill", func(t *testing.T, dir string, inner llm.Client) {
			u, _ := Open(dir, false).Unit("u")
			u.Client(id, inner).Complete(t.Context(), req("a", 0))
			u.Close() // killed before SetResult
			complete(t, Open(dir, false), inner, "a", "b")
		}, "compact"},
		{"result set twice", func(t *testing.T, dir string, inner llm.Client) {
			u, _ := Open(dir, false).Unit("u")
			defer u.Close()
			u.Client(id, inner).Complete(t.Context(), req("a", 0))
			u.SetResult("first", "x")
			u.Client(id, inner).Complete(t.Context(), req("b", 0))
			u.SetResult("k", map[string]string{"r": "ok"})
		}, "compact"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			inner := &counting{}
			tc.setup(t, dir, inner)
			if got := form(t, dir); got != tc.wantForm {
				t.Errorf("unit file in %s form, want %s", got, tc.wantForm)
			}
			var res map[string]string
			if key, ok := Open(dir, false).ReadResult("u", &res); !ok || key != "k" || res["r"] != "ok" {
				t.Errorf("ReadResult = %q %v %v", key, res, ok)
			}
			u, _ := Open(dir, false).Unit("u")
			defer u.Close()
			if !u.Result("k", &res) {
				t.Error("Unit.Result missed the stored result")
			}
			calls := inner.n.Load()
			for _, p := range []string{"a", "b"} {
				if _, err := u.Client(id, inner).Complete(t.Context(), req(p, 0)); err != nil {
					t.Fatal(err)
				}
			}
			if n := inner.n.Load() - calls; n != 0 {
				t.Errorf("replay made %d calls", n)
			}
		})
	}

	t.Run("killed between the result line and the rename", func(t *testing.T) {
		dir := t.TempDir()
		inner := &counting{}
		complete(t, Open(dir, false), inner, "a", "b")
		if err := os.Rename(filepath.Join(dir, "u.json"), filepath.Join(dir, "u.jsonl")); err != nil {
			t.Fatal(err)
		}
		u, _ := Open(dir, false).Unit("u")
		defer u.Close()
		for _, p := range []string{"a", "b"} {
			u.Client(id, inner).Complete(t.Context(), req(p, 0))
		}
		if inner.n.Load() != 2 {
			t.Errorf("%d calls, want the 2 of the first execution only", inner.n.Load())
		}
		if err := u.SetResult("k", map[string]string{"r": "ok"}); err != nil {
			t.Fatal(err)
		}
		if got := form(t, dir); got != "compact" {
			t.Errorf("unit file in %s form after the resume, want compact", got)
		}
	})
}
