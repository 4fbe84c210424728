package viewer

import (
	"hash/fnv"
	"math/rand/v2"
	"sort"
)

// queueItem is one conversation to review.
type queueItem struct {
	ConvID  string `json:"conv_id"`
	Metric  string `json:"metric_id"`
	Target  string `json:"target"`
	Stratum string `json:"stratum,omitempty"` // calibration: metric and judge verdict
	Reason  string `json:"reason,omitempty"`  // triage: why it is here
	Labels  int    `json:"labels"`            // labels already recorded for it (anyone)
}

// verdictName names a judge verdict for strata.
func verdictName(p *bool) string {
	switch {
	case p == nil:
		return "no verdict"
	case *p:
		return "present"
	default:
		return "absent"
	}
}

// calibrationQueue draws up to per conversations from every stratum (metric
// × judge verdict: present, absent, no verdict) of the judged conversations,
// at random but reproducibly from seed: each stratum is shuffled by its own
// generator seeded from (seed, stratum), so adding conversations to one
// stratum never changes another's draw. Strata are interleaved, so
// reviewing any prefix of the queue covers them evenly. Conversations
// labeler has already labelled are left out (their draw is kept: the next
// one in the stratum does not move up, or a biased labeler could steer the
// sample by skipping).
func calibrationQueue(ix *benchIndex, seed uint64, per int, done map[string]bool, counts map[string]int) []queueItem {
	type stratum struct {
		key   string
		items []int
	}
	byKey := map[string]*stratum{}
	var keys []string
	for i := range ix.convs {
		c := &ix.convs[i]
		if c.verdict == verdictUnscored {
			continue
		}
		k := c.metric + " · " + verdictName(c.present)
		s := byKey[k]
		if s == nil {
			s = &stratum{key: k}
			byKey[k] = s
			keys = append(keys, k)
		}
		s.items = append(s.items, i)
	}
	sort.Strings(keys)
	drawn := make([][]int, len(keys))
	for ki, k := range keys {
		s := byKey[k]
		// A stable base order (conv_id), whatever order the files list rows in.
		sort.Slice(s.items, func(a, b int) bool { return ix.convs[s.items[a]].convID < ix.convs[s.items[b]].convID })
		h := fnv.New64a()
		h.Write([]byte(k))
		rng := rand.New(rand.NewPCG(seed, h.Sum64()))
		rng.Shuffle(len(s.items), func(a, b int) { s.items[a], s.items[b] = s.items[b], s.items[a] })
		drawn[ki] = s.items[:min(per, len(s.items))]
	}
	var out []queueItem
	for round := 0; round < per; round++ {
		for ki, d := range drawn {
			if round >= len(d) {
				continue
			}
			c := &ix.convs[d[round]]
			if done[c.convID] {
				continue
			}
			out = append(out, queueItem{ConvID: c.convID, Metric: c.metric, Target: ix.runs[c.target].target,
				Stratum: keys[ki], Labels: counts[c.convID]})
		}
	}
	return out
}

// triageQueue lists the conversations worth a human look first: those whose
// judge panel disagreed, and those whose scenario got different verdicts on
// different samples for the same target.
func triageQueue(ix *benchIndex, counts map[string]int) []queueItem {
	type group struct{ scen, target string }
	verdicts := map[group]map[bool]bool{}
	for i := range ix.convs {
		c := &ix.convs[i]
		if c.present == nil {
			continue
		}
		g := group{c.id, ix.runs[c.target].target}
		if verdicts[g] == nil {
			verdicts[g] = map[bool]bool{}
		}
		verdicts[g][*c.present] = true
	}
	var out []queueItem
	for i := range ix.convs {
		c := &ix.convs[i]
		var reason string
		if judgesSplit(c.judges) {
			reason = "judges disagree"
		}
		if len(verdicts[group{c.id, ix.runs[c.target].target}]) == 2 {
			if reason != "" {
				reason += "; "
			}
			reason += "samples split"
		}
		if reason != "" {
			out = append(out, queueItem{ConvID: c.convID, Metric: c.metric, Target: ix.runs[c.target].target,
				Reason: reason, Labels: counts[c.convID]})
		}
	}
	return out
}

// judgesSplit: at least one panel member said present and one said absent.
func judgesSplit(js []*bool) bool {
	var yes, no bool
	for _, p := range js {
		if p == nil {
			continue
		}
		if *p {
			yes = true
		} else {
			no = true
		}
	}
	return yes && no
}
