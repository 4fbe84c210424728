package callstore

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/impactbench/impactbench/internal/callstore/s3test"
)

// TestLeaseHelperProcess is not a test: it is the holder of
// TestKilledHoldersLeaseIsTakenOver, started with LEASE_CHILD set. It
// takes the lease, says so, and renews it until killed.
func TestLeaseHelperProcess(t *testing.T) {
	if os.Getenv("LEASE_CHILD") == "" {
		t.Skip("helper process of the lease tests")
	}
	s, err := OpenURL(context.Background(), os.Getenv("CALLSTORE_URL"), Options{})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(3)
	}
	ttl, _ := time.ParseDuration(os.Getenv("LEASE_TTL"))
	if _, err := s.TakeLease(context.Background(), LeaseOptions{Name: "shard-1-of-4", Label: "child", TTL: ttl}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(4)
	}
	fmt.Println("held")
	select {}
}

// leaseStores opens n stores on one prefix of one server: n workers
// sharing an object store and nothing else.
func leaseStores(t *testing.T, n int) (*s3test.Server, []*Store) {
	t.Helper()
	srv := s3test.Start(t, "calls")
	s3test.SetEnv(t)
	var out []*Store
	for range n {
		out = append(out, openS3(t, srv, "study/bench", Options{}))
	}
	return srv, out
}

// A duplicate waits while its twin holds the lease and renews it — for
// 2.5 TTLs, so the renewals are what keep it waiting — and starts as
// soon as the twin releases it, long before the TTL.
func TestDuplicateWaitsForTheLease(t *testing.T) {
	_, st := leaseStores(t, 2)
	// A TTL long enough that a loaded machine renews well within it.
	const ttl = time.Second
	twin, err := st[0].TakeLease(t.Context(), LeaseOptions{Name: "shard-1-of-4", Label: "twin", TTL: ttl})
	if err != nil || twin == nil {
		t.Fatalf("first take: %v, %v", twin, err)
	}
	var told string
	got := make(chan error, 1)
	go func() {
		l, err := st[1].TakeLease(t.Context(), LeaseOptions{Name: "shard-1-of-4", TTL: ttl, Wait: true, Poll: 20 * time.Millisecond,
			Waiting: func(h string) { told = h }})
		if err == nil {
			err = l.Release(context.Background())
		}
		got <- err
	}()
	select {
	case err := <-got:
		t.Fatalf("the duplicate took a renewed lease after less than 2.5 TTLs: %v", err)
	case <-time.After(5 * ttl / 2):
	}
	released := time.Now()
	if err := twin.Release(t.Context()); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-got:
		if err != nil {
			t.Fatal(err)
		}
		if d := time.Since(released); d > ttl/2 {
			t.Errorf("the duplicate started %v after the release, want well within the TTL %v", d, ttl)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the duplicate never took the released lease")
	}
	if want := fmt.Sprintf("pid %d", os.Getpid()); !strings.Contains(told, want) || !strings.Contains(told, "label twin") {
		t.Errorf("the waiter was told the holder %q, want its pid and label", told)
	}
}

// A lease taken by hand (no wait) while held is refused naming the holder.
func TestHeldLeaseRefusedNamingHolder(t *testing.T) {
	_, st := leaseStores(t, 2)
	l, err := st[0].TakeLease(t.Context(), LeaseOptions{Name: "shard-0-of-2", Label: "benchmark b shard 0/2"})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Release(context.Background())
	_, err = st[1].TakeLease(t.Context(), LeaseOptions{Name: "shard-0-of-2"})
	var le *LeasedError
	host, _ := os.Hostname()
	if !errors.As(err, &le) || !strings.Contains(le.Holder, fmt.Sprintf("pid %d", os.Getpid())) || !strings.Contains(le.Holder, host) || !strings.Contains(le.Holder, "shard 0/2") {
		t.Fatalf("err = %v, want a LeasedError naming this process, host and shard", err)
	}
	// Another shard's lease is free.
	other, err := st[1].TakeLease(t.Context(), LeaseOptions{Name: "shard-1-of-2"})
	if err != nil {
		t.Fatal(err)
	}
	other.Release(context.Background())
}

