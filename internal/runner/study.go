package runner

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/impactbench/impactbench/internal/config"
)

// Study is several benchmarks run as one schedule of rows. Every
// benchmark's rows go through the same provider pools and lanes, under one
// cost ceiling and one progress display, so no pool idles between
// benchmarks; a benchmark that fails does not stop the others.
type Study struct {
	env     *env
	benches []*Runner
}

// NewStudy loads the benchmarks in benchDirs and takes each one's lock.
func NewStudy(cfg *config.Config, benchDirs []string, opts Options) (*Study, error) {
	e, err := newEnv(cfg, opts)
	if err != nil {
		return nil, err
	}
	s := &Study{env: e}
	for _, d := range benchDirs {
		r, err := e.open(d)
		if err != nil {
			s.Close()
			return nil, err
		}
		s.benches = append(s.benches, r)
	}
	return s, nil
}

// Benchmarks are the study's benchmarks, in the order they were given.
func (s *Study) Benchmarks() []*Runner { return s.benches }

// Close releases every benchmark's lock.
func (s *Study) Close() {
	for _, r := range s.benches {
		r.Close()
	}
}

// Preflight checks every benchmark as Run would before anything runs: a
// mistake in the last benchmark must not surface after the first ones
// have paid for their calls.
func (s *Study) Preflight(targets []string) error {
	var errs []error
	for _, r := range s.benches {
		if err := r.checkRun(targets); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Run runs every benchmark at once (see Runner.Run). It returns when all
// have finished what they can; the error names each benchmark that failed.
func (s *Study) Run(ctx context.Context, targets []string) error {
	if err := s.Preflight(targets); err != nil {
		return err
	}
	errs := make([]error, len(s.benches))
	var wg sync.WaitGroup
	for i, r := range s.benches {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ts := targets
			if len(ts) == 0 {
				ts = r.Targets()
			}
			if err := r.run(ctx, ts); err != nil {
				errs[i] = &BenchError{Bench: r.bench.Slug, Err: err}
			}
			r.Report.settle()
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// BenchError is one benchmark's failure in a study.
type BenchError struct {
	Bench string
	Err   error
}

func (e *BenchError) Error() string { return fmt.Sprintf("%s: %v", e.Bench, e.Err) }
func (e *BenchError) Unwrap() error { return e.Err }
