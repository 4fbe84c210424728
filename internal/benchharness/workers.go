package benchharness

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/impactbench/impactbench/internal/config"
	"github.com/impactbench/impactbench/internal/llm"
	"github.com/impactbench/impactbench/internal/llm/provider"
	"github.com/impactbench/impactbench/internal/llm/ratelimit"
	"github.com/impactbench/impactbench/internal/llm/ratelimit/fakeprovider"
	"github.com/impactbench/impactbench/internal/llm/ratelimit/redisrate"
	"github.com/impactbench/impactbench/internal/redisserver"
)

// How Options.Workers processes share the fake's one limit (Options.Share).
const (
	// ShareNone: every worker takes the whole limit, configured or
	// learned, as every process did before Workers existed.
	ShareNone = "none"
	// ShareDivide: ratelimit.Options.Workers = N, each takes 1/N.
	ShareDivide = "divide"
	// ShareRedis: the request and token buckets in a private redis-server
	// the harness starts (redisrate), concurrency divided by N.
	ShareRedis = "redis"
)

// workerModel is the one model every worker calls: one limit pool at the
// fake, shared by all of them, as one API key's limit is.
const workerModel = "bench-worker"

// workerSpec is what a worker process is told (a JSON file; --worker-child).
type workerSpec struct {
	Index, Count int
	BaseURL      string
	// Conversations of Turns × 2 + 1 sequential calls, this worker's
	// share of them: conversation c is worker c mod Count's.
	Conversations, Turns int
	Callers              int // conversations at once
	Uneven               bool
	Share                string
	RedisURL             string
	Limits               ratelimit.Limits // configured; zero: learned / auto
}

// WorkerReport is what a worker process prints on stdout.
type WorkerReport struct {
	Index        int              `json:"index"`
	Calls        int64            `json:"calls"`
	Failed       int64            `json:"failed"`
	Wall         float64          `json:"wall_s"`
	Concurrency  int              `json:"concurrency"`
	PeakInFlight int              `json:"peak_in_flight"`
	BackOffs     int64            `json:"back_offs"`
	RateLimited  int64            `json:"rate_limited"`
	SharedDown   bool             `json:"shared_down,omitempty"`
	SharedFails  int64            `json:"shared_failures,omitempty"`
	Share        ratelimit.Limits `json:"share"`
}

// workerConversations is how many of n conversations worker i of k runs:
// an even split, or with uneven worker 0 half of them and the others the
// rest evenly (shards that finish at different times).
func workerConversations(n, i, k int, uneven bool) int {
	if !uneven || k == 1 {
		return (n - i + k - 1) / k
	}
	if i == 0 {
		return n - n/2
	}
	return workerConversations(n/2, i-1, k-1, false)
}

// RunWorkerChild is a worker process of the multi-worker benchmark: it
// reads its spec, drives its conversations through the real limiter and
// the OpenAI-compatible adapter against the fake, and writes a
// WorkerReport to stdout.
func RunWorkerChild(ctx context.Context, specPath string, stdout io.Writer) error {
	b, err := os.ReadFile(specPath)
	if err != nil {
		return err
	}
	var sp workerSpec
	if err := json.Unmarshal(b, &sp); err != nil {
		return fmt.Errorf("benchharness: worker spec %s: %w", specPath, err)
	}
	// The runner's settings (internal/runner: LearnFraction 0.99).
	opts := ratelimit.Options{LearnFraction: 0.99}
	if sp.Share != ShareNone {
		opts.Workers = sp.Count
	}
	if sp.Share == ShareRedis {
		rb, err := redisrate.Open(ctx, sp.RedisURL)
		if err != nil {
			return err
		}
		defer rb.Close()
		opts.Shared = rb
	}
	reg := ratelimit.NewRegistry(opts)
	m := config.ModelConfig{Source: "vllm", BaseURL: sp.BaseURL, Model: workerModel, MaxRetries: 12}
	key := workerPoolKey(m)
	c, err := provider.New(m, provider.Options{Wrap: func(inner llm.Client) llm.Client { return reg.Wrap(key, sp.Limits, inner) }})
	if err != nil {
		return err
	}
	start := time.Now()
	ok, failed := driveConversations(ctx, c, workerConversations(sp.Conversations, sp.Index, sp.Count, sp.Uneven), sp.Turns, sp.Callers)
	st, _ := reg.PoolStats(key)
	return json.NewEncoder(stdout).Encode(WorkerReport{
		Index: sp.Index, Calls: ok, Failed: failed, Wall: time.Since(start).Seconds(),
		Concurrency: st.Concurrency, PeakInFlight: st.PeakInFlight, BackOffs: st.BackOffs, RateLimited: st.RateLimited,
		SharedDown: st.SharedDown, SharedFails: st.SharedFailures, Share: st.Share,
	})
}

