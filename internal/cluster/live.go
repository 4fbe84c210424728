package cluster

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/impactbench/impactbench/internal/fsx"
	"github.com/impactbench/impactbench/internal/layout"
)

// DirPresence shows that a worker runs to the other workers of a study on
// one shared directory, and counts them: each holds the exclusive lock of
// its own file, <dir>/worker-<random>.lock, for as long as it runs. The
// system drops the lock when the process ends, even by SIGKILL, so a
// killed worker stops counting at once; on another host's file system
// (NFS) fsx.LockHeld probes the lock itself. The provider limits are
// divided by the count (ratelimit.Registry.FollowLive).
//
// Shard locks would say the same while a worker runs a benchmark, but not
// between two benchmarks of `run all`, nor while it starts or writes its
// files: a worker's own file covers its whole life.
type DirPresence struct {
	dir  string
	path string
	lock *fsx.HeldLock
}

// staleAfter is how old a presence file whose lock is free must be before
// Count removes it: a worker creates its file before it locks it, so a
// young unlocked file may be one being born.
const staleAfter = time.Minute

// MaxPresenceEntries bounds the entries of a presence folder, one per
// worker: one over it is refused (exit 2) after reading that many.
var MaxPresenceEntries = 10_000

// JoinDir makes the worker present in dir (created if need be); label
// says what it runs, for whoever reads the file.
func JoinDir(dir, label string) (*DirPresence, error) {
	if err := fsx.MkdirAll(dir, fsx.Shared); err != nil {
		return nil, fmt.Errorf("cluster: presence directory: %w", err)
	}
	var b [8]byte
	_, _ = rand.Read(b[:]) // crypto/rand never fails on supported systems
	path := layout.PresenceFile(dir, hex.EncodeToString(b[:]))
	l, err := fsx.TakeLock(path, label)
	if err != nil {
		return nil, fmt.Errorf("cluster: join %s: %w", dir, err)
	}
	return &DirPresence{dir: dir, path: path, lock: l}, nil
}

// Count is the workers present now, this one included. Files of workers
// that ended without leaving (killed) are removed once stale.
func (d *DirPresence) Count(ctx context.Context) (int, error) {
	entries, err := fsx.ReadDir(d.dir, MaxPresenceEntries, func(e fs.DirEntry) bool { return layout.IsPresenceFile(e.Name()) })
	if err != nil {
		return 0, fmt.Errorf("cluster: count workers in %s: %w", d.dir, err)
	}
	n := 0
	for _, e := range entries {
		if ctx.Err() != nil {
			return 0, ctx.Err()
		}
		name := e.Name()
		if !layout.IsPresenceFile(name) {
			continue
		}
		path := filepath.Join(d.dir, name)
		if path == d.path {
			n++
			continue
		}
		if _, held := fsx.LockHeld(path); held {
			n++
			continue
		}
		removeStale(path, e)
	}
	return max(n, 1), nil
}

// removeStale removes a presence file whose lock is free, once it is old
// enough not to be one being born.
func removeStale(path string, e fs.DirEntry) {
	info, err := e.Info()
	if err == nil && time.Since(info.ModTime()) > staleAfter {
		// Another worker may remove it first, or none may be allowed to:
		// it is counted out either way.
		_ = os.Remove(path)
	}
}

// Leave removes the worker's file and drops its lock.
func (d *DirPresence) Leave() error {
	if d == nil || d.lock == nil {
		return nil
	}
	rerr := os.Remove(d.path)
	err := d.lock.Release()
	d.lock = nil
	if rerr != nil && !errors.Is(rerr, fs.ErrNotExist) {
		return rerr
	}
	return err
}

// Close is Leave (an io.Closer for the run's environment).
func (d *DirPresence) Close() error { return d.Leave() }
