package callstore

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/impactbench/impactbench/internal/llm"
)

// TestOversizedAnswersAreBounded: an answer over llm.MaxReplyBytes is
// stored cut and marked, and one stored by an earlier version that kept
// it whole is replayed cut and marked, so that no rerun puts it into a
// result file (whose readers refuse values over 1 MiB).
func TestOversizedAnswersAreBounded(t *testing.T) {
	dir := t.TempDir()
	huge := strings.Repeat("a", 4<<20)
	big := llm.ClientFunc(func(context.Context, llm.Request) (llm.Response, error) {
		return llm.Response{Text: huge, Usage: llm.Usage{Requests: 1}}, nil
	})
	u, err := Open(dir, false).Unit("t/sim/fresh")
	if err != nil {
		t.Fatal(err)
	}
	r, err := u.Client(id, big).Complete(t.Context(), req("hi", 1))
	if err != nil || !r.Truncated || len(r.Text) > llm.MaxReplyBytes {
		t.Fatalf("fresh answer: %d bytes, truncated %v, %v", len(r.Text), r.Truncated, err)
	}
	if err := u.Close(); err != nil {
		t.Fatal(err)
	}
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if st, _ := d.Info(); st.Size() > 2*llm.MaxReplyBytes {
				t.Errorf("%s holds %d bytes: the whole answer was stored", p, st.Size())
			}
		}
		return nil
	})

	// A unit file as an earlier version wrote it, holding the whole answer.
	old := unitFile{Version: formatVersion, Calls: []Entry{{Key: Key(id, req("hi", 2)), Response: llm.Response{Text: huge, Usage: llm.Usage{Requests: 1}}}}}
	b, err := json.Marshal(old)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "t", "sim", "old.json")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	u2, err := Open(dir, false).Unit("t/sim/old")
	if err != nil {
		t.Fatal(err)
	}
	never := llm.ClientFunc(func(context.Context, llm.Request) (llm.Response, error) {
		t.Fatal("a stored answer was asked again")
		return llm.Response{}, nil
	})
	r, err = u2.Client(id, never).Complete(t.Context(), req("hi", 2))
	if err != nil || !r.Cached || !r.Truncated || llm.ReplyCost(r.Text) > llm.MaxReplyBytes {
		t.Fatalf("replayed answer: %d bytes, cached %v, truncated %v, %v", len(r.Text), r.Cached, r.Truncated, err)
	}
}
