package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// The kill tests prove the resume guarantee: a process killed by SIGKILL in
// the middle of simulation loses at most the calls in flight, and the next
// run finishes the job without paying again for anything that was answered.
//
// "Paid" is measured at the provider: every request the fake server answers
// is counted by the hash of its canonical body (epoch tags removed). A
// reference project runs the same benchmark uninterrupted against the same
// deterministic fake; its multiset of request hashes is exactly what one
// complete run costs. For the killed run and its resume together,
// answered(kill run) + answered(resume) must equal that multiset: a request
// answered before the kill and sent again shows up as one too many, a call
// skipped or an answer reused for the wrong row as one too few. (The hash
// leaves the seed out, so samples of one scenario legitimately hash their
// first requests alike: a multiset is needed, not a set.)

// sumMinusRef compares answered(run1)+answered(run2) with the reference
// multiset and returns the surplus (paid twice) and deficit (missing) per hash.
func sumMinusRef(ref, a1, a2 map[string]int) (extra, missing map[string]int) {
	extra, missing = map[string]int{}, map[string]int{}
	keys := map[string]bool{}
	for _, m := range []map[string]int{ref, a1, a2} {
		for k := range m {
			keys[k] = true
		}
	}
	for k := range keys {
		d := a1[k] + a2[k] - ref[k]
		if d > 0 {
			extra[k] = d
		} else if d < 0 {
			missing[k] = -d
		}
	}
	return extra, missing
}

func total(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}

// describe lists the requests of some hashes, for failure messages.
func describe(reqs []fakeReq, hashes map[string]int) string {
	var lines []string
	for _, r := range reqs {
		if hashes[r.Hash] > 0 {
			last := ""
			if len(r.Msgs) > 0 {
				last = r.Msgs[len(r.Msgs)-1].Content
				if len(last) > 60 {
					last = last[:60] + "…"
				}
			}
			lines = append(lines, fmt.Sprintf("  epoch %d #%d %s answered=%v msgs=%d last=%q", r.Epoch, r.N, r.Model, r.Answered, len(r.Msgs), last))
		}
	}
	sort.Strings(lines)
	if len(lines) > 30 {
		lines = append(lines[:30], fmt.Sprintf("  … %d more", len(lines)-30))
	}
	return strings.Join(lines, "\n")
}

// referenceRun runs the benchmark uninterrupted in its own project and
// returns the multiset of requests a complete run answers, and the number
// of simulation (non-judge) requests.
func referenceRun(t *testing.T, f *fakeLLM, opts fakeOpts, epoch int) (map[string]int, int, *project) {
	t.Helper()
	ref := newProject(t, fakeConfig(opts))
	ref.addBench("b", quickstartBench(t))
	f.setEpoch(epoch)
	ref.mustRun("run", "b")
	reqs := f.requests(epoch)
	sim := 0
	for _, r := range reqs {
		if !r.Answered {
			t.Fatalf("reference run: request %d was not answered", r.N)
		}
		if !isJudge(r) {
			sim++
		}
	}
	if sim < 40 {
		t.Fatalf("reference run made only %d simulation calls; the test needs more to kill mid-way", sim)
	}
	return multiset(reqs, nil), sim, ref
}

