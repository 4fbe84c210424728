package callstore

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/impactbench/impactbench/internal/callstore/s3test"
	"github.com/impactbench/impactbench/internal/llm"
)

// backends opens stores of each kind; each call of the returned function
// is a new writer (as another process would be) on the same store.
func backends(t *testing.T) map[string]func(o Options) *Store {
	t.Helper()
	dir := t.TempDir()
	srv := s3test.Start(t, "calls")
	s3test.SetEnv(t)
	open := func(raw string) func(o Options) *Store {
		return func(o Options) *Store {
			s, err := OpenURL(context.Background(), raw, o)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Close() })
			return s
		}
	}
	return map[string]func(o Options) *Store{
		"local": open(dir),
		"s3":    open(srv.URL("calls", "study/bench")),
	}
}

// TestBackendsReplayForceAndList: on both stores a unit's calls replay
// after a reopen for free, force pays again and hides what came before,
// and the listing counts done and running units.
func TestBackendsReplayForceAndList(t *testing.T) {
	for name, open := range backends(t) {
		t.Run(name, func(t *testing.T) {
			inner := &counting{}
			u, err := open(Options{}).Unit("t/sim/a__s0")
			if err != nil {
				t.Fatal(err)
			}
			a, _ := u.Client(id, inner).Complete(t.Context(), req("hi", 1))
			if err := u.SetResult("k", "conv"); err != nil {
				t.Fatal(err)
			}
			u.Close()
			running, _ := open(Options{}).Unit("t/sim/b__s0")
			running.Client(id, inner).Complete(t.Context(), req("hi", 2))
			running.Close()

			u2, _ := open(Options{}).Unit("t/sim/a__s0")
			b, _ := u2.Client(id, never(t)).Complete(t.Context(), req("hi", 1))
			var got string
			if b.Text != a.Text || !b.Cached || !u2.Result("k", &got) || got != "conv" {
				t.Errorf("replay: %q cached %v, result %q", b.Text, b.Cached, got)
			}
			ls, err := open(Options{}).List(t.Context(), "t/sim")
			if err != nil || len(ls.Done) != 1 || ls.Done[0].Name != "a__s0" || ls.InProgress != 1 || ls.Changed.IsZero() {
				t.Errorf("listing %+v %v, want a__s0 done, one running", ls, err)
			}

			forced := open(Options{Force: true})
			f, _ := forced.Unit("t/sim/a__s0")
			if f.Result("k", &got) {
				t.Error("force: the old result came back")
			}
			f.Client(id, inner).Complete(t.Context(), req("hi", 1))
			if inner.n.Load() != 3 {
				t.Errorf("force: %d calls, want 3", inner.n.Load())
			}
			f.SetResult("k", "forced")
			f.Close()
			f2, _ := forced.Unit("t/sim/a__s0") // same invocation: keeps its work
			f2.Client(id, never(t)).Complete(t.Context(), req("hi", 1))
			if key, ok := open(Options{}).ReadResult("t/sim/a__s0", &got); !ok || key != "k" || got != "forced" {
				t.Errorf("after force: %q %q %v", key, got, ok)
			}
		})
	}
}

// gate is a model that answers only once n callers are waiting, so that
// every one of them has paid before any answer is stored: the race of
// duplicate workers on one call.
type gate struct {
	n     int
	mu    sync.Mutex
	in    int
	open  chan struct{}
	calls atomic.Int64
}

func newGate(n int) *gate { return &gate{n: n, open: make(chan struct{})} }

func (g *gate) client(who string) llm.Client {
	return llm.ClientFunc(func(ctx context.Context, r llm.Request) (llm.Response, error) {
		g.calls.Add(1)
		g.mu.Lock()
		if g.in++; g.in == g.n {
			close(g.open)
		}
		g.mu.Unlock()
		select {
		case <-g.open:
		case <-time.After(10 * time.Second):
		}
		return llm.Response{Text: who + " answers " + r.Messages[0].Content, Usage: llm.Usage{Requests: 1}}, nil
	})
}

