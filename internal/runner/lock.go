package runner

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// ErrLocked says another process holds the benchmark.
type ErrLocked struct {
	Bench  string
	Holder string // what the other process wrote into the lock file
}

func (e *ErrLocked) Error() string {
	return fmt.Sprintf("benchmark %s is being run by another impactbench process (%s); wait for it to finish or stop it — two runs on one benchmark would overwrite each other's files",
		e.Bench, strings.TrimSpace(e.Holder))
}

// lockFile is an exclusive advisory lock (flock) on <cache>/<bench>/.lock.
// The kernel releases it when the process dies, even by SIGKILL, so a crash
// never leaves a stale lock behind.
type lockFile struct{ f *os.File }

func acquireLock(dir, bench string) (*lockFile, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("create %s: %w", dir, err)
	}
	path := filepath.Join(dir, ".lock")
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open lock %s: %w", path, err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		holder, _ := os.ReadFile(path)
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, &ErrLocked{Bench: bench, Holder: string(holder)}
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
	_ = syscall.Flock(int(l.f.Fd()), syscall.LOCK_UN)
	l.f.Close()
}