// TestKillMidSimulationResumesWithoutPayingTwice kills `impactbench
// simulate` with SIGKILL while the provider is answering a target call in
// the middle of a conversation (one target, one worker: exactly one call in
// flight), then finishes with `impactbench run`.
func TestKillMidSimulationResumesWithoutPayingTwice(t *testing.T) {
	t.Parallel()
	f := newFakeLLM(t)
	opts := fakeOpts{targets: []string{"ta"}, simConc: 1, evalConc: 4}
	opts.baseURL = f.baseURL()
	ref, refSim, refProj := referenceRun(t, f, opts, 0)

	p := newProject(t, fakeConfig(opts))
	p.addBench("b", quickstartBench(t))
	p.mustRun("gen-scenarios", "b") // offline generator: no provider call
	if n := f.count(1); n != 0 {
		t.Fatalf("gen-scenarios with the offline generator sent %d requests", n)
	}
	// Same offline generator, same seed: the same scenarios as the reference.
	if a, b := readFile(t, filepath.Join(p.benchDir("b"), "scenarios.json")), readFile(t, filepath.Join(refProj.benchDir("b"), "scenarios.json")); string(a) != string(b) {
		t.Fatal("scenarios.json differs from the reference project's: the offline generator is not deterministic")
	}

	// Run 1: kill at the first target call, from about half-way through the
	// simulation calls, that continues a conversation (its messages hold at
	// least one finished turn), before answering it.
	threshold := refSim / 2
	var victim atomic.Pointer[bg]
	started := make(chan struct{})
	var killed atomic.Bool
	var mu sync.Mutex
	var killedReq fakeReq
	f.setHook(func(r *fakeReq) hold {
		if r.Epoch != 1 {
			return hold{}
		}
		if killed.Load() {
			return hold{drop: true}
		}
		if r.N >= threshold && isTarget(*r) && len(r.Msgs) >= 3 {
			<-started
			killed.Store(true)
			mu.Lock()
			killedReq = *r
			mu.Unlock()
			if err := victim.Load().cmd.Process.Kill(); err != nil {
				t.Errorf("kill: %v", err)
			}
			return hold{drop: true}
		}
		return hold{}
	})
	f.setEpoch(1)
	victim.Store(p.start("simulate", "b", "ta"))
	close(started)
	r1 := victim.Load().wait(t)
	f.setHook(nil)
	mu.Lock()
	kr := killedReq
	mu.Unlock()
	if !killed.Load() {
		t.Fatalf("the run finished before the kill point (request %d):\n%s", threshold, r1)
	}
	if !killedBySIGKILL(r1.state) {
		t.Fatalf("run 1 was not killed by SIGKILL: %v\n%s", r1.state, r1)
	}
	if exists(filepath.Join(p.benchDir("b"), "runs", "ta", "conversations.json")) {
		t.Fatalf("conversations.json exists although simulation was killed half-way")
	}
	run1 := f.requests(1)
	unanswered := 0
	for _, r := range run1 {
		if !r.Answered {
			unanswered++
		}
	}
	if unanswered != 1 {
		t.Errorf("run 1: %d unanswered requests, want exactly 1 (one call in flight)", unanswered)
	}

	// Run 2: finish everything.
	f.setEpoch(2)
	r2 := p.run("run", "b")
	if r2.code != 0 {
		t.Fatalf("resume failed:\n%s", r2)
	}
	run2 := f.requests(2)
	for _, r := range run2 {
		if !r.Answered {
			t.Errorf("run 2: request %d (%s) not answered", r.N, r.Model)
		}
	}

	// (a) No call paid twice, none missing.
	a1 := multiset(run1, answered)
	a2 := multiset(run2, answered)
	extra, missing := sumMinusRef(ref, a1, a2)
	if len(extra) > 0 {
		t.Errorf("%d call(s) answered before the kill were paid again after it:\n%s", total(extra), describe(append(run1, run2...), extra))
	}
	if len(missing) > 0 {
		t.Errorf("%d call(s) of a complete run were never made (answers reused for other requests?):\n%s", total(missing), describe(f.requests(0), missing))
	}
	// The brief's literal criterion, for requests that occur once per run.
	for h, n := range a1 {
		if ref[h] == 1 && n == 1 && a2[h] > 0 {
			t.Errorf("request %s… answered in run 1 was sent again in run 2", h[:12])
		}
	}
	t.Logf("reference %d calls (%d simulation); run 1 answered %d and was killed at #%d, run 2 sent %d", total(ref), refSim, total(a1), kr.N, len(run2))

	// (b) Outputs complete and valid.
	s := quickstartSpec
	s.targets = []string{"ta"}
	convs := checkBenchmark(t, p.benchDir("b"), s)["ta"]

	// (c) The conversation cut by the kill was continued, not restarted:
	// its transcript starts with exactly the messages of the killed request
	// (all answered in run 1), and the answer to that request came in run 2.
	prefix := kr.Msgs
	for _, m := range prefix {
		if !strings.HasSuffix(m.Content, " [r1]") {
			t.Fatalf("killed request carries a message not answered in run 1: %q", m.Content)
		}
	}
	var continued []string
	mixed := 0
	for _, c := range convs {
		epochs := map[string]bool{}
		for _, m := range c.Transcript {
			if i := strings.LastIndex(m.Content, " [r"); i >= 0 {
				epochs[m.Content[i:]] = true
			}
		}
		if len(epochs) > 1 {
			mixed++
		}
		if len(c.Transcript) > len(prefix) && sameTurns(c.Transcript[:len(prefix)], prefix) &&
			strings.HasSuffix(c.Transcript[len(prefix)].Content, " [r2]") {
			continued = append(continued, c.ConvID)
		}
	}
	if len(continued) != 1 {
		t.Errorf("want exactly one conversation that starts with the %d messages answered before the kill and continues with answers from run 2; found %v", len(prefix), continued)
	}
	if mixed != 1 {
		t.Errorf("%d conversations mix turns of run 1 and run 2, want exactly 1 (the one in flight at the kill)", mixed)
	}

	// And a further run pays nothing.
	f.setEpoch(3)
	p.mustRun("run", "b")
	if n := f.count(3); n != 0 {
		t.Errorf("a run after completion sent %d requests", n)
	}
}

