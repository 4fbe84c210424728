package results

import (
	"fmt"
	"maps"
	"slices"
)

// A target's reply its provider stopped for safety is the target's answer
// (see stages.Simulate): the conversation goes on, is judged and counts in
// every rate. These counts say how many of a model's rows rest on such a
// reply.

// RefusedCount counts rows whose conversation had a refused reply
// (Conversations) and those replies (Replies).
type RefusedCount struct {
	Conversations int `json:"n_conversations"`
	Replies       int `json:"n_replies"`
}

// RefusedStats is results.json's "refused": the model's rows whose
// conversation had a target reply its provider stopped for safety, in
// total and per metric (only the metrics that had one).
type RefusedStats struct {
	Conversations int                 `json:"n_conversations"`
	Replies       int                 `json:"n_replies"`
	ByMetric      Keyed[RefusedCount] `json:"by_metric"`
}

// refusedStats counts rows' refused replies over every row of the model
// (rows without a verdict too, like validity); nil when none had one, so
// a file without refusals is unchanged.
func refusedStats(rows []row) *RefusedStats {
	var st *RefusedStats
	by := map[string]*RefusedCount{}
	for _, r := range rows {
		if r.Refused == 0 {
			continue
		}
		if st == nil {
			st = &RefusedStats{}
		}
		st.Conversations++
		st.Replies += int(r.Refused)
		c := by[r.metricKey()]
		if c == nil {
			c = &RefusedCount{}
			by[r.metricKey()] = c
		}
		c.Conversations++
		c.Replies += int(r.Refused)
	}
	if st == nil {
		return nil
	}
	st.ByMetric = Keyed[RefusedCount]{}
	for _, k := range slices.Sorted(maps.Keys(by)) {
		st.ByMetric = append(st.ByMetric, Entry[RefusedCount]{Key: k, Value: *by[k]})
	}
	return st
}

// refusedReplies is the number of distinct transcript indices in refused
// (a hand-edited row may repeat one), at most 65535.
func refusedReplies(refused []int) uint16 {
	if len(refused) == 0 {
		return 0
	}
	idx := slices.Compact(slices.Sorted(slices.Values(refused)))
	return uint16(min(len(idx), 1<<16-1))
}

// SafetyStops is how many of m's conversations (score rows) had a target
// reply its provider stopped for safety, those replies, and every
// conversation of the model, those without a verdict and those left out
// as invalid included (validity's n): what the refused counts are out of.
func (m ModelResult) SafetyStops() (conversations, replies, of int) {
	of = m.NTotal
	if m.Validity != nil {
		of = max(of, m.Validity.N)
	}
	if m.Refused == nil {
		return 0, 0, of
	}
	return m.Refused.Conversations, m.Refused.Replies, of
}

// RefusedLine is printed under a model's summary lines when its provider
// stopped some of its replies for safety: those replies are its answers,
// judged and counted in the rates above, and nothing else there says so;
// "" when none was.
func RefusedLine(m ModelResult) string {
	convs, replies, of := m.SafetyStops()
	if replies == 0 {
		return ""
	}
	noun := "replies"
	if replies == 1 {
		noun = "reply"
	}
	return fmt.Sprintf("    provider safety stops: %d target %s in %d of %d conversations, the target's answers (judged and counted in the rates above)",
		replies, noun, convs, of)
}
