package benchharness

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"sync"
	"time"

	"github.com/impactbench/impactbench/internal/llm/ratelimit"
)

// The provider's side of the pools' occupancy (Options.TracePools): the
// requests each fake pool is serving, sampled every occupancyEvery, and
// the simulated user's by kind (its first turn, the row's opening every
// target shares, apart from its later turns), so a trace shows where a
// pool's capacity idles: at the start, in the tail, or between the
// openings and the turns that wait for them. The tool writes its own side
// (calls holding a slot, calls queued for one) when IMPACTBENCH_POOLTRACE
// is set; the difference is time a slot is held off the wire.

// occupancyEvery is the sampling interval.
const occupancyEvery = 100 * time.Millisecond

// occupancy counts the requests in flight per pool and, for the user's
// pool, per kind.
type occupancy struct {
	mu     sync.Mutex
	inUse  map[string]int // by series: a pool's name, or "user/turn1", "user/later"
	series map[string]bool
}

func newOccupancy() *occupancy {
	return &occupancy{inUse: map[string]int{}, series: map[string]bool{}}
}

// begin counts a request of pool (and of its kind, for the user's pool)
// in flight until the returned func is called.
func (o *occupancy) begin(pool, role string, body []byte) (end func()) {
	keys := []string{pool}
	if role == roleUser {
		keys = append(keys, "user/"+userKind(body))
	}
	o.mu.Lock()
	for _, k := range keys {
		o.inUse[k]++
		o.series[k] = true
	}
	o.mu.Unlock()
	return func() {
		o.mu.Lock()
		for _, k := range keys {
			o.inUse[k]--
		}
		o.mu.Unlock()
	}
}

// userKind tells a simulated user's first turn from its later ones: the
// first turn's request holds the system prompt and one instruction, a
// later turn's holds the conversation so far as well.
func userKind(body []byte) string {
	if bytes.Count(body, []byte(`"role"`)) <= 2 {
		return "turn1"
	}
	return "later"
}

// sample writes one line per series seen so far.
func (o *occupancy) sample(w io.Writer, ms int64) {
	o.mu.Lock()
	keys := make([]string, 0, len(o.series))
	for k := range o.series {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	vals := make([]int, len(keys))
	for i, k := range keys {
		vals[i] = o.inUse[k]
	}
	o.mu.Unlock()
	for i, k := range keys {
		fmt.Fprintf(w, "%d\t%s\t%d\n", ms, k, vals[i])
	}
}

// run samples every occupancyEvery into w until ctx ends.
func (o *occupancy) run(ctx context.Context, w io.Writer) error {
	return ratelimit.TraceLoop(ctx, w, "t_ms\tseries\tin_flight", occupancyEvery, o.sample)
}

// traceFake starts the occupancy trace of fake into the file at path (no
// trace when path is empty or there is no fake); stop ends it and closes
// the file.
func traceFake(fake *fakeServer, path string) (stop func() error, err error) {
	if path == "" || fake == nil {
		return func() error { return nil }, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("benchharness: the pools' trace: %w", err)
	}
	fake.occ = newOccupancy()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- fake.occ.run(ctx, f) }()
	return func() error {
		cancel()
		return errors.Join(<-done, f.Close())
	}, nil
}
