package viewer

import (
	"os"
	"sync"
)

// A study's queue at full size (BenchmarkReviewerHoldAndLabel: 17
// benchmarks of 8,640 conversations, ~55k items in a reviewer's first
// queue) is asked after every label (GET /api/next) and answers one item,
// or at most maxQueue (GET /api/queue). So each benchmark's items are
// drawn once, in the labeller's order, and kept (queueCache) while what
// they are drawn from stays the same: the index, the labels file's
// labels, the queue's parameters and, for a reviewer, her promise. A
// request then reads them merged over the benchmarks, in the labeller's
// order (queueResult.each), stopping at what it answers, and counts them
// without listing them (queueResult.total): the items others have open
// (and, for next, those she skipped) are set aside by conversation
// (queuePart.hide), a few at most.

// benchQueue is one benchmark's queue for one labeller, and what it was
// drawn from. It is never changed once made.
type benchQueue struct {
	ix  *benchIndex
	ls  []Label
	gen uint64 // the promise it was drawn on (a reviewer's queue)

	items       []queueItem // in the labeller's order (orderKey), Item set
	in          []bool      // by conversation of ix: in items
	progress    []progressLine
	unreachable []unreachableLine
	// open: the queue may still bring the labeller work (queueResult.open).
	open   bool
	judged int
	// mine, answered: the rows the labeller labelled, by metric.
	mine     int
	answered map[string]int
}

// queueKey is what a benchmark's queue is drawn for.
type queueKey struct {
	who, bench, kind string
	seed             uint64
	per              int
	overlap, half    float64
	promised         bool
}

// queueCache keeps the last queue drawn for each labeller, benchmark and
// parameters. maxCachedItems bounds it (the researcher may ask for any
// labeller's queue, and a queue of a study's benchmark holds thousands of
// items): past it, it starts again empty.
type queueCache struct {
	mu    sync.Mutex
	m     map[queueKey]*benchQueue
	items int // in the queues kept
}

// maxCachedItems is ~150 MB of items: two reviewers' and the researcher's
// queues of a study of 17 benchmarks × 8,640 conversations hold ~170,000.
const maxCachedItems = 1_000_000

func (c *queueCache) get(k queueKey) *benchQueue {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.m[k]
}

func (c *queueCache) put(k queueKey, bq *benchQueue) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if old := c.m[k]; old != nil {
		c.items -= len(old.items)
	}
	if c.m == nil || c.items+len(bq.items) > maxCachedItems {
		c.m, c.items = map[queueKey]*benchQueue{}, 0
	}
	c.m[k] = bq
	c.items += len(bq.items)
}

// sameLabels reports whether a and b are the same labels, in the same order.
func sameLabels(a, b []Label) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		x, y := &a[i], &b[i]
		if x.ConvID != y.ConvID || x.MetricID != y.MetricID || x.Present != y.Present || x.Labeler != y.Labeler ||
			x.Note != y.Note || !x.At.Equal(y.At) || x.At.Location() != y.At.Location() || x.AfterReveal != y.AfterReveal || x.Transcript != y.Transcript ||
			(x.VerdictShown == nil) != (y.VerdictShown == nil) || x.VerdictShown != nil && *x.VerdictShown != *y.VerdictShown {
			return false
		}
	}
	return true
}

// benchQueueOf is who's queue in bench (its index ix, its labels ls): the
// one kept, when it was drawn from the same, else drawn now (and kept).
func (s reviewQueue) benchQueueOf(bench string, ix *benchIndex, ls []Label, who string, p queueParams) *benchQueue {
	k := queueKey{who: who, bench: bench, kind: p.kind, seed: p.seed, per: p.per, overlap: p.overlap, half: p.halfWidth,
		promised: p.kind == "calibration" && p.promised && p.per == 0}
	if bq := s.queues.get(k); bq != nil && bq.ix == ix && sameLabels(bq.ls, ls) &&
		(!k.promised || bq.gen == s.promised.get(who, bench).gen) {
		return bq
	}
	bq := s.drawBenchQueue(bench, ix, ls, who, p, k.promised)
	s.queues.put(k, bq)
	return bq
}

// drawBenchQueue draws who's queue in bench, as studyQueue did for each
// benchmark at every request.
func (s reviewQueue) drawBenchQueue(bench string, ix *benchIndex, ls []Label, who string, p queueParams, promised bool) *benchQueue {
	bq := &benchQueue{ix: ix, ls: ls}
	qs := newQueueState(ls, who, p.overlap, p.seed)
	var quota map[quotaKey][2]int
	switch {
	case promised:
		// A reviewer's queue is her promise: the plan is drawn only
		// to refill it (and quota is set for stillOpen below when the
		// plan as it is was drawn), and her progress lines are the
		// plan's metrics.
		bq.items, bq.gen = s.promisedQueue(bench, ix, qs, func(asJudged bool) map[quotaKey][2]int {
			if asJudged {
				return quotaOf(planOf(ix, latestAsJudged(ix, ls, who), p.halfWidth))
			}
			quota = quotaOf(planOf(ix, ls, p.halfWidth))
			return quota
		})
		for _, m := range ix.planMetricIDs() {
			bq.progress = append(bq.progress, progressLine{Bench: bench, Metric: m})
		}
	case p.kind == "calibration":
		plan := planOf(ix, ls, p.halfWidth)
		if p.per == 0 {
			quota = quotaOf(plan)
		}
		bq.items = calibrationQueue(ix, qs, p.per, quota)
		var q queueResult
		q.addPlan(bench, plan)
		bq.progress, bq.unreachable = q.progress, q.unreachable
	default:
		bq.items = triageQueue(ix, qs)
	}
	bq.judged = judgedCount(ix)
	bq.open = len(bq.items) > 0 || bq.judged < len(ix.convs) || stillOpen(ix, ls, p, quota)
	bq.in = make([]bool, len(ix.convs))
	for k := range bq.items {
		it := &bq.items[k]
		it.Item = s.itemOfConv(ix, it.idx)
		bq.in[it.idx] = true
	}
	for conv, by := range qs.byConv {
		if who != "" && by[who] {
			bq.mine++
			if i, ok := ix.byConvID[conv]; ok {
				if bq.answered == nil {
					bq.answered = map[string]int{}
				}
				bq.answered[ix.convs[i].metric]++
			}
		}
	}
	return bq
}

