package callstore

import (
	"context"

	"golang.org/x/sync/errgroup"
)

// Reads ahead of EachResult on an object store: a window of rows is read
// with this many requests in flight, then handed out in order. Each read
// is several round trips to the store, so one at a time a replay of a
// study's rows spent seconds waiting; the window bounds the results held
// in memory whatever the number of rows.
const (
	readAheadWindow   = 64
	readAheadInFlight = 16
)

// EachResult reads the stored results of n units (unit i named name(i))
// and calls fn with each in order: v is the decoded result, ok false when
// the unit has no readable result (as LoadResult). On an object store the
// reads go out several at a time ahead of fn; a store on disk is read one
// unit after another, as it gains nothing from it. An error reading the
// store, or from fn, stops the walk and is returned.
func EachResult[T any](ctx context.Context, s *Store, n int, name func(i int) string, fn func(i int, v *T, ok bool) error) error {
	window, inFlight := 1, 1
	if s.dir == "" {
		window, inFlight = readAheadWindow, readAheadInFlight
	}
	vals := make([]T, window)
	oks := make([]bool, window)
	for start := 0; start < n; start += window {
		end := min(n, start+window)
		if err := readWindow(ctx, s, start, end, inFlight, name, vals, oks); err != nil {
			return err
		}
		for i := start; i < end; i++ {
			if err := fn(i, &vals[i-start], oks[i-start]); err != nil {
				return err
			}
		}
	}
	return nil
}

// readWindow reads the results of units start..end-1 into vals and oks.
func readWindow[T any](ctx context.Context, s *Store, start, end, inFlight int, name func(i int) string, vals []T, oks []bool) error {
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(inFlight)
	for i := start; i < end; i++ {
		g.Go(func() error {
			var zero T
			vals[i-start] = zero
			_, ok, err := s.LoadResult(gctx, name(i), &vals[i-start])
			oks[i-start] = ok
			return err
		})
	}
	return g.Wait()
}
