package ratelimit

import (
	"bytes"
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/impactbench/impactbench/internal/llm"
)

// syncBuffer is a bytes.Buffer safe to read while Trace writes it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func TestTraceShowsCallsInFlight(t *testing.T) {
	r := NewRegistry(Options{})
	release := make(chan struct{})
	started := make(chan struct{}, 2)
	c := r.Wrap("pool-a", Limits{MaxInFlight: 4}, llm.ClientFunc(func(ctx context.Context, req llm.Request) (llm.Response, error) {
		started <- struct{}{}
		<-release
		return llm.Response{}, nil
	}))
	var wg sync.WaitGroup
	for range 2 {
		wg.Go(func() { _, _ = c.Complete(context.Background(), llm.Request{}) })
	}
	<-started
	<-started
	var buf syncBuffer
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Trace(ctx, &buf, 5*time.Millisecond) }()
	deadline := time.Now().Add(5 * time.Second)
	for !strings.Contains(buf.String(), "\tpool-a\t2\t0\t4\n") && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	close(release)
	wg.Wait()
	out := buf.String()
	if !strings.HasPrefix(out, "t_ms\tpool\tin_flight\tqueued\tlimit\n") {
		t.Fatalf("no header: %q", out)
	}
	if !strings.Contains(out, "\tpool-a\t2\t0\t4\n") {
		t.Fatalf("no sample with 2 calls in flight of 4: %q", out)
	}
}
