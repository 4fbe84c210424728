package benchharness

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/impactbench/impactbench/internal/config"
)

// TestConfigIndependentOpenings checks that --independent-openings reaches
// the tool: the written config.yaml loads with the option set, and without
// the flag the targets share the opening (the tool's default).
func TestConfigIndependentOpenings(t *testing.T) {
	for _, indep := range []bool{false, true} {
		o := Options{Turns: 3, Samples: 1, Targets: 2, IndependentOpenings: indep}
		path := filepath.Join(t.TempDir(), "config.yaml")
		yaml := configYAML(o, sizing{scenarios: 4, metrics: 2}, projectModels{offline: true})
		if err := os.WriteFile(path, []byte(yaml), 0o644); err != nil {
			t.Fatal(err)
		}
		cfg, err := config.Load(path)
		if err != nil {
			t.Fatalf("independent=%v: %v\n%s", indep, err, yaml)
		}
		if cfg.Generation.IndependentOpenings != indep {
			t.Errorf("independent=%v: config loads independent_openings=%v\n%s", indep, cfg.Generation.IndependentOpenings, yaml)
		}
	}
}
