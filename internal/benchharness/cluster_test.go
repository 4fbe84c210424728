package benchharness

import (
	"bytes"
	"slices"
	"testing"
	"time"
)

// TestClusterSmall runs the cluster presets at a small size: real
// impactbench workers taking their index from the scheduler's variables on
// one shared directory and on an S3 store, with and without two of them
// killed and a duplicate started. The merged outputs must be the one
// process's byte for byte (a file may differ only in its attempt counts,
// and only when the workers were answered 429), every call of the
// reference must be made, and none paid twice but those in flight at the
// kill (in flight at the fake, or answered to a killed worker at most a
// second before it died: read, not yet stored), the duplicate waiting for
// its twin on one directory (the shard's lock file) and on S3 (the shard's
// lease in the store) alike. Not timed.
func TestClusterSmall(t *testing.T) {
	for _, tc := range []struct {
		store   string
		workers int
		kill    bool
	}{{StoreDir, 2, false}, {StoreS3, 2, false}, {StoreDir, 3, true}, {StoreS3, 3, true}} {
		name := tc.store
		if tc.kill {
			name += "-kill"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			o := Options{Cluster: tc.store, Workers: tc.workers, Indexes: 2 * tc.workers, Benchmarks: 2, Kill: tc.kill,
				Conversations: 36, Turns: 2, Latency: 10 * time.Millisecond, RPM: 6000, MaxInFlight: 48,
				MaxConcurrency: 48, Concurrency: -1, MaxRetries: 12, TargetTokens: 16}
			res := run(t, o)
			var text bytes.Buffer
			if err := res.WriteText(&text); err != nil {
				t.Fatal(err)
			}
			t.Logf("\n%s", text.String())
			checkCluster(t, res, o)
		})
	}
}

func checkCluster(t *testing.T, res *Result, o Options) {
	t.Helper()
	c := res.Cluster
	if res.ChildExitCode != 0 {
		t.Fatalf("a worker failed (exit %d): %s", res.ChildExitCode, res.ChildError)
	}
	// 2 benchmarks × 18 conversations × (2 turns × 2 + 1 verdict).
	if want := int64(36 * 5); c.Calls != want {
		t.Errorf("one process made %d calls, want %d", c.Calls, want)
	}
	if c.Compared.Files < 2*6 {
		t.Errorf("%d files compared, want every output of both benchmarks", c.Compared.Files)
	}
	for _, f := range c.Compared.Differ {
		if c.RateLimited == 0 || !slices.Contains(c.Compared.RequestsOnly, f) {
			t.Errorf("%s is not one process's byte for byte (%d 429s)", f, c.RateLimited)
		}
	}
	if c.Missing > 0 {
		t.Errorf("%d calls of one process's run never made", c.Missing)
	}
	allowed := int64(0)
	if o.Kill {
		k := c.Kill
		if k == nil || len(k.Killed) != 2 || k.Duplicate < 0 {
			t.Fatalf("the kill variant did not kill two workers and duplicate a third: %+v", k)
		}
		killed := 0
		for _, r := range c.Runs {
			if r.Killed {
				killed++
			}
		}
		if killed != 2 {
			t.Errorf("%d runs killed, want 2", killed)
		}
		allowed = int64(k.InFlightKilled)
		if k.InFlightKilled < 0 {
			allowed = int64(k.InFlightAll)
		}
		t.Logf("paid twice with a duplicate: %d (%+v); %d in flight at the kill", c.PaidTwice, c.Why, k.InFlightKilled)
	}
	if c.PaidTwice > allowed && c.Why.Other > 0 {
		t.Errorf("%d calls paid twice, more than the %d that were in flight, %d of them neither raced nor lost in a kill: %+v", c.PaidTwice, allowed, c.Why.Other, c.Why)
	}
	if got := c.Why.Raced + c.Why.Killed + c.Why.Other; got != c.PaidTwice {
		t.Errorf("paid twice %d, explained %d", c.PaidTwice, got)
	}
	if !o.Kill && o.Cluster == StoreDir && c.PaidTwice > 0 {
		t.Errorf("%d calls paid twice on one directory without a kill or a duplicate", c.PaidTwice)
	}
}
