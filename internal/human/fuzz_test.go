package human

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/impactbench/impactbench/internal/artifacts"
	"github.com/impactbench/impactbench/internal/layout"
)

// FuzzReadConversations: whatever the file holds, reading it never panics,
// and what it accepts is a file this package writes back identically
// readable (the rows pass the same checks).
func FuzzReadConversations(f *testing.F) {
	dir := f.TempDir()
	s := Open(dir)
	c, err := s.Start("alpha", scenario(), "ana", artifacts.RunInfo{}, t0)
	if err != nil {
		f.Fatal(err)
	}
	if _, err := s.Reply("alpha", c.ConvID, 0, user("hi"), reply("hello"), false, call, 3, t0); err != nil {
		f.Fatal(err)
	}
	good, err := os.ReadFile(convsPath(dir, "alpha"))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(good)
	f.Add([]byte("[]"))
	f.Add([]byte(`[{"id":"m01_s001_v01","metric_id":"m01","conv_id":"m01_s001_v01__alpha__h0","user":"human"}]`))
	f.Fuzz(func(t *testing.T, data []byte) {
		path := filepath.Join(t.TempDir(), layout.ConversationsFile)
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		rows, err := ReadConversations(path, "alpha")
		if err != nil {
			return
		}
		if err := writeRows(path, rows); err != nil {
			t.Fatal(err)
		}
		again, err := ReadConversations(path, "alpha")
		if err != nil || len(again) != len(rows) {
			t.Fatalf("accepted rows written back read as %d rows: %v", len(again), err)
		}
	})
}
