package schedule

import (
	"context"
	"sync"
)

// ForEach runs fn(i) for i in [0, n) on up to workers goroutines. A row's
// failure is the row's business (fn records it); ForEach stops handing out
// rows only when ctx is done, and returns ctx.Err() in that case.
func ForEach(ctx context.Context, n, workers int, fn func(ctx context.Context, i int)) error {
	workers = max(1, min(workers, n))
	next := make(chan int)
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				fn(ctx, i)
			}
		}()
	}
	var err error
feed:
	for i := range n {
		select {
		case <-ctx.Done():
			err = ctx.Err()
			break feed
		case next <- i:
		}
	}
	close(next)
	wg.Wait()
	if err == nil {
		err = ctx.Err()
	}
	return err
}
