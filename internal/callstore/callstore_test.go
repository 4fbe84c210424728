package callstore

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

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

// A later result supersedes an earlier one; answers of a changed prompt
// stay stored (a prompt changed back costs nothing).
func TestNewResultSupersedesOld(t *testing.T) {
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
	var got string
	if !u3.Result("k2", &got) || got != "r2" {
		t.Errorf("result = %q", got)
	}
	if u3.Result("k1", &got) {
		t.Error("result returned for a different input key")
	}
	if key, ok := Open(dir, false).ReadResult("u", &got); !ok || key != "k2" || got != "r2" {
		t.Errorf("ReadResult = %q %q %v", key, got, ok)
	}
	u3.Client(id, inner).Complete(t.Context(), req("old prompt", 0))
	if inner.n.Load() != 2 {
		t.Errorf("%d calls, want 2: the old prompt's answer was dropped", inner.n.Load())
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
	if u2, _ := Open(dir, false).Unit("u"); len(u2.stored) != 0 {
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

// A kill mid-append leaves half a record at the end of the writer's
// segment: it is ignored, the records before it are replayed, and the
// next writer (a new process, a new segment) is unaffected.
func TestTornSegmentTailIsIgnored(t *testing.T) {
	dir := t.TempDir()
	inner := &counting{}
	u, _ := Open(dir, false).Unit("u")
	c := u.Client(id, inner)
	c.Complete(t.Context(), req("a", 0))
	c.Complete(t.Context(), req("b", 0))
	segs := segFiles(t, dir)
	if len(segs) != 1 {
		t.Fatalf("segments %v, want 1", segs)
	}
	f, err := os.OpenFile(segs[0], os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	full := encodeLine(callHeader("u", -1, Key(id, req("c", 0))), []byte(`{"key":"x","response":{"text":"never handed out"}}`))
	f.Write(full[:len(full)/2])
	f.Close()
	u2, err := Open(dir, false).Unit("u")
	if err != nil {
		t.Fatal(err)
	}
	c2 := u2.Client(id, inner)
	for _, p := range []string{"a", "b", "c"} {
		if _, err := c2.Complete(t.Context(), req(p, 0)); err != nil {
			t.Fatal(err)
		}
	}
	if inner.n.Load() != 3 {
		t.Fatalf("calls = %d, want 3: the two stored answers replayed, the torn one paid", inner.n.Load())
	}
	if err := u2.SetResult("k", "done"); err != nil {
		t.Fatal(err)
	}
	var got string
	if key, ok := Open(dir, false).ReadResult("u", &got); !ok || key != "k" || got != "done" {
		t.Errorf("ReadResult after the torn tail = %q %q %v", key, got, ok)
	}
}

// segFiles lists the segment files under dir.
func segFiles(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && strings.HasSuffix(p, ".seg") && !d.IsDir() {
			out = append(out, p)
		}
		return nil
	})
	return out
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

// TestCallsAndCommitsOfOneUnitAtOnce: a judge panel's calls may still be
// storing while the unit commits; neither waits for the other forever.
func TestCallsAndCommitsOfOneUnitAtOnce(t *testing.T) {
	u, _ := Open(t.TempDir(), false).Unit("t/eval/row__s0")
	defer u.Close()
	inner := &counting{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		var wg sync.WaitGroup
		for i := range 2000 {
			wg.Add(2)
			go func() {
				defer wg.Done()
				u.Client(id, inner).Complete(context.Background(), req(fmt.Sprint("q", i), 0))
			}()
			go func() { defer wg.Done(); u.SetResult(fmt.Sprint("k", i), i) }()
		}
		wg.Wait()
	}()
	select {
	case <-done:
	case <-time.After(60 * time.Second):
		t.Fatal("calls and commits of one unit deadlocked")
	}
}
