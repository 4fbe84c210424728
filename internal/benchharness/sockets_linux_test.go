package benchharness

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestFreezeStopsTheProcess: a victim is stopped before its ports are
// read, so it opens no connection between the reading and the kill.
func TestFreezeStopsTheProcess(t *testing.T) {
	cmd := exec.Command("sleep", "30")
	if err := cmd.Start(); err != nil {
		t.Skip("no sleep:", err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	freeze(cmd.Process.Pid)
	deadline := time.Now().Add(5 * time.Second)
	for {
		stat, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(cmd.Process.Pid), "stat"))
		if err != nil {
			t.Fatal(err)
		}
		// "pid (comm) state …": T is stopped by a signal.
		_, rest, _ := strings.Cut(string(stat), ") ")
		if strings.HasPrefix(rest, "T") {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("state %q after SIGSTOP, want T (stopped)", rest[:1])
		}
		time.Sleep(10 * time.Millisecond)
	}
}
