package work

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/impactbench/impactbench/internal/fault"
	"github.com/impactbench/impactbench/internal/fsx"
)

// ErrLocked says another process holds the benchmark.
type ErrLocked struct {
	Bench  string
	Holder string // what the other process wrote into the lock file
}

// FaultKind: another process holds the benchmark.
func (e *ErrLocked) FaultKind() fault.Kind { return fault.Locked }

func (e *ErrLocked) Error() string {
	return fmt.Sprintf("benchmark %s is being run by another impactbench process (%s); wait for it to finish or stop it — two runs on one benchmark would overwrite each other's files",
		e.Bench, strings.TrimSpace(e.Holder))
}

// lockFile is an exclusive advisory lock (fsx.TryLock) on
// <cache>/<bench>/.lock. The system releases it when the process dies,
// even by SIGKILL, so a crash never leaves a stale lock behind. The file
// is opened without following a symbolic link: a link there is refused,
// so the holder's line is never written into the file it points at.
type lockFile struct{ f *os.File }

// maxHolder bounds what is read of another holder's line.
const maxHolder = 4 << 10

func acquireLock(dir, bench string) (*lockFile, error) {
	if err := fsx.MkdirAll(dir, fsx.Shared); err != nil {
		return nil, err
	}
	path := filepath.Join(dir, ".lock")
	f, err := fsx.OpenLockFile(path)
	if err != nil {
		return nil, fmt.Errorf("open lock: %w", err)
	}
	if err := fsx.TryLock(f); err != nil {
		holder := make([]byte, maxHolder)
		n, _ := f.ReadAt(holder, 0)
		f.Close()
		if errors.Is(err, fsx.ErrLocked) {
			return nil, &ErrLocked{Bench: bench, Holder: string(holder[:n])}
		}
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	_ = f.Truncate(0)
	_, _ = f.WriteAt([]byte(fmt.Sprintf("pid %d, started %s", os.Getpid(), time.Now().Format(time.RFC3339))), 0)
	return &lockFile{f: f}, nil
}

func (l *lockFile) release() {
	if l == nil || l.f == nil {
		return
	}
	_ = fsx.Unlock(l.f)
	l.f.Close()
}
