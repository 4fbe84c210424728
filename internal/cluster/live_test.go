package cluster_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/impactbench/impactbench/internal/cluster"
	"github.com/impactbench/impactbench/internal/fault"
	"github.com/impactbench/impactbench/internal/llm"
	"github.com/impactbench/impactbench/internal/llm/ratelimit"
)

// envPresenceChild makes the test binary a worker that joins the directory
// it names and waits to be killed.
const envPresenceChild = "IMPACTBENCH_TEST_PRESENCE_DIR"

func TestMain(m *testing.M) {
	if dir := os.Getenv(envPresenceChild); dir != "" {
		p, err := cluster.JoinDir(dir, "test worker")
		if err != nil {
			os.Exit(3)
		}
		defer p.Leave()
		os.Stdout.WriteString("joined\n")
		time.Sleep(time.Minute)
		return
	}
	os.Exit(m.Run())
}

// startWorker runs a worker process present in dir until it is killed.
func startWorker(t *testing.T, dir string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), envPresenceChild+"="+dir)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	buf := make([]byte, 7)
	if _, err := out.Read(buf); err != nil || string(buf) != "joined\n" {
		t.Fatalf("worker did not join: %q, %v", buf, err)
	}
	return cmd
}

func count(t *testing.T, p *cluster.DirPresence) int {
	t.Helper()
	n, err := p.Count(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// Workers in one directory count each other; one that leaves, or is
// killed (its lock dropped by the system), stops counting at once.
func TestDirPresenceCounts(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "workers")
	me, err := cluster.JoinDir(dir, "me")
	if err != nil {
		t.Fatal(err)
	}
	defer me.Leave()
	if n := count(t, me); n != 1 {
		t.Fatalf("alone: %d workers", n)
	}
	other, err := cluster.JoinDir(dir, "other")
	if err != nil {
		t.Fatal(err)
	}
	child := startWorker(t, dir)
	if n := count(t, me); n != 3 {
		t.Fatalf("three joined: %d workers", n)
	}
	if err := other.Leave(); err != nil {
		t.Fatal(err)
	}
	if n := count(t, me); n != 2 {
		t.Fatalf("one left: %d workers", n)
	}
	if err := child.Process.Signal(os.Kill); err != nil {
		t.Fatal(err)
	}
	_ = child.Wait()
	if n := count(t, me); n != 1 {
		t.Fatalf("the other killed: %d workers", n)
	}
	if len(mustGlob(t, filepath.Join(dir, "*"))) != 2 {
		t.Fatalf("want the killed worker's file kept until stale, mine present: %v", mustGlob(t, filepath.Join(dir, "*")))
	}
}

func mustGlob(t *testing.T, pat string) []string {
	t.Helper()
	m, err := filepath.Glob(pat)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// A worker's share of the provider limits grows when another worker's
// lock is released (its process killed): 1/2 of 6,000 RPM while both run,
// the whole once the other is gone and the lower count has held.
func TestShareGrowsWhenAWorkerIsKilled(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "workers")
	me, err := cluster.JoinDir(dir, "me")
	if err != nil {
		t.Fatal(err)
	}
	defer me.Leave()
	child := startWorker(t, dir)
	reg := ratelimit.NewRegistry(ratelimit.Options{Workers: 2})
	reg.Wrap("p", ratelimit.Limits{RPM: 6000, MaxInFlight: 48}, llm.ClientFunc(func(context.Context, llm.Request) (llm.Response, error) {
		return llm.Response{}, nil
	}))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		reg.FollowLive(ctx, me.Count, ratelimit.FollowOptions{Every: 10 * time.Millisecond, Settle: 50 * time.Millisecond})
	}()
	defer func() { cancel(); <-done }()
	share := func() ratelimit.Limits { st, _ := reg.PoolStats("p"); return st.Share }
	time.Sleep(100 * time.Millisecond)
	if s := share(); s.RPM != 3000 || s.MaxInFlight != 24 {
		t.Fatalf("both running: share %+v, want 3000 RPM, 24 in flight", s)
	}
	_ = child.Process.Signal(os.Kill)
	_ = child.Wait()
	deadline := time.Now().Add(10 * time.Second)
	for share().RPM != 6000 {
		if time.Now().After(deadline) {
			t.Fatalf("10 s after the other worker was killed: share %+v, want the whole 6000 RPM", share())
		}
		time.Sleep(10 * time.Millisecond)
	}
	if s := share(); s.MaxInFlight != 48 {
		t.Fatalf("alone: in-flight share %d, want 48", s.MaxInFlight)
	}
}

// TestCrowdedPresenceFolderIsRefused: a presence folder holding more
// entries than cluster.MaxPresenceEntries (of any name) is an input error
// naming the folder and the limit; at the bound the workers are counted.
func TestCrowdedPresenceFolderIsRefused(t *testing.T) {
	defer func(n int) { cluster.MaxPresenceEntries = n }(cluster.MaxPresenceEntries)
	cluster.MaxPresenceEntries = 3
	dir := filepath.Join(t.TempDir(), "workers")
	me, err := cluster.JoinDir(dir, "me")
	if err != nil {
		t.Fatal(err)
	}
	defer me.Leave()
	ents, _ := os.ReadDir(dir)
	for i := len(ents); i < 3; i++ {
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("n%d", i)), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if n := count(t, me); n != 1 {
		t.Fatalf("at the bound: %d workers", n)
	}
	if err := os.WriteFile(filepath.Join(dir, "one-more"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = me.Count(context.Background())
	if err == nil || fault.KindOf(err) != fault.Input || !strings.Contains(err.Error(), dir+" holds more than 3 entries") {
		t.Errorf("over the bound: err = %v, want an input error naming %s and the limit", err, dir)
	}
}