// queuePart is a benchmark's queue in a study's: its items but those
// hidden (by conversation: someone else has them open; for next, she
// skipped them).
type queuePart struct {
	bench  string
	bq     *benchQueue
	hidden map[int]bool
}

// hide sets conversation i aside.
func (p *queuePart) hide(i int) {
	if p.hidden == nil {
		p.hidden = map[int]bool{}
	}
	p.hidden[i] = true
}

// total is the number of items of the study's queue.
func (q *queueResult) total() int {
	n := 0
	for _, p := range q.parts {
		n += len(p.bq.items)
		for i := range p.hidden {
			if p.bq.in[i] {
				n--
			}
		}
	}
	return n
}

// each calls yield with the items of the study's queue whose key is at
// least from, in the labeller's order over the study (by key; the same
// key, by benchmark, in the order they were asked), until yield returns
// false.
func (q *queueResult) each(from uint64, yield func(benchItem) bool) {
	at := make([]int, len(q.parts)) // each part's next item
	for k, p := range q.parts {
		lo, hi := 0, len(p.bq.items)
		for lo < hi { // the first item whose key is at least from
			mid := int(uint(lo+hi) >> 1)
			if p.bq.items[mid].key < from {
				lo = mid + 1
			} else {
				hi = mid
			}
		}
		at[k] = lo
	}
	for {
		best := -1
		for k, p := range q.parts {
			for at[k] < len(p.bq.items) && p.hidden[p.bq.items[at[k]].idx] {
				at[k]++
			}
			if at[k] < len(p.bq.items) && (best < 0 || p.bq.items[at[k]].key < q.parts[best].bq.items[at[best]].key) {
				best = k
			}
		}
		if best < 0 {
			return
		}
		p := &q.parts[best]
		it := p.bq.items[at[best]]
		at[best]++
		if !yield(benchItem{p.bench, it}) {
			return
		}
	}
}

// first is the study's queue's first n items.
func (q *queueResult) first(n int) []benchItem {
	var out []benchItem
	if n <= 0 {
		return out
	}
	q.each(0, func(it benchItem) bool {
		out = append(out, it)
		return len(out) < n
	})
	return out
}

// Each benchmark's labels are read at every request too, and a study's
// labels files grow to thousands of lines each (parsing 3,300 labels takes
// ~28 ms: a study-wide next would read 17 of them). labelsRead keeps each
// file's labels as last read, with the file's identity, size and
// modification time, as the index is kept (stampFiles): a label appended
// (here or by anyone) grows the file, and a file replaced is another file.

// labelsRead is the labels files as last read, by benchmark.
type labelsRead struct {
	mu sync.Mutex
	m  map[*benchState]readLabels
}

type readLabels struct {
	fi os.FileInfo
	ls []Label
}

// labelsOf is st's labels that count (currentLabels: those given on a
// transcript the conversation no longer has are left out), from
// readLabelsOf.
func (s reviewQueue) labelsOf(st *benchState) ([]Label, error) {
	ls, err := s.readLabelsOf(st)
	if err != nil {
		return nil, err
	}
	return currentLabels(st.index(s.Server), ls), nil
}

// readLabelsOf is st's labels: as last read when its file is the same
// regular file, of the same size and time, else read now. Other label
// stores are read every time. The labels answered are never changed.
func (s reviewQueue) readLabelsOf(st *benchState) ([]Label, error) {
	fl, ok := st.labels.(*FileLabels)
	if !ok {
		return st.labels.List()
	}
	fi, err := os.Stat(fl.Path)
	if err != nil || !fi.Mode().IsRegular() {
		return st.labels.List() // it says why, or that there are none
	}
	lr := &s.labelsRead
	lr.mu.Lock()
	c, ok := lr.m[st]
	lr.mu.Unlock()
	if ok && os.SameFile(c.fi, fi) && c.fi.Size() == fi.Size() && c.fi.ModTime().Equal(fi.ModTime()) {
		return c.ls, nil
	}
	ls, err := st.labels.List() // after the stat: a line appended meanwhile is read again next time
	if err != nil {
		return nil, err
	}
	lr.mu.Lock()
	if lr.m == nil {
		lr.m = map[*benchState]readLabels{}
	}
	lr.m[st] = readLabels{fi, ls}
	lr.mu.Unlock()
	return ls, nil
}
