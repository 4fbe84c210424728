package viewer

import (
	"cmp"
	"hash/fnv"
	"math/rand/v2"
	"slices"
	"sort"

	"github.com/impactbench/impactbench/internal/labels"
	"github.com/impactbench/impactbench/internal/results"
)

// queueItem is one conversation to review. Item is its opaque id (what
// URLs and the review API use); the other fields are for the researcher's
// (not blind) view of the queue and are left out of blind answers.
type queueItem struct {
	Item    string `json:"item"`
	Metric  string `json:"metric_id"`
	ConvID  string `json:"conv_id,omitempty"`
	Target  string `json:"target,omitempty"`
	Stratum string `json:"stratum,omitempty"` // calibration: metric and judge verdict
	Reason  string `json:"reason,omitempty"`  // triage: why it is here
	Labels  int    `json:"labels,omitempty"`  // labels already recorded for it (anyone)
	Overlap bool   `json:"overlap,omitempty"` // asked of a second labeller, for agreement
	idx     int
	key     uint64 // place in the labeller's order (orderKey)
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

// queueState is what the labels file says about the conversations: who
// labelled each (each person once), for the queue to leave out what is
// done.
type queueState struct {
	byConv  map[string]map[string]bool // conv_id → labelers
	me      string
	overlap float64 // share of rows asked of a second labeller
	seed    uint64
}

func newQueueState(ls []Label, me string, overlap float64, seed uint64) queueState {
	q := queueState{byConv: map[string]map[string]bool{}, me: me, overlap: overlap, seed: seed}
	for _, l := range ls {
		if q.byConv[l.ConvID] == nil {
			q.byConv[l.ConvID] = map[string]bool{}
		}
		q.byConv[l.ConvID][l.Labeler] = true
	}
	return q
}

// isOverlap: the row is one of the share asked of two labellers. The draw
// is a hash of the seed and the row, so every labeller agrees on it.
func (q queueState) isOverlap(convID string) bool {
	h := fnv.New64a()
	h.Write([]byte(convID))
	r := rand.New(rand.NewPCG(q.seed^0x5eed0e1, h.Sum64()))
	return r.Float64() < q.overlap
}

// wants says whether the labeller still has the row to do: nobody labelled
// it, or it is an overlap row one other person labelled and this labeller
// has not. mine reports whether this labeller labelled it.
func (q queueState) wants(convID string) (want, second, mine bool) {
	who := q.byConv[convID]
	mine = q.me != "" && who[q.me]
	switch {
	case mine:
		return false, false, true
	case len(who) == 0:
		return true, false, false
	case len(who) == 1 && q.isOverlap(convID):
		return true, true, false
	}
	return false, false, false
}

// stratumOrder is every judged conversation of the index by stratum
// (metric × target × judge verdict: each target is calibrated with its own
// labels), each stratum in a seeded random order: its own generator seeded
// from (seed, stratum), so adding conversations to one stratum never
// changes another's draw.
func stratumOrder(ix *benchIndex, seed uint64, withNone bool) (keys []string, order map[string][]int) {
	order = map[string][]int{}
	for i := range ix.convs {
		c := &ix.convs[i]
		if c.verdict == verdictUnscored || (c.present == nil && !withNone) {
			continue
		}
		k := stratumName(ix, i)
		if order[k] == nil {
			keys = append(keys, k)
		}
		order[k] = append(order[k], i)
	}
	sort.Strings(keys)
	for _, k := range keys {
		s := order[k]
		// A stable base order (conv_id), whatever order the files list rows in.
		sort.Slice(s, func(a, b int) bool { return ix.convs[s[a]].convID < ix.convs[s[b]].convID })
		h := fnv.New64a()
		h.Write([]byte(k))
		rng := rand.New(rand.NewPCG(seed, h.Sum64()))
		rng.Shuffle(len(s), func(a, b int) { s[a], s[b] = s[b], s[a] })
	}
	return keys, order
}

// stratumName names conversation i's stratum: metric · target · verdict.
func stratumName(ix *benchIndex, i int) string {
	c := &ix.convs[i]
	return c.metric + " · " + ix.runs[c.target].target + " · " + verdictName(c.present)
}

// quotaKey is a metric × target of the labelling plan.
type quotaKey struct{ metric, target string }

// calibrationQueue draws the calibration sample: per stratum, either the
// first per rows of its seeded order (per > 0), or — the default — as many
// unlabelled rows, in that order, as the labelling plan asks for (quota:
// metric × target → more labels by verdict, absent then present). Rows
// labelled by nobody are new work;
// an overlap row (a seeded share of rows) labelled by one other person is
// asked of this labeller too, so that labeller agreement (α) is measured
// by design. Rows this labeller labelled, and non-overlap rows someone
// else did, drop out without promoting another draw (a labeller who skips
// cannot steer the sample). The result is in the labeller's own order (see
// orderKey), so its order reveals no stratum and two people working at once
// rarely meet on the same row.
func calibrationQueue(ix *benchIndex, q queueState, per int, quota map[quotaKey][2]int) []queueItem {
	var out []queueItem
	eachCalibrationRow(ix, q, per, quota, func(k string, i int, second bool) bool {
		c := &ix.convs[i]
		out = append(out, queueItem{ConvID: c.convID, Metric: c.metric, Target: ix.runs[c.target].target,
			Stratum: k, Labels: len(q.byConv[c.convID]), Overlap: second, idx: i})
		return true
	})
	orderFor(ix, out, q.seed, q.me)
	return out
}

// eachCalibrationRow calls yield with each row of the calibration sample
// the labeller still has to do (its stratum, its index, whether it is
// asked of them as a second labeller), stratum by stratum; yield returns
// false to stop.
func eachCalibrationRow(ix *benchIndex, q queueState, per int, quota map[quotaKey][2]int, yield func(stratum string, i int, second bool) bool) {
	keys, order := stratumOrder(ix, q.seed, per > 0)
	for _, k := range keys {
		taken := 0
		for n, i := range order[k] {
			c := &ix.convs[i]
			if per > 0 && n >= per {
				break
			}
			want, second, _ := q.wants(c.convID)
			if per <= 0 && !second && want {
				more := quota[quotaKey{c.metric, ix.runs[c.target].target}][b2i(c.present)]
				if taken >= more {
					continue
				}
				taken++
			}
			if want && !yield(k, i, second) {
				return
			}
		}
	}
}

// orderKey is a conversation's place in one labeller's queue: a hash of
// the seed, the labeller and the conversation. Every row has a place of its
// own, labelled or not, so "the next item after this one" is defined even
// for an item that just left the queue (j never bounces between two).
func orderKey(seed uint64, labeller, bench, convID string) uint64 {
	h := fnv.New64a()
	var b [8]byte
	for i := range b {
		b[i] = byte(seed >> (8 * i))
	}
	h.Write(b[:])
	for _, s := range []string{labeller, bench, convID} {
		h.Write([]byte(s))
		h.Write([]byte{0})
	}
	return h.Sum64()
}

// orderFor sorts a queue into the labeller's order.
func orderFor(ix *benchIndex, items []queueItem, seed uint64, labeller string) {
	for i := range items {
		items[i].key = orderKey(seed, labeller, ix.name, items[i].ConvID)
	}
	sortByKey(items, func(it *queueItem) uint64 { return it.key })
}

// sortByKey sorts items by key, stably: it sorts their positions (a
// queue's items are large, and a stable sort of a study's queue spent
// most of its time moving them) and then moves each item once.
func sortByKey[T any](items []T, key func(*T) uint64) {
	pos := make([]int32, len(items))
	for i := range pos {
		pos[i] = int32(i)
	}
	slices.SortFunc(pos, func(a, b int32) int {
		return cmp.Or(cmp.Compare(key(&items[a]), key(&items[b])), cmp.Compare(a, b))
	})
	sorted := make([]T, len(items))
	for i, p := range pos {
		sorted[i] = items[p]
	}
	copy(items, sorted)
}

func b2i(p *bool) int {
	if p != nil && *p {
		return 1
	}
	return 0
}

// planOf is the labelling plan for the index's judged rows and labels.
func planOf(ix *benchIndex, ls []Label, halfWidth float64) results.LabelPlan {
	rows := make([]results.ScoreRow, 0, len(ix.convs))
	judge := "the main judge"
	for i := range ix.convs {
		c := &ix.convs[i]
		if c.verdict == verdictUnscored {
			continue
		}
		if len(c.judges) >= 2 {
			judge = "panel"
		}
		rows = append(rows, results.ScoreRow{ID: c.id, MetricID: c.metric, TargetModel: ix.runs[c.target].target,
			Sample: c.sample, ConvID: c.convID, Present: c.present})
	}
	lls := make([]labels.Label, len(ls))
	for i, l := range ls {
		lls[i] = labels.Label{ConvID: l.ConvID, MetricID: l.MetricID, Present: l.Present, Labeler: l.Labeler, At: l.At, AfterReveal: l.AfterReveal}
	}
	return results.PlanLabels(rows, lls, judge, halfWidth, results.DefaultConf)
}

// quotaOf turns a plan into per metric × target, per verdict quotas of new
// rows.
func quotaOf(p results.LabelPlan) map[quotaKey][2]int {
	out := map[quotaKey][2]int{}
	for _, e := range p.Metrics {
		for _, t := range e.Value.Targets {
			out[quotaKey{e.Key, t.Key}] = [2]int{t.Value.MoreAbsent, t.Value.MorePresent}
		}
	}
	return out
}

// triageQueue lists the conversations worth a human look first: those whose
// judge panel disagreed, and those whose scenario got different verdicts on
// different samples for the same target.
func triageQueue(ix *benchIndex, q queueState) []queueItem {
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
		if reason == "" {
			continue
		}
		if q.me != "" && q.byConv[c.convID][q.me] {
			continue
		}
		out = append(out, queueItem{ConvID: c.convID, Metric: c.metric, Target: ix.runs[c.target].target,
			Reason: reason, Labels: len(q.byConv[c.convID]), idx: i})
	}
	orderFor(ix, out, q.seed, q.me)
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
