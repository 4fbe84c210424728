package main

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"
)

// TestDuplicateWorkerOnObjectStoreWaits: workers that share only an object
// store (each its own project directory, as pods with their own disks). A
// duplicate of index 0 (Kubernetes may start a second pod for an index)
// finds the shard's lease in the store held, waits for its twin, then
// reuses what it stored; a --shard 0/2 typed by hand meanwhile is
// refused naming the holder. Nothing is paid twice, and a merge from the
// store writes one process's files byte for byte.
func TestDuplicateWorkerOnObjectStoreWaits(t *testing.T) {
	t.Parallel()
	_, f, ref, refProject, pod := storePods(t)
	index0 := []string{"JOB_COMPLETION_INDEX=0", "IMPACTBENCH_SHARDS=2", "IMPACTBENCH_WORKERS=2"}
	w0, dup, byHand, w1, merger := pod(index0...), pod(index0...), pod(), pod("JOB_COMPLETION_INDEX=1", "IMPACTBENCH_SHARDS=2"), pod()

	waiting, release := holdAll(f)
	defer release()
	first := w0.start("run", "b")
	waitFor(t, "the first worker's calls", func() bool { return waiting.Load() > 0 }, first)
	twin := dup.start("run", "b")
	before := f.count(0)
	r := byHand.run("run", "b", "--shard", "0/2")
	host, _ := os.Hostname()
	for _, w := range []string{"shard 0/2 of benchmark b is being run by another impactbench process", "pid ", "host " + host, "label benchmark b shard 0/2"} {
		if r.code != 1 || !strings.Contains(r.stderr, w) {
			t.Errorf("--shard 0/2 by hand while a pod holds it: exit %d, want 1 and %q:\n%s", r.code, w, r.stderr)
		}
	}
	time.Sleep(1500 * time.Millisecond) // the twin finds the lease held and waits
	if n := f.count(0) - before; n > 0 {
		t.Errorf("%d calls made by the waiting duplicate or the refused worker while the twin held the shard", n)
	}
	release()
	r1, r2 := first.wait(t), twin.wait(t)
	if r1.code != 0 || r2.code != 0 {
		t.Fatalf("workers failed:\n%s\n%s", r1, r2)
	}
	if !strings.Contains(r2.stderr, fmt.Sprintf("shard 0/2 is held by pid %d", first.cmd.Process.Pid)) || !strings.Contains(r2.stderr, "waiting") {
		t.Errorf("the duplicate did not say it waited for its twin:\n%s", r2.stderr)
	}
	w1.mustRun("run", "b")
	merger.mustRun("merge", "b", "--from-store")
	sameOutputs(t, refProject.benchDir("b"), merger.benchDir("b"))
	if extra, _ := sumMinusRef(ref, multiset(f.requests(0), answered), nil); total(extra) > 0 {
		t.Errorf("%d calls paid twice with a duplicate worker on an object store:\n%s", total(extra), describe(f.requests(0), extra))
	}
}
