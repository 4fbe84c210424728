package until

import (
	"errors"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/impactbench/impactbench/internal/artifacts"
	"github.com/impactbench/impactbench/internal/layout"
)

// An until.json that is a named pipe is refused naming it, not waited on
// (before, `run --until` blocked forever), and a missing one starts anew.
func TestReadStateRefusesANamedPipe(t *testing.T) {
	files := layout.Bench{Dir: t.TempDir()}
	if st, err := readState(files, 0.1); err != nil || len(st.Rounds) != 0 {
		t.Fatalf("missing until.json: %+v, %v", st, err)
	}
	if err := syscall.Mkfifo(files.Until(), 0o644); err != nil {
		t.Skipf("no named pipes here: %v", err)
	}
	done := make(chan error, 1)
	go func() { _, err := readState(files, 0.1); done <- err }()
	select {
	case err := <-done:
		var fe *artifacts.FileError
		if !errors.As(err, &fe) || fe.Path != files.Until() {
			t.Errorf("%v, want a *artifacts.FileError naming until.json", err)
		}
	case <-time.After(10 * time.Second):
		if w, err := os.OpenFile(files.Until(), os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
			w.Close()
		}
		t.Fatal("readState still waiting on the named pipe after 10 s")
	}
}
