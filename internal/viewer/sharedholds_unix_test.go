//go:build darwin || dragonfly || freebsd || linux || netbsd || openbsd

package viewer

import (
	"os"
	"testing"

	"github.com/impactbench/impactbench/internal/hostile"
	"github.com/impactbench/impactbench/internal/layout"
)

// TestAHoldsFileThatIsANamedPipeIsNeverWaitedOn: a named pipe at the
// holds file's place, or at its lock's, is never opened to wait for a
// writer: holds are each server's own (logged), labels go on, and the pipe
// is left as it was.
func TestAHoldsFileThatIsANamedPipeIsNeverWaitedOn(t *testing.T) {
	for _, c := range []struct {
		name string
		at   func(b layout.Bench) string
	}{
		{"holds file", layout.Bench.Holds},
		{"its lock", layout.Bench.HoldsLock},
	} {
		t.Run(c.name, func(t *testing.T) {
			badHolds(t, func(b layout.Bench) string { hostile.Pipe(t, c.at(b)); return c.at(b) }, "named pipe", false,
				func(pipe string, run func()) { hostile.NotBlocked(t, pipe, run) },
				func(pipe string) {
					if st, err := os.Lstat(pipe); err != nil || st.Mode()&os.ModeNamedPipe == 0 {
						t.Errorf("the named pipe %s was replaced: %v", pipe, err)
					}
				})
		})
	}
}
