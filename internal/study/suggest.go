package study

import (
	"github.com/impactbench/impactbench/internal/config"
	"github.com/impactbench/impactbench/internal/layout"
)

// didYouMean is "; did you mean X?" when one of known is close to s (a
// likely typo, as config errors suggest), else "".
func didYouMean(s string, known []string) string {
	if k := config.Suggest(s, known); k != "" && k != s {
		return "; did you mean " + k + "?"
	}
	return ""
}

// jsonKeys are every key taxonomy.json and nutrition-label.json know.
var jsonKeys = []string{"areas", "id", "name", "icon", "color", "subareas", "groups", "metrics", "metric_ids", "type",
	"label", "description", "label_metric_id"}

// benchmarkDirs are the folders of dir holding a benchmark.yaml.
func benchmarkDirs(dir string) []string {
	names, _ := layout.BenchmarksIn(dir) // none: nothing to suggest
	return names
}

// benchMetricIDs are a benchmark's metric ids.
func benchMetricIDs(b *config.Benchmark) []string {
	ids := make([]string, len(b.Metrics))
	for i, m := range b.Metrics {
		ids[i] = m.ID
	}
	return ids
}
