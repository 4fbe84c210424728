package benchharness

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/impactbench/impactbench/internal/llm/ratelimit/fakeprovider"
)

// testBinary is the impactbench command built once for every test.
var testBinary string

// testHarness is impactbench-bench, built on first use (only the
// multi-worker tests run it) and then shared: each build links a full
// binary again.
var testHarness = struct {
	once sync.Once
	path string
	err  error
}{}

func harnessBinary(t *testing.T) string {
	t.Helper()
	testHarness.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		testHarness.path, testHarness.err = BuildHarness(ctx, filepath.Dir(testBinary))
	})
	if testHarness.err != nil {
		t.Fatal(testHarness.err)
	}
	return testHarness.path
}

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "benchharness-bin-*")
	if err != nil {
		panic(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	testBinary, err = BuildBinary(ctx, dir)
	cancel()
	if err != nil {
		os.RemoveAll(dir)
		panic(err)
	}
	code := m.Run()
	os.RemoveAll(dir)
	if code == 0 {
		code = leaked()
	}
	os.Exit(code)
}

func run(t testing.TB, o Options) *Result {
	t.Helper()
	o.Binary, o.Dir = testBinary, t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	res, err := Run(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// checkConsistent asserts what every correct run satisfies, whatever its speed.
func checkConsistent(t *testing.T, res *Result, o Options) {
	t.Helper()
	var text bytes.Buffer
	if err := res.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	t.Logf("\n%s", text.String())
	// Which build was measured is printed: a copied harness without
	// --binary measures a build of the current tree.
	if line := "binary        " + res.Options.Binary + "\n"; res.Options.Binary == "" || !strings.Contains(text.String(), line) {
		t.Errorf("the report does not name the measured binary (%q)", res.Options.Binary)
	}
	if res.ChildExitCode != 0 {
		t.Fatalf("child exited %d: %s", res.ChildExitCode, res.ChildError)
	}
	want := o.Conversations
	if res.Conversations != want || res.Completed != want || res.Failed != 0 || res.Scored != want {
		t.Errorf("conversations %d, completed %d, failed %d, scored %d; want %d completed and scored",
			res.Conversations, res.Completed, res.Failed, res.Scored, want)
	}
	// The fake answers every user turn, so no conversation ends early: every
	// conversation makes exactly 2T+1 successful calls (after the
	// generator's, with Pipeline).
	calls := int64(want * (2*o.Turns + 1))
	// The simulated user's opening is asked once per scenario and sample and
	// sent to every target (generation.independent_openings is off).
	if t := max(o.Targets, 1); t > 1 {
		calls -= int64(want - want/t)
	}
	if o.Pipeline {
		for _, n := range o.shape().genCalls() {
			calls += int64(n)
		}
	}
	if !res.ResultsWritten {
		t.Error("no results.json")
	}
	if res.Accepted != calls {
		t.Errorf("fake accepted %d calls, want %d", res.Accepted, calls)
	}
	if res.Requests != res.Accepted+res.RateLimited {
		t.Errorf("requests %d != accepted %d + 429s %d", res.Requests, res.Accepted, res.RateLimited)
	}
	if res.ToolRequests != res.Requests {
		t.Errorf("the tool counted %d requests, the fake %d", res.ToolRequests, res.Requests)
	}
	var poolReq int64
	for _, p := range res.Pools {
		poolReq += p.Requests
	}
	if poolReq != res.Requests {
		t.Errorf("pools add up to %d requests, total %d", poolReq, res.Requests)
	}
	if res.Requests > 0 && res.RateLimitedShare != float64(res.RateLimited)/float64(res.Requests) {
		t.Errorf("429 share %v, want %d/%d", res.RateLimitedShare, res.RateLimited, res.Requests)
	}
	if res.TMin <= 0 || res.Ratio <= 0 || res.Wall <= 0 {
		t.Errorf("T_min %v, ratio %v, wall %v: want all > 0", res.TMin, res.Ratio, res.Wall)
	}
	// Nothing beats the physical bound, except by the fake's initial burst:
	// its buckets start full, holding Burst's worth of refill.
	if res.Wall < 0.99*(res.TMin-o.Burst.Seconds()) {
		t.Errorf("wall %.3fs below T_min %.3fs: the bound or the fake is wrong", res.Wall, res.TMin)
	}
	if res.CPUPerCall <= 0 {
		t.Errorf("CPU per call %v, want > 0", res.CPUPerCall)
	}
	if res.PeakRSSMB <= 0 && strings.Contains("linux darwin freebsd", runtime.GOOS) {
		t.Errorf("peak RSS %v, want > 0", res.PeakRSSMB)
	}
	b, err := json.Marshal(res)
	if err != nil {
		t.Fatalf("result does not encode: %v", err)
	}
	var back Result
	if err := json.Unmarshal(b, &back); err != nil || back.Requests != res.Requests {
		t.Errorf("JSON round trip: %v, requests %d", err, back.Requests)
	}
}

func TestSmallPreset(t *testing.T) {
	o, err := Preset("small")
	if err != nil {
		t.Fatal(err)
	}
	res := run(t, o)
	checkConsistent(t, res, o.withDefaults())
	if res.RateLimited != 0 {
		t.Errorf("%d 429s without any limit", res.RateLimited)
	}
	if runtime.GOOS == "linux" && !(res.PeakPrivateMB > 0 && res.PeakPrivateMB < res.PeakRSSMB) {
		t.Errorf("peak private memory %.1f MB, peak RSS %.1f MB: want private above 0 and below RSS", res.PeakPrivateMB, res.PeakRSSMB)
	}
	// latency 5ms, 3 turns: 7 sequential calls.
	if want := 7 * 0.005; res.CriticalPath < want*0.999 || res.CriticalPath > want*1.001 {
		t.Errorf("critical path %v, want %v", res.CriticalPath, want)
	}
}

// A limit low enough to be hit: the tool must finish every conversation
// through 429s, learning the limit from the headers.
func TestRPMEnforcedSmall(t *testing.T) {
	// The user pool's bucket holds 10 requests (one second of 600 RPM); the
	// first wave, 8 conversations per target sent before any rate-limit
	// header has been seen, brings 16.
	o := Options{Conversations: 16, Turns: 2, Targets: 2, Latency: 5 * time.Millisecond,
		RPM: 600, Concurrency: 8, MaxRetries: 10}
	res := run(t, o)
	checkConsistent(t, res, o.withDefaults())
	if res.RateLimited == 0 {
		t.Errorf("no 429 at all: the test does not exercise the 429 path")
	}
	if !strings.HasPrefix(res.Binding, "requests") {
		t.Errorf("binding %q, want the request bound", res.Binding)
	}
}

// concurrency auto against a cap the tool cannot know (no headers, nothing
// configured, 429 above 6 calls in flight per model): every conversation
// finishes and the tool reports the limits it learned, at or near the cap.
func TestAutoFindsHiddenInFlightCapSmall(t *testing.T) {
	// Long enough for the limit to come down from where pools start (32,
	// five times the cap) one cut per round trip.
	o := Options{Conversations: 120, Turns: 2, Latency: 10 * time.Millisecond,
		MaxInFlight: 6, Concurrency: -1, MaxConcurrency: -1, MaxRetries: 10}
	res := run(t, o)
	checkConsistent(t, res, o.withDefaults())
	if res.SimulateConcurrency != 0 || res.MaxConcurrency != 0 {
		t.Errorf("run.concurrency or max_concurrency written: %+v", res)
	}
	if res.RateLimited == 0 {
		t.Errorf("no 429 at all: the tool never went past the cap, so nothing was learned")
	}
	if len(res.ToolLimits) != 3 {
		t.Fatalf("tool limits %+v, want the user, target and judge pools", res.ToolLimits)
	}
	for _, l := range res.ToolLimits {
		if l.MaxConcurrency != 256 || l.Concurrency < 1 {
			t.Errorf("pool %s: %+v", l.Pool, l)
		}
		// A pool that met the cap backed off to near it. The tool counts a
		// call from sending to parsing its answer, so on a loaded machine
		// its own count may sit above the server's.
		if l.RateLimited > 0 && (l.BackOffs == 0 || l.Concurrency > 2*o.MaxInFlight) {
			t.Errorf("pool %s saw %d 429s and ended at %d after %d back-offs, want ≤ %d", l.Pool, l.RateLimited, l.Concurrency, l.BackOffs, 2*o.MaxInFlight)
		}
	}
}

func TestPresets(t *testing.T) {
	for _, name := range Presets() {
		o, err := Preset(name)
		if err != nil {
			t.Fatal(err)
		}
		o = o.withDefaults()
		if o.Conversations <= 0 || o.Turns <= 0 {
			t.Errorf("%s: %+v", name, o)
		}
	}
	if _, err := Preset("nope"); err == nil {
		t.Error("unknown preset accepted")
	}
	if o, _ := Preset("memory"); o.withDefaults().Latency != 0 || !o.Offline {
		t.Errorf("memory preset: %+v", o.withDefaults())
	}
	// Issue 15's shape: 216 conversations × 6 turns, 64 in flight.
	if o, _ := Preset("pipeline"); o.withDefaults().Conversations != 216 || o.Turns != 6 || o.Concurrency != 64 || !o.Pipeline {
		t.Errorf("pipeline preset: %+v", o.withDefaults())
	}
}

// A whole run, generation included, on a small pipeline: every
// conversation is completed and scored, results.json is written, and the
// generator was asked exactly once per step and item (no regeneration, no
// correction, nothing the fake could not tell).
func TestPipelineSmall(t *testing.T) {
	o := Options{Pipeline: true, Metrics: 2, ScenariosPerMetric: 2, Demographics: []int{2}, Turns: 2,
		Latency: 5 * time.Millisecond, Concurrency: 64}
	res := run(t, o)
	o = o.withDefaults()
	checkConsistent(t, res, o)
	p := res.Pipeline
	if p == nil {
		t.Fatal("no pipeline result")
	}
	if res.Conversations != 8 || res.SimulateConcurrency != 64 || res.EvaluateConcurrency != 0 {
		t.Errorf("conversations %d, concurrency simulate %d evaluate %d; want 8, 64, 0 (auto)",
			res.Conversations, res.SimulateConcurrency, res.EvaluateConcurrency)
	}
	want := map[string]int{genMetrics: 1, genScenarios: 2, genRewrite: 8}
	for _, g := range p.Generator {
		if g.Expected != want[g.Kind] || g.Requests != int64(g.Expected) || g.Corrections != 0 {
			t.Errorf("%s: %d requests of %d expected, %d corrections; want %d, none", g.Kind, g.Requests, g.Expected, g.Corrections, want[g.Kind])
		}
	}
	if p.Unrecognised != 0 {
		t.Errorf("%d requests the fake could not tell: %s", p.Unrecognised, p.UnrecognisedError)
	}
	// The steps run in dependency order; simulation waits for its scenario.
	gm, gs, rw := p.Generator[0], p.Generator[1], p.Generator[2]
	if !(gm.LastRequest <= gs.FirstRequest && gs.FirstRequest <= rw.FirstRequest) {
		t.Errorf("generator windows out of order: %+v", p.Generator)
	}
	for _, pool := range res.Pools {
		if pool.Name == userModel && pool.FirstRequest < rw.FirstRequest {
			t.Errorf("simulation began at %vs, before the first rewrite at %vs", pool.FirstRequest, rw.FirstRequest)
		}
	}
	// 8 calls in a row of 5ms; 51 calls × 5ms over 8 conversations in flight.
	if p.Calls != 51 || p.InFlight != 8 || p.ChainCalls != 8 {
		t.Errorf("calls %d, in flight %d, chain %d; want 51, 8, 8", p.Calls, p.InFlight, p.ChainCalls)
	}
	if !near(res.CriticalPath, 0.040) || !near(p.CallBound, 0.031875) || res.Binding != "critical path" || res.TMin != res.CriticalPath {
		t.Errorf("critical path %v, call bound %v, T_min %v (%s); want 0.04, 0.031875, the critical path",
			res.CriticalPath, p.CallBound, res.TMin, res.Binding)
	}
	var text bytes.Buffer
	if err := res.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"calls × L / K = 51 × 5ms / 8", "gen_scenarios 2 of 2 (0 corrections)", "bench-generator"} {
		if !strings.Contains(text.String(), s) {
			t.Errorf("printed result lacks %q", s)
		}
	}
}

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-9+1e-6*math.Abs(b) }

// The bound's arithmetic, by hand.
func TestPipelineBound(t *testing.T) {
	ms := time.Millisecond
	same := func(l time.Duration) pipelineLatency { return pipelineLatency{l, l, l, l} }
	for _, tc := range []struct {
		name                string
		s                   pipelineShape
		lat                 pipelineLatency
		k                   int
		gen, conv, judge    int
		chain               int
		critical, callBound time.Duration
		floor, rounds       time.Duration
	}{
		// Issue 15: 1 + 6 + 216 generator calls, 216 × 12 turns, 216 verdicts
		// = 3,031 calls; 1 + 1 + 1 + 12 + 1 = 16 in a row.
		{"preset", pipelineShape{Metrics: 6, PerMetric: 9, Axes: []int{2, 2}, Turns: 6, Samples: 1, Targets: 1}, same(200 * ms), 64,
			223, 2592, 216, 16, 3200 * ms, 3031 * 200 * ms / 64, 600*ms + 2592*200*ms/64 + 200*ms,
			// 216 conversations, 64 at a time: 4 rounds of 12 calls.
			600*ms + 4*12*200*ms + 200*ms},
		{"test", pipelineShape{Metrics: 2, PerMetric: 2, Axes: []int{2}, Turns: 2, Samples: 1, Targets: 1}, same(5 * ms), 8,
			11, 32, 8, 8, 40 * ms, 31875 * time.Microsecond, 15*ms + 20*ms + 5*ms, 15*ms + 20*ms + 5*ms},
		// Samples and targets multiply the conversations, not the generation:
		// 1 metric × 1 base × 3 variants = 3 scenarios × 2 samples × 2 targets.
		// Critical path 3 × 400 + 1 × (100 + 300) + 50 = 1,650ms; work
		// 5 × 400 + 12 × 400 + 12 × 50 = 7,400ms over K = 4; floor 3 × 400 +
		// 12 × 400 / 4 + 50.
		{"roles", pipelineShape{Metrics: 1, PerMetric: 1, Axes: []int{3}, Turns: 1, Samples: 2, Targets: 2},
			pipelineLatency{Gen: 400 * ms, User: 100 * ms, Target: 300 * ms, Judge: 50 * ms}, 4,
			5, 24, 12, 6, 1650 * ms, 1850 * ms, 2450 * ms, 2450 * ms},
		{"no cap known", pipelineShape{Metrics: 1, PerMetric: 1, Axes: []int{1}, Turns: 1, Samples: 1, Targets: 1}, same(ms), 0,
			3, 2, 1, 6, 6 * ms, 0, 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := tc.s.bound(tc.lat, tc.k)
			if b.GenCalls != tc.gen || b.ConvCalls != tc.conv || b.JudgeCalls != tc.judge || b.ChainCalls != tc.chain {
				t.Errorf("calls gen %d, conversation %d, judge %d, chain %d; want %d, %d, %d, %d",
					b.GenCalls, b.ConvCalls, b.JudgeCalls, b.ChainCalls, tc.gen, tc.conv, tc.judge, tc.chain)
			}
			if b.CriticalPath != tc.critical || b.CallBound != tc.callBound || b.Floor != tc.floor || b.Rounds != tc.rounds {
				t.Errorf("critical path %v, calls × L / K %v, floor %v, rounds %v; want %v, %v, %v, %v",
					b.CriticalPath, b.CallBound, b.Floor, b.Rounds, tc.critical, tc.callBound, tc.floor, tc.rounds)
			}
		})
	}
}