func sameTurns(a, b []turn) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestKillConcurrentRunResumes kills `impactbench run` (two targets, four
// simulate and four judge workers each: judges run alongside simulate) at
// request N, about half of the simulation calls. Calls in flight at the kill
// may have been answered but not yet stored, so up to (4+4)×2−1 of them may
// be paid again; nothing else may be.
func TestKillConcurrentRunResumes(t *testing.T) {
	t.Parallel()
	const workers = 4
	targets := []string{"ta", "tb"}
	f := newFakeLLM(t)
	opts := fakeOpts{targets: targets, simConc: workers, evalConc: workers}
	opts.baseURL = f.baseURL()
	ref, refSim, _ := referenceRun(t, f, opts, 0)

	p := newProject(t, fakeConfig(opts))
	p.addBench("b", quickstartBench(t))
	killAt := refSim / 2
	var victim atomic.Pointer[bg]
	started := make(chan struct{})
	var killed atomic.Bool
	f.setHook(func(r *fakeReq) hold {
		if r.Epoch != 1 {
			return hold{}
		}
		if killed.Load() {
			return hold{drop: true}
		}
		if r.N >= killAt {
			<-started
			if killed.CompareAndSwap(false, true) {
				if err := victim.Load().cmd.Process.Kill(); err != nil {
					t.Errorf("kill: %v", err)
				}
			}
			return hold{drop: true}
		}
		return hold{}
	})
	f.setEpoch(1)
	victim.Store(p.start("run", "b"))
	close(started)
	r1 := victim.Load().wait(t)
	f.setHook(nil)
	if !killed.Load() || !killedBySIGKILL(r1.state) {
		t.Fatalf("run 1 was not killed by SIGKILL at request %d (state %v):\n%s", killAt, r1.state, r1)
	}

	f.setEpoch(2)
	r2 := p.run("run", "b")
	if r2.code != 0 {
		t.Fatalf("resume failed:\n%s", r2)
	}
	run1, run2 := f.requests(1), f.requests(2)
	for _, r := range run2 {
		if !r.Answered {
			t.Errorf("run 2: request %d (%s) not answered", r.N, r.Model)
		}
	}
	extra, missing := sumMinusRef(ref, multiset(run1, answered), multiset(run2, answered))
	inFlight := 2*workers*len(targets) - 1
	if total(extra) > inFlight {
		t.Errorf("%d calls were paid twice, more than the %d that could have been in flight at the kill:\n%s",
			total(extra), inFlight, describe(append(run1, run2...), extra))
	}
	if len(missing) > 0 {
		t.Errorf("%d call(s) of a complete run were never made:\n%s", total(missing), describe(f.requests(0), missing))
	}
	t.Logf("reference %d calls; run 1 sent %d (killed at #%d), run 2 sent %d; paid twice: %d", total(ref), len(run1), killAt, len(run2), total(extra))

	s := quickstartSpec
	s.targets = targets
	checkBenchmark(t, p.benchDir("b"), s)
	if _, err := os.Stat(filepath.Join(p.benchDir("b"), "report.html")); err != nil {
		t.Errorf("report.html: %v", err)
	}
}

// killChainConfig is the quickstart on the deterministic offline models,
// two targets, with a small latency on every call and few workers, so that
// a run lasts about a second and a half and any moment of it is mid-way
// through something: generation, simulation, judging, the final writes.
var killChainConfig = offlineConfigOf{Run: "run:\n  concurrency: {simulate: 2, evaluate: 2}\n", Generator: true,
	Latency: "20ms", LatencyEverywhere: true, Careful: 0.9, Careless: 0.2}.yaml()

// killChainFiles are the final files of a run of killChainConfig.
var killChainFiles = []string{
	"scenarios.json", "cost.json", "results.json", "run_manifest.json", "report.html",
	"runs/careful/conversations.json", "runs/careful/scores.json", "runs/careful/cost.json",
	"runs/careless/conversations.json", "runs/careless/scores.json", "runs/careless/cost.json",
}

const (
	killChainKills = 30
	killChainSeed  = 11
)

// TestKillNineAtRandomPoints kills `impactbench run` with SIGKILL at
// seeded random moments (at least 30) and lets it finish: the final files
// must be byte-identical to an uninterrupted run's (report.html apart from
// its generation time), and right after every kill every output that
// exists must be whole (each JSON file parses, report.html ends with
// </html>).
//
// The kills form chains — run, kill, run again, kill, … until a run
// finishes — so that they cost about one run's work each plus restarts, and
// every chain's kill points span a whole run, start-up to final writes.
// Each run is killed after a seeded random delay in [0, R + 2D/30), R the
// least time of three reruns with nothing to do, D an uninterrupted run's:
// on average half a restart and a thirtieth of the run. Chains follow one
// another until 30 kills are done; each chain ends with a run that
// finishes, whose files are then compared.
func TestKillNineAtRandomPoints(t *testing.T) {
	t.Parallel()
	ref := newProject(t, killChainConfig)
	ref.addBench("qs", quickstartBench(t))
	start := time.Now()
	ref.mustRun("run", "qs")
	runTime := time.Since(start)
	restart := time.Duration(1<<63 - 1)
	for range 3 { // the least of three: one slow start on a busy machine would stretch every delay
		start = time.Now()
		ref.mustRun("run", "qs") // start-up, checks and the final writes, without work
		restart = min(restart, time.Since(start))
	}
	t.Logf("uninterrupted run %v, a rerun with nothing to do %v; seed %d", runTime.Round(time.Millisecond), restart.Round(time.Millisecond), killChainSeed)

	rng := rand.New(rand.NewPCG(killChainSeed, killChainSeed))
	span := int64(restart + 2*runTime/killChainKills)
	stages := map[string]int{}
	kills, chains := 0, 0
	for kills < killChainKills {
		chains++
		p := newProject(t, killChainConfig)
		p.addBench("qs", quickstartBench(t))
		chainKills := killChain(t, p, rng, span, 20*killChainKills, func() {
			stages[killStage(t, p.benchDir("qs"))]++
		}, "run", "qs")
		kills += chainKills
		// Atomic writes cut by a kill leave their temporary file behind;
		// harmless to results, but they pile up: say how many.
		temps, _ := filepath.Glob(filepath.Join(p.benchDir("qs"), ".*tmp*"))
		t.Logf("chain %d: finished after %d kills; %d temporary files of cut writes left in the benchmark directory", chains, chainKills, len(temps))
		sameFinalFiles(t, ref.benchDir("qs"), p.benchDir("qs"), killChainFiles)
	}
	t.Logf("%d kills in %d chain(s); what the files showed at the kills: %v", kills, chains, stages)
}

// killChain runs args in p again and again, each run SIGKILLed at a
// random point within span unless it finishes first, until one ends on
// its own; that one must succeed. afterKill checks the files after each
// kill. It returns how many kills the chain took.
func killChain(t *testing.T, p *project, rng *rand.Rand, span int64, maxKills int, afterKill func(), args ...string) int {
	t.Helper()
	for kills := 0; ; {
		if kills > maxKills {
			t.Fatalf("%v: still not finished after %d kills: the runs make no progress between kills", args, kills)
		}
		b := p.start(args...)
		select {
		case <-b.done:
		case <-time.After(time.Duration(rng.Int64N(span))):
			_ = b.cmd.Process.Kill()
		}
		r := b.wait(t)
		if killedBySIGKILL(r.state) {
			kills++
			afterKill()
			continue
		}
		if r.code != 0 {
			t.Fatalf("%v failed after %d kills:\n%s", args, kills, r)
		}
		return kills
	}
}

// killStage checks that every output under dir is whole and says how far
// the run had got by which outputs exist.
func killStage(t *testing.T, dir string) string {
	t.Helper()
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || strings.HasPrefix(d.Name(), ".") {
			return err // dot files: temporary files of atomic writes, partial by design
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		switch {
		case strings.HasSuffix(path, ".json"):
			if !json.Valid(b) {
				t.Errorf("after a kill, %s is not valid JSON (%d bytes)", path, len(b))
			}
		case strings.HasSuffix(path, ".html"):
			if !bytes.HasSuffix(bytes.TrimSpace(b), []byte("</html>")) {
				t.Errorf("after a kill, %s is cut short (%d bytes)", path, len(b))
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	has := func(rel string) bool { return exists(filepath.Join(dir, rel)) }
	switch {
	case !has("scenarios.json"):
		return "generating"
	case !has("runs/careful/scores.json") || !has("runs/careless/scores.json"):
		return "simulating and judging" // judges run alongside simulation
	case !has("results.json") || !has("report.html"):
		return "aggregating"
	default:
		return "finishing"
	}
}

// A study (`run all` over two benchmarks) killed with SIGKILL at seeded
// random points, and rerun each time, ends with every benchmark's files
// byte-identical to an uninterrupted study: the benchmarks' rows share one
// schedule, and each benchmark resumes from its own call store.
func TestKillNineStudyResumes(t *testing.T) {
	t.Parallel()
	const kills = 10
	newStudy := func() *project {
		p := newProject(t, killChainConfig)
		p.addBench("qs", quickstartBench(t))
		p.addBench("qt", strings.Replace(quickstartBench(t), "\nname: ", "\nname: Second ", 1))
		return p
	}
	ref := newStudy()
	start := time.Now()
	ref.mustRun("run", "all")
	runTime := time.Since(start)
	start = time.Now()
	ref.mustRun("run", "all") // a rerun with nothing to do
	span := int64(time.Since(start) + 2*runTime/kills)
	rng := rand.New(rand.NewPCG(killChainSeed+1, killChainSeed))
	total, chains := 0, 0
	for total < kills {
		chains++
		p := newStudy()
		n := killChain(t, p, rng, span, 20*kills, func() {
			killStage(t, p.benchDir("qs"))
			killStage(t, p.benchDir("qt"))
		}, "run", "all")
		total += n
		for _, b := range []string{"qs", "qt"} {
			sameFinalFiles(t, ref.benchDir(b), p.benchDir(b), killChainFiles)
		}
	}
	t.Logf("%d kills in %d chain(s)", total, chains)
}

// generatedStamp is the one line of report.html that differs between two
// identical runs: when it was generated.
var generatedStamp = regexp.MustCompile(`"generated":"[^"]*"`)

// sameFinalFiles fails unless every final file of got is byte-identical to
// want's (report.html: apart from its generation time).
func sameFinalFiles(t *testing.T, want, got string, files []string) {
	t.Helper()
	for _, rel := range files {
		a, b := readFile(t, filepath.Join(want, rel)), readFile(t, filepath.Join(got, rel))
		if rel == "report.html" {
			a = generatedStamp.ReplaceAll(a, []byte(`"generated":""`))
			b = generatedStamp.ReplaceAll(b, []byte(`"generated":""`))
		}
		if !bytes.Equal(a, b) {
			t.Errorf("%s differs from the uninterrupted run's (%d vs %d bytes)", rel, len(b), len(a))
		}
	}
}
