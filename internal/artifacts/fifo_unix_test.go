//go:build darwin || dragonfly || freebsd || linux || netbsd || openbsd

package artifacts

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/impactbench/impactbench/internal/hostile"
)

// TestErrorLinesOfAPipeDoNotHang: the error path re-reads a file to find
// the line of a problem; a file swapped for a named pipe meanwhile gives
// no line rather than blocking the command forever.
func TestErrorLinesOfAPipeDoNotHang(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "conversations.json")
	hostile.Pipe(t, fifo)
	for name, f := range map[string]func(){
		"lineAt":  func() { lineAt(fifo, 10, true) },
		"lineCol": func() { lineCol(fifo, 10) },
	} {
		t.Run(name, func(t *testing.T) { hostile.NotBlocked(t, fifo, f) })
	}
}

// A cost.json that is a named pipe, a device or a directory never blocks
// UpdateCost and is not ours to move: an error names it and it stays where
// it is (a named pipe blocked `run` forever). One over MaxObjectFileBytes
// is moved aside unread, as a corrupt ledger is (a 1 GiB file was read
// whole), and the phase's entry is written.
func TestUpdateCost_NotALedger(t *testing.T) {
	cases := []struct {
		name  string
		plant func(p string) error
		moved bool
	}{
		{"named pipe", func(p string) error { hostile.Pipe(t, p); return nil }, false},
		{"device", func(p string) error { return os.Symlink(os.DevNull, p) }, false},
		{"directory", func(p string) error { return os.Mkdir(p, 0o755) }, false},
		{"over the limit", func(p string) error {
			if err := os.WriteFile(p, []byte(`{"a": 1}`), 0o644); err != nil {
				return err
			}
			return os.Truncate(p, MaxObjectFileBytes+1)
		}, true},
	}
	for _, tc := range cases {
		p := filepath.Join(t.TempDir(), "cost.json")
		if err := tc.plant(p); err != nil {
			t.Skipf("%s: %v", tc.name, err)
		}
		before, _ := os.Lstat(p)
		var err error
		hostile.NotBlocked(t, p, func() { err = UpdateCost(p, "evaluate", PhaseCost{Cost: 1}) })
		if !tc.moved {
			after, serr := os.Lstat(p)
			if err == nil || !strings.Contains(err.Error(), p) || serr != nil || !os.SameFile(before, after) {
				t.Errorf("%s: err %v, want one naming %s, left in place (%v)", tc.name, err, p, serr)
			}
			if _, serr := os.Lstat(p + ".corrupt"); serr == nil {
				t.Errorf("%s: moved aside although it is not ours", tc.name)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if after, err := os.Lstat(p + ".corrupt"); err != nil || !os.SameFile(before, after) {
			t.Errorf("%s: not moved aside whole: %v", tc.name, err)
		}
		if phases, err := ReadCost(p); err != nil || len(phases) != 1 {
			t.Errorf("%s: ledger after: %+v %v", tc.name, phases, err)
		}
	}
}