// Which term binds: the larger of the critical path, calls × L / K, whole
// conversations K at a time (only with simulate set) and any pool's rate
// bound (fillFromFake's, already in the Result).
func TestPipelineBinding(t *testing.T) {
	o := Options{Pipeline: true, Metrics: 2, ScenariosPerMetric: 2, Demographics: []int{2}, Turns: 2,
		Latency: 5 * time.Millisecond}.withDefaults()
	f := newFakeServer(nil, fakeprovider.Config{}, false)
	for _, tc := range []struct {
		name     string
		sim      int
		prior    float64 // T_min from the pools, binding "requests (pool)"
		tmin     float64
		binding  string
		inFlight int
	}{
		// 8 calls of 5ms in a row; 51 calls × 5ms / K.
		{"critical path", 64, 0, 0.040, "critical path", 8},
		{"calls", 1, 0, 0.255, "calls × L / K", 1},
		// 8 conversations 5 at a time are 2 rounds of 4 calls: 3 + 8 + 1
		// calls of 5ms in a row (60ms) beat 51 × 5ms / 5 (51ms).
		{"whole conversations", 5, 0, 0.060, "whole conversations, K at a time", 5},
		{"auto", 0, 0, 0.040, "critical path", 8},
		{"pool", 1, 10, 10, "requests (pool)", 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// fillFromFake's conversation-only critical path: 5 calls.
			res := &Result{Conversations: o.Conversations, SimulateConcurrency: tc.sim, CriticalPath: 0.025,
				TMin: 0.025, Binding: "critical path"}
			if tc.prior > 0 {
				res.TMin, res.Binding = tc.prior, "requests (pool)"
			}
			fillPipeline(res, f, o)
			if !near(res.TMin, tc.tmin) || res.Binding != tc.binding || res.Pipeline.InFlight != tc.inFlight {
				t.Errorf("T_min %v (%s), K %d; want %v (%s), %d", res.TMin, res.Binding, res.Pipeline.InFlight, tc.tmin, tc.binding, tc.inFlight)
			}
		})
	}
}

