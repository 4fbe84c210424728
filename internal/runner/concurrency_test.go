package runner

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/impactbench/impactbench/internal/aggregate"
	"github.com/impactbench/impactbench/internal/config"
	"github.com/impactbench/impactbench/internal/summary"
)

// A real run through the provider limiter against a local server: with
// concurrency unset (auto) the simulate workers no longer cap the target's
// calls in flight at upstream's 10, a configured simulate still does, and
// the summary records each pool's learned limit.
func TestRunConcurrencyAutoAndCap(t *testing.T) {
	for _, tc := range []struct {
		name    string
		run     string // run: block of config.yaml
		atLeast int    // peak target calls in flight
		atMost  int
	}{
		{"auto", "", 11, 1 << 30},
		{"capped", "run: {concurrency: {simulate: 4}}\n", 1, 4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := &faultServer{t: t, seen: map[string]int{}, valid: map[string]int{}}
			var mu sync.Mutex
			inFlight, peak := 0, 0
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				raw, _ := io.ReadAll(r.Body)
				r.Body = io.NopCloser(bytes.NewReader(raw))
				var head struct{ Model string }
				_ = json.Unmarshal(raw, &head)
				if head.Model == "target" {
					mu.Lock()
					inFlight++
					peak = max(peak, inFlight)
					mu.Unlock()
					defer func() {
						mu.Lock()
						inFlight--
						mu.Unlock()
					}()
				}
				time.Sleep(50 * time.Millisecond) // calls overlap, however loaded the machine
				f.serve(w, r)
			}))
			defer srv.Close()
			f.srv = srv

			dir := t.TempDir()
			// Each model on a server of its own (one base_url each): a
			// limit pool per model.
			conf := tc.run + fmt.Sprintf(`user_model: {model: user, source: vllm, base_url: "%[1]s/user/v1"}
generator_model: {model: gen, source: vllm, base_url: "%[1]s/gen/v1"}
evaluator_model: {model: judge, source: vllm, base_url: "%[1]s/judge/v1"}
generation: {scenarios_per_metric: 12, turns: 2, num_samples: 2}
targets:
  - {id: t1, model: target, source: vllm, base_url: "%[1]s/target/v1"}
`, srv.URL)
			r := runFaultBench(t, dir, conf)
			mu.Lock()
			got := peak
			mu.Unlock()
			t.Logf("peak target calls in flight: %d", got)
			if got < tc.atLeast || got > tc.atMost {
				t.Errorf("peak target calls in flight %d, want %d..%d; limits %+v", got, tc.atLeast, tc.atMost, r.Report.Limits)
			}
			byPool := map[string]summary.PoolLimit{}
			for _, l := range r.Report.Limits {
				byPool[strings.TrimPrefix(l.Pool, strings.TrimPrefix(srv.URL, "http://"))] = l
			}
			for _, name := range []string{"gen", "user", "target", "judge"} {
				l, ok := byPool["/"+name+"/v1"]
				if !ok {
					t.Errorf("summary limits lack pool %q: %+v", name, r.Report.Limits)
					continue
				}
				if l.Calls == 0 || l.Concurrency < 1 || l.MaxConcurrency != 256 || l.PeakInFlight < 1 {
					t.Errorf("pool %s: %+v", name, l)
				}
			}
		})
	}
}

// The concurrency each provider pool ran at is in run_manifest.json next to
// the fingerprint (which compare still reads alone), and survives an
// invocation that called no provider.
func TestRunManifestRecordsLearnedConcurrency(t *testing.T) {
	ctx := t.Context()
	cfg, bench := project(t)
	for i := range cfg.Targets {
		cfg.Targets[i].MaxConcurrency = 3 // a limiter pool for the offline targets
	}
	r := newRunner(t, cfg, bench, Options{})
	if err := r.Run(ctx, r.Targets()); err != nil {
		t.Fatal(err)
	}
	r.Close()
	read := func() aggregate.RunManifest {
		t.Helper()
		var m aggregate.RunManifest
		b, err := os.ReadFile(filepath.Join(bench, "run_manifest.json"))
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatal(err)
		}
		return m
	}
	m := read()
	if m.Fingerprint.IsZero() || len(m.Concurrency) != len(cfg.Targets) {
		t.Fatalf("run_manifest.json: %+v, want the fingerprint and one pool per target", m)
	}
	for _, p := range m.Concurrency {
		if p.Calls == 0 || p.MaxConcurrency != 3 || p.Concurrency < 1 || p.Concurrency > 3 || p.PeakInFlight > 3 {
			t.Errorf("pool %+v: want calls, max_concurrency 3 and a limit and peak within it", p)
		}
	}
	r2 := newRunner(t, cfg, bench, Options{})
	if err := aggregate.Run(ctx, r2.Work()); err != nil {
		t.Fatal(err)
	}
	r2.Close()
	if again := read(); !reflect.DeepEqual(again, m) {
		t.Errorf("aggregate alone rewrote run_manifest.json as %+v, want the run's record %+v", again, m)
	}
}

// Models on one base_url are one server: they share one limit pool, which
// learns the server's limit for all of them together. The server here
// answers 429 above 6 calls in flight over every model; the run finishes,
// the summary shows one pool with every call, and the pool's limit comes
// down to what the server takes.
func TestModelsOnOneServerShareOnePool(t *testing.T) {
	const capacity = 6
	f := &faultServer{t: t, seen: map[string]int{}, valid: map[string]int{}}
	var mu sync.Mutex
	inFlight, served := 0, 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		inFlight++
		over := inFlight > capacity
		mu.Unlock()
		defer func() {
			mu.Lock()
			inFlight--
			mu.Unlock()
		}()
		if over {
			writeErr(w, 429, "rate_limit_exceeded", "", "too many requests in flight")
			return
		}
		time.Sleep(20 * time.Millisecond)
		mu.Lock()
		served++
		mu.Unlock()
		f.serve(w, r)
	}))
	defer srv.Close()
	f.srv = srv
	dir := t.TempDir()
	conf := fmt.Sprintf(`user_model: {model: user, source: vllm, base_url: %[1]q}
generator_model: {model: gen, source: vllm, base_url: %[1]q}
evaluator_model: {model: judge, source: vllm, base_url: %[1]q}
generation: {scenarios_per_metric: 12, turns: 2, num_samples: 2}
targets:
  - {id: t1, model: target, source: vllm, base_url: %[1]q}
`, srv.URL+"/v1")
	r := runFaultBench(t, dir, conf)
	if len(r.Report.Limits) != 1 {
		t.Fatalf("limits %+v, want one pool for the server", r.Report.Limits)
	}
	l := r.Report.Limits[0]
	mu.Lock()
	defer mu.Unlock()
	if want := strings.TrimPrefix(srv.URL, "http://") + "/v1"; l.Pool != want || int(l.Calls) < served || l.Concurrency > capacity+2 || l.RateLimited == 0 {
		t.Errorf("pool %+v, want %s with all %d calls, ending near the server's %d after its 429s", l, want, served, capacity)
	}
}

// runFaultBench runs the fault benchmark under conf in dir, to the end,
// and records the pools' limits.
func runFaultBench(t *testing.T, dir, conf string) *Runner {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, "config.yaml"), []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	bench := filepath.Join(dir, "benchmarks", "faults")
	if err := os.MkdirAll(bench, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(bench, "benchmark.yaml"), []byte(faultBench), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(filepath.Join(dir, "config.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	r, err := New(context.Background(), cfg, bench, Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	if err := r.Run(t.Context(), r.Targets()); err != nil {
		t.Fatal(err)
	}
	r.RecordLimits()
	return r
}
