package work

import (
	"errors"
	"fmt"
	"hash/fnv"
	"os"
	"strings"

	"github.com/impactbench/impactbench/internal/artifacts"
	"github.com/impactbench/impactbench/internal/fault"
	"github.com/impactbench/impactbench/internal/stages"
)

// InShard reports whether a row belongs to this invocation's shard. The
// partition hashes the base scenario id, so every machine computes the
// same split and a scenario's variants and samples stay together.
func (b *Bench) InShard(scenarioID string) bool {
	if !b.Opts.Shard.Active() {
		return true
	}
	return ShardOf(artifacts.Scenario{ID: scenarioID}.BaseID(), b.Opts.Shard.Count) == b.Opts.Shard.Index
}

// ShardOf is the shard (0..count-1) a base scenario id belongs to.
func ShardOf(baseID string, count int) int {
	h := fnv.New64a()
	h.Write([]byte(baseID))
	return int(h.Sum64() % uint64(count))
}

// LoadScenarios reads scenarios.json and checks each row's metric exists.
func (b *Bench) LoadScenarios() ([]artifacts.Scenario, error) {
	var scs []artifacts.Scenario
	err := b.ScanScenarios(func(s artifacts.Scenario) { scs = append(scs, s) })
	return scs, err
}

// ScanScenarios streams scenarios.json to fn and fails (as an input error,
// after reading every row) when rows refer to metrics benchmark.yaml lacks.
func (b *Bench) ScanScenarios(fn func(artifacts.Scenario)) error {
	path := b.Files.Scenarios()
	var missing []string
	total := 0
	err := artifacts.EachScenario(path, func(i int, s artifacts.Scenario) error {
		total++
		if _, ok := b.Spec.MetricByID(s.MetricID); !ok {
			missing = append(missing, fmt.Sprintf("row %d (%s): metric_id %q", i, s.ID, s.MetricID))
		}
		fn(s)
		return nil
	})
	if errors.Is(err, os.ErrNotExist) {
		return fault.Inputf("%s does not exist: run `impactbench gen-scenarios %s` first", path, b.Spec.Slug)
	}
	if err != nil {
		return fault.AsInput(err)
	}
	if total == 0 {
		return EmptyScenariosError(path, b.Spec.Slug)
	}
	if len(missing) > 0 {
		return fault.Inputf("%s: %d scenario(s) refer to metrics that are not in %s (known: %s):\n  %s",
			path, len(missing), b.Spec.Path, b.MetricIDs(), strings.Join(FirstN(missing, 10), "\n  "))
	}
	return nil
}

// EmptyScenariosError says a scenarios.json holds no rows.
func EmptyScenariosError(path, slug string) error {
	return fault.Inputf("%s holds no scenarios (an empty list): there is nothing to simulate, and simulating it would empty every target's conversations and scores; restore the file or regenerate it with `impactbench gen-scenarios %s --force`", path, slug)
}

// ExpectedConversations is how many conversations simulate makes for one
// target: this shard's rows of scenarios.json × samples, or before
// scenarios.json exists the configured design's.
func (b *Bench) ExpectedConversations() int {
	if scs, err := b.LoadScenarios(); err == nil {
		n := 0
		for _, s := range scs {
			if b.InShard(s.ID) {
				n++
			}
		}
		return n * b.Cfg.Generation.NumSamples
	}
	nm := len(b.Spec.Metrics)
	if nm == 0 {
		nm = 5
	}
	return nm * b.Cfg.Generation.ScenariosPerMetric * b.Cfg.Demographics.Size() * b.Cfg.Generation.NumSamples
}

// ExpectedScenarios is how many variants gen_scenarios writes when every
// metric gets all its scenarios (0 when that cannot be known).
func (b *Bench) ExpectedScenarios() int {
	combos, err := stages.Combos(b.Cfg.Demographics)
	if err != nil {
		return 0
	}
	return len(b.Spec.Metrics) * b.Cfg.Generation.ScenariosPerMetric * len(combos)
}
