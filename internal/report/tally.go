package report

import "strings"

// counts are pass/scored/null tallies of score rows.
type counts struct{ K, N, Null int }

func (c *counts) add(passed *bool) {
	if passed == nil {
		c.Null++
		return
	}
	c.N++
	if *passed {
		c.K++
	}
}

// tally recounts scores.json rows. It backs every view for which
// results.json has no numbers yet (results not computed, or computed by
// upstream, which has no demographic breakdown), so those views show
// provisional counts instead of nothing.
type tally struct {
	metric map[string]map[string]*counts // target → metric → counts
	kind   map[string]map[string]*counts // target → positive|negative → counts
	// demo: target → axis → value → metric ("" = all metrics) → counts
	demo map[string]map[string]map[string]map[string]*counts
}

func get[K comparable, V any](m map[K]*V, k K) *V {
	v, ok := m[k]
	if !ok {
		v = new(V)
		m[k] = v
	}
	return v
}

func sub[K comparable, V any](m map[K]map[string]V, k K) map[string]V {
	v, ok := m[k]
	if !ok {
		v = map[string]V{}
		m[k] = v
	}
	return v
}

func newTally(in *Input, metricType map[string]string) *tally {
	t := &tally{
		metric: map[string]map[string]*counts{},
		kind:   map[string]map[string]*counts{},
		demo:   map[string]map[string]map[string]map[string]*counts{},
	}
	scen := make(map[string]*Scenario, len(in.Scenarios))
	for i := range in.Scenarios {
		scen[in.Scenarios[i].ID] = &in.Scenarios[i]
	}
	for _, run := range in.Runs {
		for _, s := range run.Scores {
			mid := s.MetricID
			sc := scen[s.ID]
			if mid == "" && sc != nil {
				mid = sc.MetricID
			}
			if mid == "" {
				mid = metricFromID(s.ID)
			}
			get(sub(t.metric, run.Target), mid).add(s.Passed)
			if typ := metricType[mid]; typ != "" {
				get(sub(t.kind, run.Target), typ).add(s.Passed)
			}
			if sc == nil {
				continue
			}
			axes := sub(t.demo, run.Target)
			for _, av := range sc.Demographic {
				vals := sub(axes, av.Axis)
				ms := vals[av.Value]
				if ms == nil {
					ms = map[string]*counts{}
					vals[av.Value] = ms
				}
				get(ms, "").add(s.Passed)
				get(ms, mid).add(s.Passed)
			}
		}
	}
	return t
}

// metricFromID parses the metric id from a scenario id (m01 of
// m01_s002_v01), upstream's rule when a row carries no metric_id.
func metricFromID(id string) string {
	if i := strings.IndexByte(id, '_'); i > 0 {
		return id[:i]
	}
	return id
}
