//go:build darwin || dragonfly || freebsd || linux || netbsd || openbsd

package hostile

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// recorder is a testing.TB that keeps what Errorf says.
type recorder struct {
	testing.TB
	errs []string
}

func (r *recorder) Errorf(format string, args ...any) {
	r.errs = append(r.errs, fmt.Sprintf(format, args...))
}

// TestNotBlockedCatchesABlockedRead: a read that blocks on the pipe fails
// the test (and is then unblocked, so the test ends); one that refuses the
// pipe passes.
func TestNotBlockedCatchesABlockedRead(t *testing.T) {
	if testing.Short() {
		t.Skip("waits PipeWait")
	}
	fifo := filepath.Join(t.TempDir(), "in.json")
	Pipe(t, fifo)
	blocked := &recorder{TB: t}
	NotBlocked(blocked, fifo, func() { _, _ = os.ReadFile(fifo) })
	if len(blocked.errs) != 1 {
		t.Errorf("a read blocked on the pipe: %d errors, want 1: %q", len(blocked.errs), blocked.errs)
	}
	refused := &recorder{TB: t}
	NotBlocked(refused, fifo, func() {
		if fi, err := os.Lstat(fifo); err == nil && fi.Mode().IsRegular() {
			_, _ = os.ReadFile(fifo)
		}
	})
	if len(refused.errs) != 0 {
		t.Errorf("a read that refused the pipe failed: %q", refused.errs)
	}
}
