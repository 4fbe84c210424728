//go:build darwin || dragonfly || freebsd || linux || netbsd || openbsd

package until

import (
	"errors"
	"testing"

	"github.com/impactbench/impactbench/internal/artifacts"
	"github.com/impactbench/impactbench/internal/hostile"
	"github.com/impactbench/impactbench/internal/layout"
)

// An until.json that is a named pipe is refused naming it, not waited on
// (before, `run --until` blocked forever), and a missing one starts anew.
func TestReadStateRefusesANamedPipe(t *testing.T) {
	files := layout.Bench{Dir: t.TempDir()}
	if st, err := readState(files, 0.1); err != nil || len(st.Rounds) != 0 {
		t.Fatalf("missing until.json: %+v, %v", st, err)
	}
	hostile.Pipe(t, files.Until())
	var err error
	hostile.NotBlocked(t, files.Until(), func() { _, err = readState(files, 0.1) })
	var fe *artifacts.FileError
	if !errors.As(err, &fe) || fe.Path != files.Until() {
		t.Errorf("%v, want a *artifacts.FileError naming until.json", err)
	}
}