func TestLayout(t *testing.T) {
	for _, tc := range []struct{ conv, samples, targets, scenarios int }{
		{40, 1, 1, 40}, {2000, 1, 1, 2000}, {100000, 1, 1, 100000}, {41, 2, 2, 11}, {1, 1, 1, 1},
	} {
		lay := planLayout(Options{Conversations: tc.conv, Samples: tc.samples, Targets: tc.targets})
		if lay.scenarios != tc.scenarios {
			t.Errorf("%+v: %d scenarios", tc, lay.scenarios)
		}
		per := (lay.scenarios + lay.metrics - 1) / lay.metrics
		if per > 999 || lay.metrics < 1 {
			t.Errorf("%+v: %d metrics, %d scenarios per metric", tc, lay.metrics, per)
		}
		scs := scenarios(lay, 6)
		seen := map[string]bool{}
		for _, s := range scs {
			if seen[s.ID] {
				t.Fatalf("duplicate id %s", s.ID)
			}
			seen[s.ID] = true
		}
	}
}

func BenchmarkHarnessSmall(b *testing.B) {
	o, _ := Preset("small")
	for b.Loop() {
		res := run(b, o)
		if res.ChildExitCode != 0 {
			b.Fatalf("child exited %d: %s", res.ChildExitCode, res.ChildError)
		}
		b.ReportMetric(res.Ratio, "wall/tmin")
		b.ReportMetric(res.CPUPerCall, "cpu-µs/call")
		b.ReportMetric(res.PeakRSSMB, "rss-MB")
	}
}

