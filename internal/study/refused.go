package study

import "github.com/impactbench/impactbench/internal/results"

// A target reply its provider stopped for safety is the target's answer:
// judged, and counted in every score (stages.Simulate). Nothing in a
// cell shows how many of a model's conversations rest on one, so
// study.json carries, per model, each benchmark's count from its
// results.json ("refused").

// BenchRefused is one benchmark's provider safety stops of a model: its
// results.json's refused.by_metric summed over the metrics the study
// publishes (a metric no score of the study averages is left out).
type BenchRefused struct {
	Benchmark     string `json:"benchmark"`
	Conversations int    `json:"n_conversations"`
	Replies       int    `json:"n_replies"`
}

// SafetyStops is a model's provider safety stops over the study: its
// conversations holding a target reply its provider stopped for safety,
// those replies, and the benchmarks they are in.
type SafetyStops struct {
	Conversations int `json:"n_conversations"`
	Replies       int `json:"n_replies"`
	Benchmarks    int `json:"n_benchmarks"`
}

// SafetyStops sums m's Refused over the study's benchmarks (entries
// without a reply, which a hand-edited study.json may hold, left out).
func (m ModelInfo) SafetyStops() SafetyStops {
	var st SafetyStops
	for _, r := range m.Refused {
		if r.Replies <= 0 {
			continue
		}
		st.Conversations += max(r.Conversations, 0)
		st.Replies += r.Replies
		st.Benchmarks++
	}
	return st
}

// addRefused records the provider safety stops results.json counted for
// model mi in benchmark b, on the metrics the study publishes; nothing
// when none of those had one.
func (s *Study) addRefused(b *Bench, mi int, st *results.RefusedStats) {
	n := BenchRefused{Benchmark: b.Slug}
	for _, e := range st.ByMetric {
		if _, _, ok := s.metricOf(b, e.Key, ""); ok {
			n.Conversations += e.Value.Conversations
			n.Replies += e.Value.Replies
		}
	}
	if n.Replies > 0 {
		s.refused[mi] = append(s.refused[mi], n)
	}
}
