package fsx

import (
	"bufio"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestTakeLockNamesTheHolder: a second taker gets a *LockedError naming
// the holder's host, pid, start and label; after Release the lock is free.
func TestTakeLockNamesTheHolder(t *testing.T) {
	p := filepath.Join(t.TempDir(), ".lock.shard-0-of-2")
	l, err := TakeLock(p, "shard 0/2")
	if err != nil {
		t.Fatal(err)
	}
	_, err = TakeLock(p, "shard 0/2")
	var le *LockedError
	if !errors.As(err, &le) || !errors.Is(err, ErrLocked) {
		t.Fatalf("second TakeLock: %v, want a *LockedError", err)
	}
	host, _ := os.Hostname()
	want := ThisProcess("shard 0/2")
	if !le.Known || le.Holder.PID != os.Getpid() || le.Holder.Host != host || le.Holder.Label != "shard 0/2" ||
		!le.Holder.Started.Equal(want.Started.Truncate(time.Second)) {
		t.Fatalf("holder %+v (known %v), want %+v", le.Holder, le.Known, want)
	}
	for _, part := range []string{"pid ", "host " + host, "started ", "label shard 0/2"} {
		if !strings.Contains(err.Error(), part) {
			t.Errorf("message %q lacks %q", err, part)
		}
	}
	if err := l.Release(); err != nil {
		t.Fatal(err)
	}
	l2, err := TakeLock(p, "next")
	if err != nil {
		t.Fatalf("TakeLock after Release: %v", err)
	}
	defer l2.Release()
	if h, ok := ReadHolder(p); !ok || h.Label != "next" {
		t.Errorf("ReadHolder = %+v %v, want the new holder", h, ok)
	}
}

// TestTakeLockWaitsOutAStaleLine: a lock just taken whose file still names
// the previous holder (a process of this host that has ended) is reported
// with the new holder's line once it is written, not the stale one.
func TestTakeLockWaitsOutAStaleLine(t *testing.T) {
	p := filepath.Join(t.TempDir(), ".lock")
	dead := Holder{Host: ThisProcess("").Host, PID: deadPID(t), Started: time.Now(), Label: "old run"}
	if err := os.WriteFile(p, []byte(dead.String()+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := OpenLockFile(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := TryLock(f); err != nil { // taken, holder line not yet written
		t.Fatal(err)
	}
	go func() {
		time.Sleep(100 * time.Millisecond)
		f.WriteAt([]byte(ThisProcess("new run").String()+"\n"), 0)
	}()
	_, err = TakeLock(p, "")
	var le *LockedError
	if !errors.As(err, &le) || !le.Known || le.Holder.Label != "new run" {
		t.Fatalf("got %v (%+v), want the new holder", err, le)
	}
}

// TestTakeLockAcrossProcesses: the holder is another process; the message
// names its pid and label.
func TestTakeLockAcrossProcesses(t *testing.T) {
	if os.Getenv("FSX_HOLD_LOCK") != "" {
		l, err := TakeLock(os.Getenv("FSX_HOLD_LOCK"), "shard 1/2")
		if err != nil {
			os.Exit(3)
		}
		os.Stdout.WriteString("held\n")
		bufio.NewReader(os.Stdin).ReadString('\n')
		l.Release()
		os.Exit(0)
	}
	p := filepath.Join(t.TempDir(), ".lock")
	cmd := exec.Command(os.Args[0], "-test.run=^TestTakeLockAcrossProcesses$")
	cmd.Env = append(os.Environ(), "FSX_HOLD_LOCK="+p)
	in, _ := cmd.StdinPipe()
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Wait()
	defer in.Close()
	if line, _ := bufio.NewReader(out).ReadString('\n'); line != "held\n" {
		t.Fatalf("child said %q", line)
	}
	_, err := TakeLock(p, "shard 1/2")
	var le *LockedError
	if !errors.As(err, &le) || !le.Known || le.Holder.PID != cmd.Process.Pid || le.Holder.Label != "shard 1/2" {
		t.Fatalf("got %v, want the child (pid %d) named", err, cmd.Process.Pid)
	}
}

func TestParseHolder(t *testing.T) {
	for _, tc := range []struct {
		line string
		ok   bool
		want Holder
	}{
		{"pid 12, host n-1, started 2026-11-28T10:00:00Z, label shard 0/2, again", true,
			Holder{PID: 12, Host: "n-1", Started: time.Date(2026, 11, 28, 10, 0, 0, 0, time.UTC), Label: "shard 0/2, again"}},
		{"pid 12, started 2026-11-28T10:00:00Z", true, Holder{PID: 12, Started: time.Date(2026, 11, 28, 10, 0, 0, 0, time.UTC)}},
		{"", false, Holder{}},
		{"pid x", false, Holder{}},
		{"host a", false, Holder{}},
	} {
		got, ok := ParseHolder(tc.line)
		if ok != tc.ok || got.PID != tc.want.PID || got.Host != tc.want.Host || got.Label != tc.want.Label || !got.Started.Equal(tc.want.Started) {
			t.Errorf("ParseHolder(%q) = %+v %v, want %+v %v", tc.line, got, ok, tc.want, tc.ok)
		}
	}
	// A label cannot break the line.
	h := ThisProcess("a\nb")
	if strings.Contains(h.String(), "\n") {
		t.Errorf("label kept a newline: %q", h.String())
	}
}

// deadPID is the pid of a process that has ended.
func deadPID(t *testing.T) int {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	return cmd.Process.Pid
}
