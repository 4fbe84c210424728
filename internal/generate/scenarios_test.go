package generate

import (
	"context"
	"testing"

	"github.com/impactbench/impactbench/internal/config"
	"github.com/impactbench/impactbench/internal/work"
)

func TestExpandWorkers(t *testing.T) {
	cfg := &config.Config{Dir: t.TempDir()}
	e, err := work.NewEnv(context.Background(), cfg, work.Options{})
	if err != nil {
		t.Fatal(err)
	}
	b := &work.Bench{Env: e, Spec: &config.Benchmark{Metrics: make([]config.Metric, 4)}}
	for _, tc := range []struct {
		name string
		cc   config.Concurrency
		base int
		want int
	}{
		{"auto: every rewrite at once", config.Concurrency{}, 30, 30},
		{"upstream: expand over gen_scenarios workers", config.Concurrency{GenScenarios: 5, GenScenariosExpand: 10}, 30, 2},
		{"expand a number, gen_scenarios auto (4 metrics)", config.Concurrency{GenScenariosExpand: 10}, 30, 3},
	} {
		cfg.Run.Concurrency = tc.cc
		if got := expandWorkers(b, tc.base); got != tc.want {
			t.Errorf("%s: expandWorkers(%d) = %d, want %d", tc.name, tc.base, got, tc.want)
		}
	}
}