// workerPoolKey is the runner's pool key for a model on a base_url
// (provider, url, a hash of the empty API key).
func workerPoolKey(m config.ModelConfig) string {
	h := sha256.Sum256([]byte(m.APIKey))
	return m.Provider() + "|url:" + m.BaseURL + "|" + hex.EncodeToString(h[:4])
}

// driveConversations runs n conversations of turns × 2 + 1 sequential
// calls, callers at a time, each call's prompt growing with the turn.
func driveConversations(ctx context.Context, c llm.Client, n, turns, callers int) (ok, failed int64) {
	next := make(chan int)
	go func() {
		defer close(next)
		for i := range n {
			select {
			case next <- i:
			case <-ctx.Done():
				return
			}
		}
	}()
	var mu sync.Mutex
	var wg sync.WaitGroup
	for range min(callers, n) {
		wg.Go(func() {
			for conv := range next {
				o, f := conversation(ctx, c, conv, turns)
				mu.Lock()
				ok, failed = ok+o, failed+f
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return ok, failed
}

func conversation(ctx context.Context, c llm.Client, conv, turns int) (ok, failed int64) {
	msgs := []llm.Message{{Role: llm.RoleSystem, Content: fmt.Sprintf("Conversation %d of the multi-worker benchmark.", conv)}}
	for call := range 2*turns + 1 {
		msgs = append(msgs, llm.Message{Role: llm.RoleUser, Content: fmt.Sprintf("Call %d.", call)})
		resp, err := c.Complete(ctx, llm.Request{Messages: msgs, MaxTokens: 256})
		if err != nil {
			failed++
			continue
		}
		ok++
		msgs = append(msgs, llm.Message{Role: llm.RoleAssistant, Content: resp.Text})
	}
	return ok, failed
}

// WorkersResult is a multi-worker run: one row per worker next to the
// fake's counts and the bound of the one shared limit.
type WorkersResult struct {
	Workers []WorkerReport `json:"workers"`
	Exits   []WorkerExit   `json:"exits"`
	// RedisRestarted is set when Options.RestartRedisAfter restarted it.
	RedisRestarted bool `json:"redis_restarted,omitempty"`
}

// runWorkers is Run for Options.Workers > 0: the fake's one pool (RPM,
// in-flight cap) shared by Workers processes launched at once.
func runWorkers(ctx context.Context, o Options, res *Result, dir string) error {
	switch o.Share {
	case ShareNone, ShareDivide, ShareRedis:
	default:
		return fmt.Errorf("benchharness: share %q (want %s, %s or %s)", o.Share, ShareNone, ShareDivide, ShareRedis)
	}
	// The workers are the harness's own processes (they drive the limiter
	// directly): this executable when it is impactbench-bench, else built.
	bin := o.Harness
	if bin == "" {
		var err error
		if bin, err = BuildHarness(ctx, dir); err != nil {
			return err
		}
	}
	fake := newFakeServer([]modelSpec{{workerModel, roleTarget, o.TargetTokens}}, fakeprovider.Config{
		RPM: o.RPM, TPM: o.TPM, MaxInFlight: o.MaxInFlight, Burst: o.Burst, HideLimits: o.HideLimits,
		Latency: o.Latency, PerOutputToken: o.PerOutputToken, OutputTokens: o.TargetTokens,
	}, false)
	srv := httptest.NewServer(fake)
	defer srv.Close()
	sp := workerSpec{Count: o.Workers, BaseURL: srv.URL + "/" + workerModel + "/v1", Conversations: o.Conversations,
		Turns: o.Turns, Callers: o.Callers, Share: o.Share, Uneven: o.Uneven}
	if o.ConfigureLimits {
		sp.Limits = ratelimit.Limits{RPM: o.RPM, TPM: o.TPM, MaxInFlight: o.MaxInFlight}
	}
	var redis *redisserver.Server
	if o.Share == ShareRedis {
		rdir := filepath.Join(dir, "redis")
		if err := os.MkdirAll(rdir, 0o700); err != nil {
			return err
		}
		var err error
		if redis, err = redisserver.Start(ctx, rdir); err != nil {
			return err
		}
		defer redis.Stop()
		sp.RedisURL = redis.URL()
	}
	res.WorkerRun = &WorkersResult{}
	stopRestart := restartRedisAfter(ctx, redis, o.RestartRedisAfter, res.WorkerRun)
	exits, err := LaunchWorkers(ctx, o.Workers, func(i, n int) *exec.Cmd {
		s := sp
		s.Index = i
		path := filepath.Join(dir, fmt.Sprintf("worker-%d.json", i))
		b, _ := json.Marshal(s)
		_ = os.WriteFile(path, b, 0o600)
		return exec.CommandContext(ctx, bin, "--worker-child", path)
	})
	stopRestart()
	if err != nil {
		return err
	}
	collectWorkers(res, exits)
	fillWorkerBound(res, fake, o)
	return nil
}

// restartRedisAfter kills the harness's redis-server d into the run and
// starts it again, empty, on the same port a second later (d 0: never).
func restartRedisAfter(ctx context.Context, s *redisserver.Server, d time.Duration, wr *WorkersResult) (stop func()) {
	if s == nil || d <= 0 {
		return func() {}
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		select {
		case <-time.After(d):
		case <-done:
			return
		}
		s.Stop()
		time.Sleep(time.Second)
		if err := s.Restart(ctx); err == nil {
			wr.RedisRestarted = true
		}
	})
	return func() { close(done); wg.Wait() }
}

// collectWorkers reads each worker's report and sums what they did.
func collectWorkers(res *Result, exits []WorkerExit) {
	res.WorkerRun.Exits = exits
	var cpu, sys time.Duration
	for _, e := range exits {
		cpu, sys = cpu+e.User, sys+e.Sys
		res.Wall = max(res.Wall, e.Wall.Seconds())
		res.PeakRSSMB = max(res.PeakRSSMB, e.MaxRSSMB)
		var r WorkerReport
		if err := json.Unmarshal(e.Stdout, &r); err != nil {
			res.Failed++
			if e.ExitCode != 0 && res.ChildExitCode == 0 {
				res.ChildExitCode, res.ChildError = e.ExitCode, fmt.Sprintf("worker %d: %s", e.Index, e.StderrTail)
			}
			continue
		}
		res.WorkerRun.Workers = append(res.WorkerRun.Workers, r)
		res.ToolRequests += r.Calls + r.Failed
		if r.Failed > 0 {
			res.Failed++
		}
	}
	res.ChildUser, res.ChildSys = cpu.Seconds(), sys.Seconds()
	res.Cores = runtime.GOMAXPROCS(0)
}

// fillWorkerBound takes the fake's counts and the bound of its one pool:
// max(calls / RPM, calls × latency / in-flight cap, one conversation).
func fillWorkerBound(res *Result, f *fakeServer, o Options) {
	res.Conversations = o.Conversations
	fillFromFake(res, f, Options{Turns: o.Turns, RPM: o.RPM, TPM: o.TPM, MaxInFlight: o.MaxInFlight,
		Latency: o.Latency, PerOutputToken: o.PerOutputToken, UserTokens: o.TargetTokens, TargetTokens: o.TargetTokens, JudgeTokens: o.TargetTokens})
	if res.Requests > 0 {
		res.RateLimitedShare = float64(res.RateLimited) / float64(res.Requests)
		res.CPUPerCall = (res.ChildUser + res.ChildSys) / float64(res.Requests) * 1e6
	}
	res.CPUBound = (res.ChildUser + res.ChildSys) / float64(res.Cores)
	if res.RequestsAfter1m > 0 {
		res.ShareAfter1m = float64(res.RateLimitedAfter1m) / float64(res.RequestsAfter1m)
	}
	if res.TMin > 0 {
		res.Ratio = res.Wall / res.TMin
	}
	res.Completed = int(res.Accepted)
}

func workersText(b *strings.Builder, r *Result) {
	o := r.Options
	split := "evenly"
	if o.Uneven {
		split = "half to worker 0"
	}
	fmt.Fprintf(b, "workers       %d processes, limit shared by %s; %d conversations × (%d turns × 2 + 1) calls, %s\n",
		o.Workers, o.Share, o.Conversations, o.Turns, split)
	for _, w := range r.WorkerRun.Workers {
		fmt.Fprintf(b, "  worker %-2d   %6d calls %4d failed in %s; limit %d (peak %d, %d back-offs, %d 429s); share %+v",
			w.Index, w.Calls, w.Failed, secs(w.Wall), w.Concurrency, w.PeakInFlight, w.BackOffs, w.RateLimited, w.Share)
		if w.SharedFails > 0 {
			fmt.Fprintf(b, "; Redis failed %d times (down at the end: %v)", w.SharedFails, w.SharedDown)
		}
		b.WriteString("\n")
	}
	if r.WorkerRun.RedisRestarted {
		b.WriteString("redis         killed and restarted empty during the run\n")
	}
}
