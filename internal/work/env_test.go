package work

import (
	"testing"

	"github.com/impactbench/impactbench/internal/clientset"
	"github.com/impactbench/impactbench/internal/config"
)

func TestWorkers(t *testing.T) {
	e := &Env{autoWorkers: 512, Cfg: &config.Config{}}
	for _, tc := range []struct {
		name             string
		configured, rows int
		want             int
	}{
		{"auto: every row", 0, 40, 40},
		{"auto: up to the ceiling", 0, 5000, 512},
		{"auto: at least one", 0, 0, 1},
		{"a number is a cap", 10, 5000, 10},
		{"a number stays even above the rows", 20, 5, 20}, // the pools cap at rows themselves
	} {
		if got := e.Workers(tc.configured, tc.rows); got != tc.want {
			t.Errorf("%s: Workers(%d, %d) = %d, want %d", tc.name, tc.configured, tc.rows, got, tc.want)
		}
	}
	cfg := &config.Config{Targets: []config.ModelConfig{{MaxConcurrency: 1000}}}
	if got := clientset.AutoWorkerCeiling(cfg); got != 2000 {
		t.Errorf("ceiling with max_concurrency 1000: %d, want 2000", got)
	}
	if got := clientset.AutoWorkerCeiling(&config.Config{}); got != 512 {
		t.Errorf("default ceiling: %d, want 512", got)
	}
}
