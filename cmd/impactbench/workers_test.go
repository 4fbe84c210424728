package main

// Many workers on one study: shards of one benchmark running at once on
// one project directory, a duplicate worker on the same index, the shard
// lock's refusals, and workers that share only an object store (an S3 API
// in process on loopback) merged from that store.

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/impactbench/impactbench/internal/callstore/s3test"
)

// shardedOutputs are the files a merge must write byte-identical to one
// process's run of the benchmark (two targets ta and tb).
var shardedOutputs = []string{
	"results.json",
	"runs/ta/conversations.json", "runs/ta/scores.json", "runs/ta/cost.json",
	"runs/tb/conversations.json", "runs/tb/scores.json", "runs/tb/cost.json",
}

// sameOutputs fails unless every file of shardedOutputs is byte-identical
// in the two benchmark directories.
func sameOutputs(t *testing.T, want, got string) {
	t.Helper()
	for _, f := range shardedOutputs {
		a, b := readFile(t, filepath.Join(want, f)), readFile(t, filepath.Join(got, f))
		if !bytes.Equal(a, b) {
			t.Errorf("%s differs from one process's run (%d vs %d bytes): %s", f, len(a), len(b), firstDiff(a, b))
		}
	}
}

// firstDiff shows the first line where a and b differ.
func firstDiff(a, b []byte) string {
	la, lb := strings.Split(string(a), "\n"), strings.Split(string(b), "\n")
	for i := 0; i < len(la) && i < len(lb); i++ {
		if la[i] != lb[i] {
			return fmt.Sprintf("line %d: want %q, got %q", i+1, la[i], lb[i])
		}
	}
	return fmt.Sprintf("%d vs %d lines", len(la), len(lb))
}

// workersSetup is a fake provider, the reference run of one process on a
// fake of its own, and a fresh project (scenarios generated) on the first
// fake, for the workers.
func workersSetup(t *testing.T, extraConfig string) (f *fakeLLM, ref map[string]int, refProject, p *project) {
	t.Helper()
	// One fake for both, in one epoch (its answers carry the epoch), the
	// reference's requests counted apart: the targets' base URL is part of
	// results.json's fingerprint.
	f = newFakeLLM(t)
	opts := fakeOpts{targets: []string{"ta", "tb"}, simConc: 2, evalConc: 2, baseURL: f.baseURL()}
	ref, _, refProject = referenceRun(t, f, opts, 0)
	f.mu.Lock()
	f.reqs = nil
	f.mu.Unlock()
	p = newProject(t, fakeConfig(opts)+extraConfig)
	p.addBench("b", quickstartBench(t))
	p.mustRun("gen-scenarios", "b") // the generator is offline: no fake calls
	return f, ref, refProject, p
}

// holdAll holds every request until release is closed, counting those
// waiting.
func holdAll(f *fakeLLM) (waiting *atomic.Int64, release func()) {
	waiting = &atomic.Int64{}
	ch := make(chan struct{})
	f.setHook(func(r *fakeReq) hold {
		waiting.Add(1)
		return hold{until: ch}
	})
	var once atomic.Bool
	return waiting, func() {
		if once.CompareAndSwap(false, true) {
			close(ch)
		}
	}
}

// waitFor polls cond for up to 30 s.
func waitFor(t *testing.T, what string, cond func() bool, procs ...*bg) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			for _, p := range procs {
				_ = p.cmd.Process.Kill()
				t.Logf("%s", p.wait(t))
			}
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// withEnv runs fn with extra variables for the binaries it starts.
func (p *project) withEnv(env []string, fn func()) {
	old := p.env
	p.env = append(append([]string(nil), old...), env...)
	defer func() { p.env = old }()
	fn()
}

