package fsx

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
	"unicode"
)

// processStart is when this process started, near enough: package
// initialisation runs before main.
var processStart = time.Now()

// Holder names the process that holds a lock: enough for a person to find
// it on a cluster (which machine, which process, since when, doing what).
type Holder struct {
	Host    string
	PID     int
	Started time.Time // when the holding process started
	Label   string    // what the caller said it holds the lock for, e.g. "shard 3/16"
}

// ThisProcess is the Holder this process writes into the locks it takes.
func ThisProcess(label string) Holder {
	host, _ := os.Hostname()
	return Holder{Host: cleanField(host, 255), PID: os.Getpid(), Started: processStart, Label: cleanField(label, maxLabel)}
}

// maxLabel bounds a holder's label; maxHolderLine what is read of a lock file.
const (
	maxLabel      = 200
	maxHolderLine = 1024
)

// String is the holder as its lock file holds it and messages show it:
// "pid 4242, host node-7, started 2026-11-28T10:00:00Z, label shard 3/16".
// It starts with "pid N" as the lock lines of earlier versions did, which
// status readers parse.
func (h Holder) String() string {
	s := fmt.Sprintf("pid %d, host %s, started %s", h.PID, h.Host, h.Started.UTC().Format(time.RFC3339))
	if h.Label != "" {
		s += ", label " + h.Label
	}
	return s
}

// ParseHolder reads a holder line as String writes it. A line of an
// earlier version ("pid N, started T") parses with the fields it has.
func ParseHolder(line string) (Holder, bool) {
	line, _, _ = strings.Cut(line, "\n")
	var h Holder
	for i, part := range strings.SplitN(strings.TrimSpace(line), ", ", 4) {
		name, val, _ := strings.Cut(part, " ")
		switch {
		case i == 0 && name == "pid":
			pid, err := strconv.Atoi(val)
			if err != nil || pid <= 0 {
				return Holder{}, false
			}
			h.PID = pid
		case i == 0:
			return Holder{}, false
		case name == "host":
			h.Host = val
		case name == "started":
			h.Started, _ = time.Parse(time.RFC3339, val)
		case name == "label":
			h.Label = val
		}
	}
	return h, h.PID > 0
}

// cleanField keeps a field on one line and bounded: control characters
// (a newline would end the holder line) become spaces.
func cleanField(s string, max int) string {
	s = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return ' '
		}
		return r
	}, s)
	if len(s) > max {
		s = s[:max]
	}
	return strings.TrimSpace(s)
}

// LockedError says a lock is held by another process, naming it when the
// holder's line could be read (Known).
type LockedError struct {
	Path   string
	Holder Holder
	Known  bool
}

func (e *LockedError) Error() string {
	if !e.Known {
		return fmt.Sprintf("%s is locked by another process (which one could not be read)", e.Path)
	}
	return fmt.Sprintf("%s is locked by another process (%s)", e.Path, e.Holder)
}

// Is makes errors.Is(err, ErrLocked) true.
func (e *LockedError) Is(target error) bool { return target == ErrLocked }

// HeldLock is a lock taken with TakeLock.
type HeldLock struct{ f *os.File }

// TakeLock takes the exclusive lock of the lock file at path without
// waiting (see TryLock) and records this process in it as its holder, so
// that a process that fails to take it can say who has it. A held lock is
// a *LockedError naming the holder.
func TakeLock(path, label string) (*HeldLock, error) {
	f, err := OpenLockFile(path)
	if err != nil {
		return nil, fmt.Errorf("open lock %s: %w", path, err)
	}
	if err := TryLock(f); err != nil {
		if !errors.Is(err, ErrLocked) {
			f.Close()
			return nil, fmt.Errorf("lock %s: %w", path, err)
		}
		h, known := readLiveHolder(f)
		f.Close()
		return nil, &LockedError{Path: path, Holder: h, Known: known}
	}
	// The new line is written over the old before the file is cut to it,
	// so a reader never finds the file empty while it is held.
	line := []byte(ThisProcess(label).String() + "\n")
	if _, err := f.WriteAt(line, 0); err != nil {
		f.Close()
		return nil, fmt.Errorf("lock %s: record holder: %w", path, err)
	}
	if err := f.Truncate(int64(len(line))); err != nil {
		f.Close()
		return nil, fmt.Errorf("lock %s: record holder: %w", path, err)
	}
	return &HeldLock{f: f}, nil
}

// Release unlocks and closes the lock file. The holder's line stays; a
// reader tells it is stale because the lock is free (or, on this host,
// because its process is gone).
func (l *HeldLock) Release() error {
	if l == nil || l.f == nil {
		return nil
	}
	err := Unlock(l.f)
	if cerr := l.f.Close(); err == nil {
		err = cerr
	}
	l.f = nil
	return err
}

// holderWait bounds how long a process that failed to take a lock waits
// for the holder to write its line: the holder writes it right after
// taking the lock, so an empty or stale line is only seen in that window.
const holderWait = 500 * time.Millisecond

// readLiveHolder reads the holder line of a lock that TryLock found held,
// looking again while it is missing or names a process of this host that
// has ended (the previous holder's line, not yet replaced).
func readLiveHolder(f *os.File) (Holder, bool) {
	deadline := time.Now().Add(holderWait)
	host, _ := os.Hostname()
	for {
		buf := make([]byte, maxHolderLine)
		n, _ := f.ReadAt(buf, 0)
		h, ok := ParseHolder(string(buf[:n]))
		stale := ok && (h.Host == "" || h.Host == cleanField(host, 255)) && !ProcessAlive(h.PID)
		if (ok && !stale) || time.Now().After(deadline) {
			return h, ok && !stale
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// ReadHolder reads the holder line of the lock file at path without
// taking the lock (for status: whether the process it names is alive is
// for the caller to judge).
func ReadHolder(path string) (Holder, bool) {
	f, err := OpenNoFollow(path)
	if err != nil {
		return Holder{}, false
	}
	defer f.Close()
	buf := make([]byte, maxHolderLine)
	n, _ := f.ReadAt(buf, 0)
	return ParseHolder(string(buf[:n]))
}

// LockHeld reports whether the lock file at path is held now, and by whom.
// A holder on this host is judged by its process (alive or not), without
// touching the lock: a probe that took the lock, however briefly, could
// make a run starting at that instant find it held. A holder on another
// host (a shared file system) cannot be judged that way, so the lock is
// probed with a shared lock, released at once: it fails only while an
// exclusive holder has it.
func LockHeld(path string) (Holder, bool) {
	h, ok := ReadHolder(path)
	if !ok {
		return Holder{}, false
	}
	host, _ := os.Hostname()
	if h.Host == "" || h.Host == cleanField(host, 255) {
		return h, ProcessAlive(h.PID)
	}
	f, err := OpenNoFollow(path)
	if err != nil {
		return h, false
	}
	defer f.Close()
	if err := TryLockShared(f); err != nil {
		return h, errors.Is(err, ErrLocked)
	}
	_ = Unlock(f)
	return h, false
}
