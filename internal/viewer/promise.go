package viewer

import (
	"slices"
	"sync"
)

// A reviewer's queue is a promise. The labelling plan is redrawn as labels
// arrive, and how many more rows a stratum needs depends on whether the
// labels so far agreed with the judge: a queue redrawn after each label
// would grow or shrink with the verdict of the row just labelled, and a
// reviewer comparing it before and after would read the judge's verdict
// (blind review hides it). So the server keeps, per reviewer and
// benchmark, the rows drawn for her (her promise), and her queue is the
// rows of it she still has to do:
//
//   - her label takes out exactly its row, whatever the verdict (another's
//     too, unless the row is one asked of two labellers);
//   - rows the redrawn plan no longer needs stay until she has done the
//     rest (labelling one costs a label the plan did not need), and rows
//     it adds come in only when her promise runs out: then it is drawn
//     again (a refill) from the plan as it stands but for her latest
//     label in the benchmark, counted as the judge's verdict — that label
//     is most often the one that emptied her promise, and the refill would
//     say its verdict. The plan as it is draws her next batch only when
//     that one would draw nothing for her, so the plan still completes;
//     then (and only then: her latest label decided whether the plan asks
//     her for more) the refill follows her latest label. Otherwise what a
//     refill says of the labels is a function of all of them but her
//     latest, the rest of the batch she just finished among them;
//   - a row asked of her as a second labeller (an overlap row one other
//     person labelled) comes in when it is asked: that depends on who
//     labelled, not on any verdict.
//
// The researcher's queue is drawn from the plan at every request, as
// before: they see the plan anyway. Promises are kept in memory, as places
// are: after a restart the first request draws a new one.

// promises are the reviewers' promised rows, by reviewer and benchmark.
type promises struct {
	mu  sync.Mutex
	m   map[[2]string]promise // {reviewer, bench} → her promise
	gen uint64                // the last promise's gen
}

// promise is a reviewer's promised rows (conv_ids) and gen, which no other
// promise has had (a queue drawn on a promise keeps its gen: queueCache).
type promise struct {
	rows map[string]bool
	gen  uint64
}

// get is who's promise in bench (gen 0: none yet). It is never changed in
// place: set replaces it.
func (ps *promises) get(who, bench string) promise {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	return ps.m[[2]string{who, bench}]
}

// set makes rows who's promise in bench, and answers its gen.
func (ps *promises) set(who, bench string, rows map[string]bool) uint64 {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	if ps.m == nil {
		ps.m = map[[2]string]promise{}
	}
	ps.gen++
	ps.m[[2]string{who, bench}] = promise{rows, ps.gen}
	return ps.gen
}

// promisedQueue is reviewer q.me's calibration queue in bench: the rows of
// her promise she still has to do, and the rows asked of her as a second
// labeller, in her order; when no row of her promise is left, the plan's
// draw now (quota's, as calibrationQueue draws it), which becomes her
// promise.
// quota is called only then (drawing the plan is most of a queue's cost:
// BenchmarkReviewerHoldAndLabel), first with asJudged (her latest label
// counted as the judge's verdict), and without it when that draws nothing.
// gen is the promise's the queue is drawn on.
func (s reviewQueue) promisedQueue(bench string, ix *benchIndex, q queueState, quota func(asJudged bool) map[quotaKey][2]int) (items []queueItem, gen uint64) {
	pr := s.promised.get(q.me, bench)
	promised := pr.rows
	var out []queueItem
	left := false
	for i := range ix.convs {
		c := &ix.convs[i]
		if c.verdict == verdictUnscored || c.present == nil {
			continue
		}
		want, second, _ := q.wants(c.convID)
		if !want {
			continue
		}
		if promised[c.convID] {
			left = true
		} else if !second {
			continue
		}
		out = append(out, queueItem{ConvID: c.convID, Metric: c.metric, Target: ix.runs[c.target].target,
			Stratum: stratumName(ix, i), Labels: len(q.byConv[c.convID]), Overlap: second, idx: i})
	}
	if !left {
		out = calibrationQueue(ix, q, 0, quota(true))
		if len(out) == 0 {
			out = calibrationQueue(ix, q, 0, quota(false))
		}
		rows := make(map[string]bool, len(out))
		for _, it := range out {
			rows[it.ConvID] = true
		}
		return out, s.promised.set(q.me, bench, rows)
	}
	orderFor(ix, out, q.seed, q.me)
	return out, pr.gen
}

// latestAsJudged is ls with who's latest label (the last of theirs in the
// file) saying what the judge said of its row: the labels a refill of
// who's promise is drawn from.
func latestAsJudged(ix *benchIndex, ls []Label, who string) []Label {
	for k := len(ls) - 1; k >= 0; k-- {
		if ls[k].Labeler != who {
			continue
		}
		i, ok := ix.byConvID[ls[k].ConvID]
		if !ok || ix.convs[i].present == nil || ls[k].Present == *ix.convs[i].present {
			return ls
		}
		out := slices.Clone(ls)
		out[k].Present = *ix.convs[i].present
		return out
	}
	return ls
}

// planMetricIDs are the metrics of the index's labelling plan, in its
// order (they depend on the rows, not on the labels): a reviewer's
// progress lines, without drawing the plan.
func (ix *benchIndex) planMetricIDs() []string {
	ix.planMetricsOnce.Do(func() {
		for _, e := range planOf(ix, nil, 0).Metrics {
			ix.planMetrics = append(ix.planMetrics, e.Key)
		}
	})
	return ix.planMetrics
}