// TestShardsRunAtOnceOnOneDirectory: two shards of one benchmark run at
// the same time on one project directory (a read-write-many volume) —
// each holds its own lock and writes its own records and cost — and merge
// writes the files of one process's run byte for byte, having paid for
// every call once.
func TestShardsRunAtOnceOnOneDirectory(t *testing.T) {
	t.Parallel()
	f, ref, refProject, p := workersSetup(t, "")
	waiting, release := holdAll(f)
	defer release()
	a := p.start("run", "b", "--shard", "0/2")
	b := p.start("run", "b", "--shard", "1/2")
	// The provider's in-flight limit (2) is divided between the two
	// workers: one call each, so two held at once means both run.
	waitFor(t, "both shards' calls to be held", func() bool { return waiting.Load() >= 2 }, a, b)
	release()
	for _, w := range []*bg{a, b} {
		if r := w.wait(t); r.code != 0 {
			t.Fatalf("shard failed:\n%s", r)
		}
	}
	for _, name := range []string{"manifest.shard-0-of-2.json", "manifest.shard-1-of-2.json"} {
		if _, err := os.Stat(p.path(".cache", "b", name)); err != nil {
			t.Errorf("shard records: %v", err)
		}
	}
	p.mustRun("merge", "b")
	sameOutputs(t, refProject.benchDir("b"), p.benchDir("b"))
	extra, missing := sumMinusRef(ref, multiset(f.requests(0), answered), nil)
	if total(extra) > 0 || total(missing) > 0 {
		t.Errorf("the shards paid %d calls twice and missed %d of one process's run", total(extra), total(missing))
	}
}

// TestDuplicateWorkerWaitsForItsTwin: a second worker given the same
// index by the scheduler (Kubernetes may start a duplicate pod) waits for
// the first, then reuses what it stored: no call is paid twice.
func TestDuplicateWorkerWaitsForItsTwin(t *testing.T) {
	t.Parallel()
	f, ref, refProject, p := workersSetup(t, "")
	waiting, release := holdAll(f)
	defer release()
	var first, twin *bg
	p.withEnv([]string{"JOB_COMPLETION_INDEX=0", "IMPACTBENCH_SHARDS=2", "IMPACTBENCH_WORKERS=2"}, func() {
		first = p.start("run", "b")
		waitFor(t, "the first worker's calls", func() bool { return waiting.Load() > 0 })
		twin = p.start("run", "b")
	})
	time.Sleep(1500 * time.Millisecond) // the twin finds the shard held and waits
	release()
	r1, r2 := first.wait(t), twin.wait(t)
	if r1.code != 0 || r2.code != 0 {
		t.Fatalf("workers failed:\n%s\n%s", r1, r2)
	}
	if !strings.Contains(r2.stderr, "shard 0/2 is held by pid") || !strings.Contains(r2.stderr, "waiting") {
		t.Errorf("the twin did not say it waited for the holder:\n%s", r2.stderr)
	}
	if n := strings.Count(r2.stderr, "held by"); n != 1 {
		t.Errorf("the twin said %d times that it waits, want once:\n%s", n, r2.stderr)
	}
	if strings.Contains(r2.stderr, "not paid: 0 calls") {
		t.Errorf("the twin, which reused every row, reports zero calls replayed:\n%s", r2.stderr)
	}
	p.withEnv([]string{"JOB_COMPLETION_INDEX=1", "IMPACTBENCH_SHARDS=2"}, func() { p.mustRun("run", "b") })
	p.mustRun("merge", "b")
	sameOutputs(t, refProject.benchDir("b"), p.benchDir("b"))
	if extra, _ := sumMinusRef(ref, multiset(f.requests(0), answered), nil); total(extra) > 0 {
		t.Errorf("%d calls paid twice with a duplicate worker:\n%s", total(extra), describe(f.requests(0), extra))
	}
}

