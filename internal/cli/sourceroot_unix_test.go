//go:build darwin || dragonfly || freebsd || linux || netbsd || openbsd

package cli

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/impactbench/impactbench/internal/hostile"
)

// init's next steps look for the source tree in the directories above the
// working directory, which the project does not own: a named pipe called
// go.mod there is not a source tree, and init must not wait on it.
func TestSourceRootSkipsANamedPipe(t *testing.T) {
	top := t.TempDir()
	pipe := filepath.Join(top, "go.mod")
	hostile.Pipe(t, pipe)
	child := filepath.Join(top, "a", "b")
	if err := os.MkdirAll(child, 0o755); err != nil {
		t.Fatal(err)
	}
	hostile.NotBlocked(t, pipe, func() {
		if root := sourceRoot(child); root != "" {
			t.Errorf("sourceRoot = %q, want none", root)
		}
	})
}