// TestDuplicateWritersConverge: two writers (two Stores, as two processes
// on one index) pay one call at the same time: one answer is stored and
// both continue from it; their results race too, and the second adopts
// the first's.
func TestDuplicateWritersConverge(t *testing.T) {
	for name, open := range backends(t) {
		t.Run(name, func(t *testing.T) {
			g := newGate(2)
			answers := make([]string, 2)
			commits := make([]Committed, 2)
			var wg sync.WaitGroup
			for i, who := range []string{"first", "second"} {
				wg.Add(1)
				go func() {
					defer wg.Done()
					u, err := open(Options{Writer: "shard-0-of-2"}).Unit("t/sim/dup__s0")
					if err != nil {
						t.Error(err)
						return
					}
					defer u.Close()
					r, err := u.Client(id, g.client(who)).Complete(context.Background(), req("hi", 0))
					if err != nil {
						t.Error(err)
						return
					}
					answers[i] = r.Text
					commits[i], err = u.Commit(context.Background(), "k", r.Text)
					if err != nil {
						t.Error(err)
					}
				}()
			}
			wg.Wait()
			if g.calls.Load() != 2 || answers[0] != answers[1] {
				t.Fatalf("%d paid; answers %q: the writers did not converge on the first stored", g.calls.Load(), answers)
			}
			if commits[0].Adopted == commits[1].Adopted {
				t.Errorf("adopted %v and %v: exactly one writer must adopt the other's result", commits[0].Adopted, commits[1].Adopted)
			}
			var got string
			if key, ok := open(Options{}).ReadResult("t/sim/dup__s0", &got); !ok || key != "k" || got != answers[0] {
				t.Errorf("stored result %q %q %v", key, got, ok)
			}
			// A third writer replays the stored answer without paying.
			u, _ := open(Options{}).Unit("t/sim/dup__s0")
			r, _ := u.Client(id, never(t)).Complete(t.Context(), req("hi", 0))
			if r.Text != answers[0] {
				t.Errorf("replayed %q, want %q", r.Text, answers[0])
			}
		})
	}
}

// TestAnswerStoredByAnotherWriterIsNotPaidAgain: a unit open in two
// writers at once; an answer the first stored after the second opened the
// unit is found by the second before it pays.
func TestAnswerStoredByAnotherWriterIsNotPaidAgain(t *testing.T) {
	for name, open := range backends(t) {
		t.Run(name, func(t *testing.T) {
			a, _ := open(Options{Writer: "w"}).Unit("t/eval/row__s0")
			b, _ := open(Options{Writer: "w"}).Unit("t/eval/row__s0")
			inner := &counting{}
			ra, _ := a.Client(id, inner).Complete(t.Context(), req("judge", 0))
			rb, err := b.Client(id, never(t)).Complete(t.Context(), req("judge", 0))
			if err != nil || rb.Text != ra.Text || !rb.Cached || b.Stats().Hits != 1 {
				t.Errorf("second writer: %q cached %v %v; want the first's answer %q, from the store", rb.Text, rb.Cached, err, ra.Text)
			}
		})
	}
}

// TestSequentialResultsSupersede: a unit redone (its result an error,
// say) gets a new revision; the reader sees the latest.
func TestSequentialResultsSupersede(t *testing.T) {
	for name, open := range backends(t) {
		t.Run(name, func(t *testing.T) {
			for i, v := range []string{"error", "retry", "good"} {
				u, _ := open(Options{}).Unit("gen_scenarios/m01")
				c, err := u.Commit(t.Context(), fmt.Sprint("k", i), v)
				if err != nil || c.Adopted {
					t.Fatalf("commit %d: %+v %v", i, c, err)
				}
				u.Close()
			}
			var got string
			if key, ok := open(Options{}).ReadResult("gen_scenarios/m01", &got); !ok || key != "k2" || got != "good" {
				t.Errorf("latest %q %q %v", key, got, ok)
			}
		})
	}
}