// TestShardLockRefusals: while shard 0/2 runs, a second --shard 0/2 typed
// by hand is refused naming the holder (host, pid, start, shard); a run of
// every row is refused naming the running shards; a worker of another
// split (4 shards) and a scheduler index that is not a number are exit 2
// before any call.
func TestShardLockRefusals(t *testing.T) {
	t.Parallel()
	f, _, _, p := workersSetup(t, "")
	waiting, release := holdAll(f)
	defer release()
	a := p.start("run", "b", "--shard", "0/2")
	// Its share of the provider's in-flight limit is one call: held.
	waitFor(t, "shard 0/2's calls", func() bool { return waiting.Load() >= 1 }, a)
	time.Sleep(200 * time.Millisecond)
	host, _ := os.Hostname()
	for _, tc := range []struct {
		args []string
		env  []string
		code int
		want []string
	}{
		{[]string{"run", "b", "--shard", "0/2"}, nil, 1,
			[]string{"shard 0/2 of benchmark b is being run by another impactbench process", "pid ", "host " + host, "started ", "label benchmark b shard 0/2"}},
		{[]string{"run", "b"}, nil, 1, []string{"benchmark b is being run", "shard 0/2: pid "}},
		{[]string{"run", "b", "--shard", "1/4"}, nil, 2, []string{"shard 0/2 of this benchmark is running", "one shard count"}},
		{[]string{"run", "b"}, []string{"JOB_COMPLETION_INDEX=x", "IMPACTBENCH_SHARDS=2"}, 2, []string{`JOB_COMPLETION_INDEX="x"`}},
		{[]string{"run", "b"}, []string{"SLURM_ARRAY_TASK_ID=7", "SLURM_ARRAY_TASK_COUNT=4"}, 2, []string{"SLURM_ARRAY_TASK_ID", "not below the shard count 4"}},
	} {
		before := f.count(0)
		var r result
		p.withEnv(tc.env, func() { r = p.run(tc.args...) })
		if r.code != tc.code {
			t.Errorf("%v %v: exit %d, want %d\n%s", tc.env, tc.args, r.code, tc.code, r)
		}
		for _, w := range tc.want {
			if !strings.Contains(r.stderr, w) {
				t.Errorf("%v %v: stderr lacks %q:\n%s", tc.env, tc.args, w, r.stderr)
			}
		}
		if n := f.count(0) - before; n > 0 {
			t.Errorf("%v: %d calls made by a refused worker", tc.args, n)
		}
	}
	release()
	if r := a.wait(t); r.code != 0 {
		t.Fatalf("shard 0/2:\n%s", r)
	}
}

// TestStoreAndRateBackendRefused: a store or rate backend that cannot be
// used is exit 2 naming the key or variable, before any call, with no file
// written or changed.
func TestStoreAndRateBackendRefused(t *testing.T) {
	t.Parallel()
	s3 := s3test.Start(t, "present")
	for _, tc := range []struct {
		name   string
		config string
		env    []string
		want   []string
	}{
		{"unknown scheme", "store: ftp://bucket/calls\n", nil, []string{"config.yaml:", "store", `unknown scheme "ftp"`}},
		{"no bucket in url", "store: s3:///calls\n", nil, []string{"store", "names no bucket"}},
		{"credentials in url", "store: s3://key:secret@bucket/calls\n", nil, []string{"store", "holds credentials"}},
		{"bad rate backend", "rate_backend: http://127.0.0.1:1/\n", nil, []string{"rate_backend", `unknown scheme "http"`}},
		{"store from env", "", []string{"IMPACTBENCH_STORE=gopher://x/y"}, []string{"IMPACTBENCH_STORE=", `unknown scheme "gopher"`}},
		{"rate backend down", "", []string{"IMPACTBENCH_RATE_BACKEND=redis://127.0.0.1:1/0"}, []string{"IMPACTBENCH_RATE_BACKEND", "does not answer"}},
		{"missing bucket", "", append(s3test.Env(t.TempDir()), "IMPACTBENCH_STORE="+s3.URL("absent", "calls")), []string{"IMPACTBENCH_STORE", "bucket does not exist"}},
		{"refused credentials", "", []string{"AWS_ACCESS_KEY_ID=AKIAWRONGWRONGWRONG1", "AWS_SECRET_ACCESS_KEY=x", "AWS_EC2_METADATA_DISABLED=true", "AWS_REGION=us-east-1",
			"IMPACTBENCH_STORE=" + s3.URL("present", "calls")}, []string{"IMPACTBENCH_STORE", "credentials refused"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := newFakeLLM(t)
			p := newProject(t, fakeConfig(fakeOpts{targets: []string{"ta"}, simConc: 2, evalConc: 2, baseURL: f.baseURL()})+tc.config)
			p.addBench("b", quickstartBench(t))
			before := snapshotTree(t, p.dir)
			var r result
			p.withEnv(tc.env, func() { r = p.run("run", "b") })
			if r.code != 2 {
				t.Fatalf("exit %d, want 2\n%s", r.code, r)
			}
			for _, w := range tc.want {
				if !strings.Contains(r.stderr, w) {
					t.Errorf("stderr lacks %q:\n%s", w, r.stderr)
				}
			}
			if strings.Contains(r.stderr, "secret") || strings.Contains(r.stderr, s3test.SecretKey) {
				t.Errorf("a secret reached stderr:\n%s", r.stderr)
			}
			if n := f.count(-1); n > 0 {
				t.Errorf("%d calls made", n)
			}
			if after := snapshotTree(t, p.dir); after != before {
				t.Errorf("files changed:\nbefore %s\nafter  %s", before, after)
			}
		})
	}
}

