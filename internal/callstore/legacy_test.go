package callstore

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"testing"

	"github.com/impactbench/impactbench/internal/llm"
)

type legacyWant struct {
	Prompts   []string `json:"prompts"`
	Answers   []string `json:"answers"`
	ResultKey string   `json:"result_key"`
	Result    string   `json:"result"`
	State     string   `json:"state"`
}

// copyLegacy copies testdata/legacy (a store the per-unit-file code wrote)
// to a temporary directory and returns it with what it holds.
func copyLegacy(t *testing.T) (string, map[string]legacyWant) {
	t.Helper()
	var want map[string]legacyWant
	b, err := os.ReadFile(filepath.Join("testdata", "legacy", "expected.json"))
	if err != nil || json.Unmarshal(b, &want) != nil {
		t.Fatalf("expected.json: %v", err)
	}
	dst := t.TempDir()
	src := filepath.Join("testdata", "legacy", "calls")
	err = filepath.WalkDir(src, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if err := os.MkdirAll(filepath.Join(dst, filepath.Dir(rel)), 0o700); err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), b, 0o600)
	})
	if err != nil {
		t.Fatal(err)
	}
	return dst, want
}

// never fails the test if it is asked anything.
func never(t *testing.T) llm.Client {
	return llm.ClientFunc(func(_ context.Context, r llm.Request) (llm.Response, error) {
		t.Errorf("paid for %q: a stored answer was asked again", r.Messages[0].Content)
		return llm.Response{}, nil
	})
}

// TestLegacyStoreResumesWithoutPaying: a project whose store the
// per-unit-file layout wrote resumes on segments without paying for any
// stored call; its results read back; its listing counts the same units;
// and a unit completed now supersedes the old file.
func TestLegacyStoreResumesWithoutPaying(t *testing.T) {
	dir, want := copyLegacy(t)
	s := Open(dir, false)
	for name, w := range want {
		u, err := s.Unit(name)
		if err != nil {
			t.Fatal(err)
		}
		c := u.Client(id, never(t))
		for i, p := range w.Prompts {
			r, err := c.Complete(t.Context(), req(p, 0))
			if err != nil || r.Text != w.Answers[i] || !r.Cached {
				t.Errorf("%s %q: %q cached %v %v, want %q", name, p, r.Text, r.Cached, err, w.Answers[i])
			}
		}
		var got string
		if w.ResultKey != "" && (!u.Result(w.ResultKey, &got) || got != w.Result) {
			t.Errorf("%s: Result = %q, want %q", name, got, w.Result)
		}
		if key, ok := s.ReadResult(name, &got); w.ResultKey != "" && (!ok || key != w.ResultKey || got != w.Result) {
			t.Errorf("%s: ReadResult = %q %q %v", name, key, got, ok)
		}
		u.Close()
	}
	done, running, err := ListUnits(filepath.Join(dir, "t", "sim"))
	if err != nil {
		t.Fatal(err)
	}
	names := doneNames(done)
	if len(names) != 2 || names[0] != "done_compact" || names[1] != "done_journal" || running != 2 {
		t.Errorf("listing: done %v, in progress %d; want [done_compact done_journal], 2", names, running)
	}
	// Finishing the killed and the redone unit now: both are done, and the
	// new results win over the old files.
	for _, name := range []string{"t/sim/killed", "t/sim/redo"} {
		u, _ := s.Unit(name)
		for _, p := range want[name].Prompts {
			u.Client(id, never(t)).Complete(t.Context(), req(p, 0))
		}
		if err := u.SetResult("new", "now"); err != nil {
			t.Fatal(err)
		}
		u.Close()
		var got string
		if key, ok := Open(dir, false).ReadResult(name, &got); !ok || key != "new" || got != "now" {
			t.Errorf("%s after finishing: %q %q %v", name, key, got, ok)
		}
	}
	done, running, err = ListUnits(filepath.Join(dir, "t", "sim"))
	if err != nil {
		t.Fatal(err)
	}
	if len(done) != 4 || running != 0 {
		t.Errorf("after finishing: done %v, in progress %d; want 4, 0", doneNames(done), running)
	}
}

// TestForceHidesLegacyFiles: --force ignores what the old files hold, and
// a later unforced run does not see them come back.
func TestForceHidesLegacyFiles(t *testing.T) {
	dir, _ := copyLegacy(t)
	inner := &counting{}
	u, err := Open(dir, true).Unit("t/sim/done_journal")
	if err != nil {
		t.Fatal(err)
	}
	var got string
	if u.Result("k1", &got) {
		t.Error("force returned the old result")
	}
	u.Client(id, inner).Complete(t.Context(), req("a", 0))
	u.Close()
	if inner.n.Load() != 1 {
		t.Fatalf("force replayed an old answer")
	}
	u2, _ := Open(dir, false).Unit("t/sim/done_journal")
	r, _ := u2.Client(id, inner).Complete(t.Context(), req("b", 0))
	if inner.n.Load() != 2 || r.Cached {
		t.Errorf("an answer from before --force came back: %q (%d calls)", r.Text, inner.n.Load())
	}
	if _, ok := Open(dir, false).ReadResult("t/sim/done_journal", &got); ok {
		t.Error("ReadResult returned the result from before --force")
	}
}

func doneNames(done []UnitFile) []string {
	var out []string
	for _, d := range done {
		out = append(out, d.Name)
	}
	sort.Strings(out)
	return out
}

// TestLegacyFileOverTheBoundIsNotTrusted: a legacy unit file over
// maxLegacyBytes is not read whole: like a damaged one it is never
// trusted (no result; its calls are made again).
func TestLegacyFileOverTheBoundIsNotTrusted(t *testing.T) {
	dir, want := copyLegacy(t)
	const name = "t/sim/done_compact"
	var got string
	if _, ok := Open(dir, false).ReadResult(name, &got); !ok {
		t.Fatal("within the bound: no result")
	}
	old := maxLegacyBytes
	maxLegacyBytes = 16
	t.Cleanup(func() { maxLegacyBytes = old })
	if key, ok := Open(dir, false).ReadResult(name, &got); ok {
		t.Errorf("a unit file over the bound gave its result %q %q", key, got)
	}
	u, err := Open(dir, false).Unit(name)
	if err != nil {
		t.Fatal(err)
	}
	defer u.Close()
	inner := &counting{}
	if r, err := u.Client(id, inner).Complete(t.Context(), req(want[name].Prompts[0], 0)); err != nil || r.Cached || inner.n.Load() != 1 {
		t.Errorf("a call of a unit file over the bound: cached %v, %d calls, %v; want it made again", r.Cached, inner.n.Load(), err)
	}
}