// The multi-worker benchmark, small: three worker processes share one
// fake limit (divided, or through a Redis the harness starts); every call
// is made, none fails, each worker reports its share of the limit.
func TestWorkersSmall(t *testing.T) {
	for _, share := range []string{ShareDivide, ShareRedis} {
		t.Run(share, func(t *testing.T) {
			if share == ShareRedis {
				if _, err := exec.LookPath("redis-server"); err != nil {
					t.Skip("redis-server is not installed (apt-get install -y redis-server): the Redis-shared workers are not tested")
				}
			}
			o := Options{Workers: 3, Share: share, Conversations: 30, Turns: 2, Latency: 5 * time.Millisecond, RPM: 3000, TargetTokens: 16,
				Harness: harnessBinary(t)}
			res := run(t, o)
			var text bytes.Buffer
			if err := res.WriteText(&text); err != nil {
				t.Fatal(err)
			}
			t.Logf("\n%s", text.String())
			if res.ChildExitCode != 0 || res.WorkerRun == nil || len(res.WorkerRun.Workers) != 3 {
				t.Fatalf("workers: exit %d (%s), %+v", res.ChildExitCode, res.ChildError, res.WorkerRun)
			}
			var calls int64
			for _, w := range res.WorkerRun.Workers {
				calls += w.Calls
				if w.Failed > 0 || w.Share.RPM != 3000*99/100/3 {
					t.Errorf("worker %d: %d failed, share %+v (want RPM %d: 0.99 × 3000 learned, a third)", w.Index, w.Failed, w.Share, 3000*99/100/3)
				}
			}
			if want := int64(30 * 5); calls != want || res.Accepted != want {
				t.Errorf("%d calls made, %d accepted by the fake, want %d", calls, res.Accepted, want)
			}
			if res.TMin <= 0 || res.Ratio <= 0 {
				t.Errorf("no bound: T_min %v, ratio %v", res.TMin, res.Ratio)
			}
		})
	}
}

func TestWorkerConversationsSplit(t *testing.T) {
	for _, tc := range []struct {
		n, k   int
		uneven bool
		want   []int
	}{
		{600, 4, false, []int{150, 150, 150, 150}},
		{10, 4, false, []int{3, 3, 2, 2}},
		{600, 4, true, []int{300, 100, 100, 100}},
		{7, 3, true, []int{4, 2, 1}},
		{5, 1, true, []int{5}},
	} {
		var got []int
		sum := 0
		for i := range tc.k {
			got = append(got, workerConversations(tc.n, i, tc.k, tc.uneven))
			sum += got[i]
		}
		if !slices.Equal(got, tc.want) || sum != tc.n {
			t.Errorf("%d over %d (uneven %v): %v, want %v", tc.n, tc.k, tc.uneven, got, tc.want)
		}
	}
}