// snapshotTree describes every file under dir (path, size, bytes' hash).
func snapshotTree(t *testing.T, dir string) string {
	t.Helper()
	var b strings.Builder
	err := filepath.Walk(dir, func(path string, info os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		if info.IsDir() {
			fmt.Fprintf(&b, "%s/ ", rel)
			return nil
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		fmt.Fprintf(&b, "%s:%d:%x ", rel, len(data), hashOf(data))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return b.String()
}

func hashOf(b []byte) uint64 {
	var h uint64 = 14695981039346656037
	for _, c := range b {
		h = (h ^ uint64(c)) * 1099511628211
	}
	return h
}

// storePods is workersSetup's study for pods that share only an object
// store (the S3 API s3, in the test process): each call of pod is a project
// directory of its own holding the benchmark, its scenarios.json and the
// store's environment, plus env.
func storePods(t *testing.T) (s3 *s3test.Server, f *fakeLLM, ref map[string]int, refProject *project, pod func(env ...string) *project) {
	t.Helper()
	s3 = s3test.Start(t, "study")
	storeEnv := append(s3test.Env(t.TempDir()), "IMPACTBENCH_STORE="+s3.URL("study", "calls"))
	f, ref, refProject, p0 := workersSetup(t, "")
	benchmark := readFile(t, filepath.Join(p0.benchDir("b"), "benchmark.yaml"))
	scenarios := readFile(t, filepath.Join(p0.benchDir("b"), "scenarios.json"))
	config := readFile(t, p0.path("config.yaml"))
	pod = func(env ...string) *project {
		p := newProject(t, string(config))
		p.addBench("b", string(benchmark))
		p.write("benchmarks/b/scenarios.json", string(scenarios))
		p.env = append(append(p.env, storeEnv...), env...)
		return p
	}
	return s3, f, ref, refProject, pod
}

// TestObjectStoreWorkersMergeFromStore: workers that share only an object
// store (each with a project directory of its own, as pods with their own
// disks) run their shards at once — one killed by SIGKILL mid-run and run
// again — and a merge on a third machine, holding nothing but the project
// and its scenarios.json, assembles from the store the files of one
// process's run byte for byte, calling no model. Nothing is paid twice
// beyond the calls in flight at the kill.
func TestObjectStoreWorkersMergeFromStore(t *testing.T) {
	t.Parallel()
	s3, f, ref, refProject, pod := storePods(t)
	w0, w1, merger := pod(), pod(), pod()
	w0.env = append(w0.env, "JOB_COMPLETION_INDEX=0", "IMPACTBENCH_SHARDS=2")
	w1.env = append(w1.env, "JOB_COMPLETION_INDEX=1", "IMPACTBENCH_SHARDS=2")

	// Worker 0 runs alone until a quarter of the study's calls are
	// answered, and is killed there.
	var answeredN atomic.Int64
	var victim atomic.Pointer[bg]
	var killed atomic.Bool
	killAt := int64(total(ref) / 4)
	f.setHook(func(r *fakeReq) hold {
		if killed.Load() || answeredN.Add(1) < killAt {
			return hold{}
		}
		if killed.CompareAndSwap(false, true) {
			_ = victim.Load().cmd.Process.Kill()
		}
		return hold{drop: true}
	})
	victim.Store(w0.start("run", "b"))
	if r0 := victim.Load().wait(t); !killed.Load() || !killedBySIGKILL(r0.state) {
		t.Fatalf("worker 0 was not killed (state %v):\n%s", r0.state, r0)
	}
	f.setHook(nil)
	// The scheduler reruns index 0 while index 1 runs.
	again, other := w0.start("run", "b"), w1.start("run", "b")
	for _, w := range []*bg{again, other} {
		if r := w.wait(t); r.code != 0 {
			t.Fatalf("worker:\n%s", r)
		}
	}

	before := f.count(0)
	r := merger.mustRun("merge", "b", "--from-store")
	if n := f.count(0) - before; n != 0 {
		t.Errorf("merge --from-store made %d calls", n)
	}
	if !strings.Contains(r.stderr, "spent now: $0.0000 (0 calls") {
		t.Errorf("merge --from-store summary:\n%s", r.stderr)
	}
	sameOutputs(t, refProject.benchDir("b"), merger.benchDir("b"))
	extra, missing := sumMinusRef(ref, multiset(f.requests(0), answered), nil)
	const inFlight = 2*2*2 - 1 // worker 0's conversations and judgements in flight, 2 per target each, bar the dropped one
	if total(extra) > inFlight {
		t.Errorf("%d calls paid twice, more than the %d in flight at the kill:\n%s", total(extra), inFlight, describe(f.requests(0), extra))
	}
	if total(missing) > 0 {
		t.Errorf("%d calls of one process's run never made", total(missing))
	}
	t.Logf("reference %d calls; workers answered %d; paid twice %d", total(ref), total(multiset(f.requests(0), answered)), total(extra))

	// A merge from a store missing a shard's rows calls nothing and says
	// which worker to run again: of an empty store, that the call is not
	// stored (no worker left a lease to count the shards by).
	half := pod()
	half.env = append(half.env[:len(half.env)-1], "IMPACTBENCH_STORE="+s3.URL("study", "other"))
	r = half.run("merge", "b", "--from-store")
	if r.code != 2 || !strings.Contains(r.stderr, "not in the call store") {
		t.Errorf("merge --from-store of an empty store: want exit 2 saying the call is not stored\n%s", r)
	}

	// Only shard 1 of 2 ran into a third store: the merge names the index
	// to run again, and the count, from the leases the workers left.
	third := s3.URL("study", "third")
	w := pod()
	w.env = append(w.env[:len(w.env)-1], "IMPACTBENCH_STORE="+third, "JOB_COMPLETION_INDEX=1", "IMPACTBENCH_SHARDS=2")
	w.mustRun("run", "b")
	half = pod()
	half.env = append(half.env[:len(half.env)-1], "IMPACTBENCH_STORE="+third)
	r = half.run("merge", "b", "--from-store")
	if want := "shard(s) 0 of 2 have no outputs in the store: run index(es) 0 again (Slurm: sbatch --array=0 study.sbatch; Kubernetes, or by hand: the study's command with --shard <index>/2), then merge"; r.code != 2 || !strings.Contains(r.stderr, want) {
		t.Errorf("merge --from-store of a store without shard 0: want exit 2 saying\n%s\n%s", want, r)
	}
}