// Eight takers of one free lease at once: exactly one wins.
func TestOneTakerWins(t *testing.T) {
	_, st := leaseStores(t, 8)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var won []*Lease
	refused := 0
	for _, s := range st {
		wg.Go(func() {
			l, err := s.TakeLease(t.Context(), LeaseOptions{Name: "shard-2-of-4"})
			mu.Lock()
			defer mu.Unlock()
			var le *LeasedError
			switch {
			case err == nil:
				won = append(won, l)
			case errors.As(err, &le):
				refused++
			default:
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if len(won) != 1 || refused != 7 {
		t.Fatalf("%d won and %d refused, want 1 and 7", len(won), refused)
	}
	won[0].Release(context.Background())
}

// A holder killed with SIGKILL never releases its lease. On this host (and
// PID namespace) its process is seen dead and the lease is taken at once,
// though its TTL is ten minutes; a holder elsewhere (no process to look
// at) is taken over once it has not renewed for a TTL.
func TestKilledHoldersLeaseIsTakenOver(t *testing.T) {
	srv, st := leaseStores(t, 1)
	cmd := exec.Command(os.Args[0], "-test.run=^TestLeaseHelperProcess$")
	cmd.Env = append(os.Environ(), "LEASE_CHILD=1", "LEASE_TTL=10m", "CALLSTORE_URL="+srv.URL("calls", "study/bench"))
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	if line, _ := bufio.NewReader(out).ReadString('\n'); line != "held\n" {
		_ = cmd.Process.Kill()
		t.Fatalf("child said %q", line)
	}
	if _, err := st[0].TakeLease(t.Context(), LeaseOptions{Name: "shard-1-of-4"}); err == nil {
		t.Fatal("the live child's lease was taken")
	}
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	start := time.Now()
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	l, err := st[0].TakeLease(ctx, LeaseOptions{Name: "shard-1-of-4", TTL: 10 * time.Minute, Wait: true})
	if err != nil {
		t.Fatalf("the dead holder's lease was not taken over: %v", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("the dead holder's lease took %v to take over", d)
	}
	l.Release(context.Background())

	// A holder on another host, and one of this host's name in another
	// PID namespace (a pod on the host's network) whose pid is not seen
	// here: renewed just now, then never again. Neither is judged by a
	// process; each is taken over after its TTL.
	host, _ := os.Hostname()
	for _, holder := range []struct{ who, local string }{
		{"pid 7, host node-9, started 2026-11-29T00:00:00Z, label gone", ""},
		{fmt.Sprintf("pid %d, host %s, started 2026-11-29T00:00:00Z, label other namespace", cmd.Process.Pid, host), "pid:[1] another-boot"},
	} {
		takeOverAfterTTL(t, st[0], holder.who, holder.local)
	}
}

// takeOverAfterTTL writes a held lease object for who, then checks it is
// refused at once and taken by a waiter only after about its TTL.
func takeOverAfterTTL(t *testing.T, s *Store, who, local string) {
	t.Helper()
	const ttl = 300 * time.Millisecond
	b, _ := json.Marshal(leaseBody{Kind: "held", Holder: who, Renewed: time.Now().UTC(), TTL: ttl.Seconds(), Local: local})
	lease := &Lease{bb: s.be.(*blobBackend), o: LeaseOptions{Name: "shard-1-of-4"}, dir: "study/bench/!lease/shard-1-of-4/"}
	seq, _, err := lease.latest(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if exists, err := lease.bb.create(t.Context(), lease.key(seq+1), b); err != nil || exists {
		t.Fatalf("writing %s's lease: %v %v", who, exists, err)
	}
	if _, err := s.TakeLease(t.Context(), LeaseOptions{Name: "shard-1-of-4", TTL: ttl}); err == nil {
		t.Fatalf("a fresh lease of %s was taken without waiting", who)
	}
	start := time.Now()
	l, err := s.TakeLease(t.Context(), LeaseOptions{Name: "shard-1-of-4", TTL: ttl, Wait: true, Poll: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d < ttl/2 {
		t.Errorf("%s's lease was taken over after %v, want about its TTL %v", who, d, ttl)
	}
	l.Release(context.Background())
}

// A holder that another worker took over (it had not renewed for a TTL)
// learns it at its next renewal: Lost is closed, and its Release leaves
// the new holder's lease alone. The new holder may have done more than
// create the next object by then: renewed it and pruned the objects
// before (the paused holder's own included), or released it — the next
// number is then free again, and creating it must not pass for a renewal.
func TestTakenOverHolderLearnsIt(t *testing.T) {
	for _, tc := range []struct {
		name string
		// taker's objects after the holder's last (next, next+1, …) and
		// whether it pruned the ones before its latest
		kinds []string
		prune bool
	}{
		{"taken over", []string{"held"}, false},
		{"taken over, renewed and pruned", []string{"held", "held", "held"}, true},
		{"taken over and released", []string{"held", "released"}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, st := leaseStores(t, 1)
			// Renewals every TTL/3 = 1 s: the taker's objects are all in
			// place before the holder's first renewal.
			const ttl = 3 * time.Second
			l, err := st[0].TakeLease(t.Context(), LeaseOptions{Name: "shard-3-of-4", TTL: ttl})
			if err != nil {
				t.Fatal(err)
			}
			l.mu.Lock()
			own := l.seq
			l.mu.Unlock()
			top := own
			for _, kind := range tc.kinds {
				top++
				b, _ := json.Marshal(leaseBody{Kind: kind, Holder: "pid 7, host node-9, started 2026-11-29T00:00:00Z", Renewed: time.Now().UTC(), TTL: ttl.Seconds(), Token: "node-9"})
				if exists, err := l.bb.create(t.Context(), l.key(top), b); err != nil || exists {
					t.Fatal(exists, err)
				}
			}
			if tc.prune {
				for seq := own; seq < top; seq++ {
					if err := l.bb.b.Delete(t.Context(), l.key(seq)); err != nil {
						t.Fatal(err)
					}
				}
			}
			select {
			case <-l.Lost():
			case <-time.After(10 * time.Second):
				t.Fatal("the holder never learned it lost the lease")
			}
			if err := l.Release(t.Context()); err != nil {
				t.Fatal(err)
			}
			seq, cur, err := l.latest(t.Context())
			if err != nil || seq != top || cur.Token != "node-9" {
				t.Errorf("after the loser's release the lease's latest is %d %+v (%v), want node-9's %d", seq, cur, err, top)
			}
			for s := own + 1; s < top; s++ {
				if _, b, _ := l.readBody(t.Context(), s); b.Token == l.token {
					t.Errorf("the loser created object %d after it was taken over", s)
				}
			}
		})
	}
}

// A store in a directory takes no lease: the project's file lock keeps
// duplicates apart there.
func TestDirectoryStoreTakesNoLease(t *testing.T) {
	l, err := OpenDir(t.TempDir(), Options{}).TakeLease(t.Context(), LeaseOptions{Name: "shard-0-of-2"})
	if l != nil || err != nil {
		t.Fatalf("got %v, %v; want nil, nil", l, err)
	}
	if l.Release(t.Context()) != nil || l.Lost() != nil {
		t.Error("a nil lease's Release or Lost did something")
	}
}

// Closing the store releases the leases taken through it (a run closes
// its store before its lock), so a waiting duplicate starts at once, not
// after the TTL; the holder's own Release after that is a no-op.
func TestStoreCloseReleasesItsLeases(t *testing.T) {
	srv, st := leaseStores(t, 1)
	holder, err := OpenURL(t.Context(), srv.URL("calls", "study/bench"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	l, err := holder.TakeLease(t.Context(), LeaseOptions{Name: "shard-0-of-2", TTL: 10 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if err := holder.Close(); err != nil {
		t.Fatal(err)
	}
	if err := l.Release(t.Context()); err != nil {
		t.Errorf("Release after the store closed: %v", err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	again, err := st[0].TakeLease(ctx, LeaseOptions{Name: "shard-0-of-2", TTL: 10 * time.Minute, Wait: true})
	if err != nil {
		t.Fatalf("the closed store's lease was not released: %v", err)
	}
	again.Release(context.Background())
}

// A lease released by a holder whose work is done (MarkFinished) lists as
// finished, whether the holder or the store's Close releases it; one
// released without (a worker stopped by SIGTERM before the end) as
// released only, and a held one as neither: a merge tells the three apart.
// A finished lease is free to take like a released one.
func TestFinishedLeaseListsAsFinished(t *testing.T) {
	srv, st := leaseStores(t, 1)
	holder, err := OpenURL(t.Context(), srv.URL("calls", "study/bench"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	take := func(name string) *Lease {
		l, err := holder.TakeLease(t.Context(), LeaseOptions{Name: name, TTL: 10 * time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	done, closed, stopped, held := take("shard-0-of-4"), take("shard-1-of-4"), take("shard-2-of-4"), take("shard-3-of-4")
	done.MarkFinished()
	if err := done.Release(t.Context()); err != nil {
		t.Fatal(err)
	}
	closed.MarkFinished() // released by the store's Close below
	if err := stopped.Release(t.Context()); err != nil {
		t.Fatal(err)
	}
	_ = held
	got, err := st[0].Leases(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	want := []LeaseState{
		{Name: "shard-0-of-4", Released: true, Finished: true},
		{Name: "shard-1-of-4"},
		{Name: "shard-2-of-4", Released: true},
		{Name: "shard-3-of-4"},
	}
	if !slices.Equal(got, want) {
		t.Errorf("leases while two are held:\n got %+v\nwant %+v", got, want)
	}
	if err := holder.Close(); err != nil {
		t.Fatal(err)
	}
	got, err = st[0].Leases(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	want[1] = LeaseState{Name: "shard-1-of-4", Released: true, Finished: true}
	want[3] = LeaseState{Name: "shard-3-of-4", Released: true}
	if !slices.Equal(got, want) {
		t.Errorf("leases after the store closed:\n got %+v\nwant %+v", got, want)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	again, err := st[0].TakeLease(ctx, LeaseOptions{Name: "shard-0-of-4", TTL: 10 * time.Minute})
	if err != nil {
		t.Fatalf("a finished lease could not be taken: %v", err)
	}
	again.Release(context.Background())
}

// A renewal whose create reached the store but whose answer was lost
// (a timeout, then a retry that finds the object there) is the holder's
// own, known by its token: the lease is not lost.
func TestRenewalFindingItsOwnObjectKeepsTheLease(t *testing.T) {
	_, st := leaseStores(t, 1)
	const ttl = 300 * time.Millisecond
	l, err := st[0].TakeLease(t.Context(), LeaseOptions{Name: "shard-0-of-2", TTL: ttl})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Release(context.Background())
	l.mu.Lock()
	next := l.seq + 1
	l.mu.Unlock()
	b, _ := json.Marshal(leaseBody{Kind: "held", Holder: l.me, Renewed: time.Now().UTC(), TTL: ttl.Seconds(), Local: localIdentity(), Token: l.token})
	if exists, err := l.bb.create(t.Context(), l.key(next), b); err != nil || exists {
		t.Fatal(exists, err)
	}
	select {
	case <-l.Lost():
		t.Fatal("the holder took its own renewal for another's")
	case <-time.After(3 * ttl):
	}
	if seq, cur, err := l.latest(t.Context()); err != nil || seq <= next || cur.Token != l.token {
		t.Errorf("latest %d (%+v, %v), want the holder renewing past %d", seq, cur, err, next)
	}
}

// A lease object over maxObject is not read whole: like a damaged one it
// reads as released, so it blocks no one (a holder's object is a few
// hundred bytes).
func TestOversizedLeaseObjectReadsAsReleased(t *testing.T) {
	_, st := leaseStores(t, 2)
	l, err := st[0].TakeLease(t.Context(), LeaseOptions{Name: "shard-0-of-2", TTL: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Release(context.Background())
	old := maxObject
	maxObject = 16
	t.Cleanup(func() { maxObject = old })
	l2, err := st[1].TakeLease(t.Context(), LeaseOptions{Name: "shard-0-of-2", TTL: time.Hour})
	if err != nil {
		t.Fatalf("an oversized lease object: %v, want it read as released", err)
	}
	l2.Release(context.Background())
}
