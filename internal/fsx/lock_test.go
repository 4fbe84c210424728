package fsx

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestTryLockExcludesOtherOpens: two opens of one lock file (as two
// processes would have) cannot both hold it; closing releases it.
func TestTryLockExcludesOtherOpens(t *testing.T) {
	p := filepath.Join(t.TempDir(), ".lock")
	a, err := OpenLockFile(p)
	if err != nil {
		t.Fatal(err)
	}
	b, err := OpenLockFile(p)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if err := TryLock(a); err != nil {
		t.Fatal(err)
	}
	if err := TryLock(b); !errors.Is(err, ErrLocked) {
		t.Fatalf("second TryLock: %v, want ErrLocked", err)
	}
	if err := Unlock(a); err != nil {
		t.Fatal(err)
	}
	if err := TryLock(b); err != nil {
		t.Fatalf("TryLock after Unlock: %v", err)
	}
	if err := TryLock(a); !errors.Is(err, ErrLocked) {
		t.Fatalf("TryLock while the other holds it: %v", err)
	}
	b.Close()
	if err := TryLock(a); err != nil {
		t.Fatalf("TryLock after the holder closed: %v", err)
	}
	a.Close()
}

// TestLockWaits: Lock waits for the holder and the lock never stops
// another open from reading or appending (Windows locks are mandatory, so
// the locked byte lies past any content).
func TestLockWaits(t *testing.T) {
	p := filepath.Join(t.TempDir(), "labels.jsonl")
	a, err := OpenAppend(p, Shared)
	if err != nil {
		t.Fatal(err)
	}
	if err := Lock(a); err != nil {
		t.Fatal(err)
	}
	if _, err := a.WriteString("one\n"); err != nil {
		t.Fatal(err)
	}
	if got := readString(t, p); got != "one\n" {
		t.Errorf("a reader of the locked file got %q", got)
	}
	got := make(chan error, 1)
	go func() {
		b, err := OpenAppend(p, Shared)
		if err != nil {
			got <- err
			return
		}
		defer b.Close()
		if err := Lock(b); err != nil {
			got <- err
			return
		}
		_, err = b.WriteString("two\n")
		got <- err
	}()
	select {
	case err := <-got:
		t.Fatalf("Lock did not wait for the holder (%v)", err)
	case <-time.After(100 * time.Millisecond):
	}
	if err := Unlock(a); err != nil {
		t.Fatal(err)
	}
	a.Close()
	if err := <-got; err != nil {
		t.Fatal(err)
	}
	if got := readString(t, p); got != "one\ntwo\n" {
		t.Errorf("file %q", got)
	}
}

func TestProcessAlive(t *testing.T) {
	if !ProcessAlive(os.Getpid()) {
		t.Error("this process is not alive")
	}
	if ProcessAlive(0) || ProcessAlive(-1) {
		t.Error("pid 0 or -1 alive")
	}
}
