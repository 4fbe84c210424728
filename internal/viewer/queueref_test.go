package viewer

// The study's queue as it was computed before queueCache and the merge
// (every benchmark's items built, filtered and sorted at each request):
// the reference queuecache_test.go compares the new path with.

// refQueue is the reference's answer: every item, and the rest.
type refQueue struct {
	queueResult
	items []benchItem
}

// refStudyQueue is studyQueue as it was.
func (s reviewQueue) refStudyQueue(who string, p queueParams, benches []string) refQueue {
	var out refQueue
	now := s.now()
	for _, name := range benches {
		st := s.bench(name)
		if st == nil {
			continue
		}
		ix := st.index(s.Server)
		ls, err := st.labels.List()
		if err != nil {
			// The benchmark is left out of the queue, so the plan is not
			// done: its rows may still be asked once the file is fixed.
			out.notes = append(out.notes, err.Error())
			out.open = true
			continue
		}
		out.lines += len(ls)
		qs := newQueueState(ls, who, p.overlap, p.seed)
		var items []queueItem
		var quota map[quotaKey][2]int
		switch {
		case p.kind == "calibration" && p.promised && p.per == 0:
			// A reviewer's queue is her promise: the plan is drawn only
			// to refill it (and quota is set for stillOpen below when the
			// plan as it is was drawn), and her progress lines are the
			// plan's metrics.
			items, _ = s.promisedQueue(name, ix, qs, func(asJudged bool) map[quotaKey][2]int {
				if asJudged {
					return quotaOf(planOf(ix, latestAsJudged(ix, ls, who), p.halfWidth))
				}
				quota = quotaOf(planOf(ix, ls, p.halfWidth))
				return quota
			})
			for _, m := range ix.planMetricIDs() {
				out.progress = append(out.progress, progressLine{Bench: name, Metric: m})
			}
		case p.kind == "calibration":
			plan := planOf(ix, ls, p.halfWidth)
			if p.per == 0 {
				quota = quotaOf(plan)
			}
			items = calibrationQueue(ix, qs, p.per, quota)
			out.addPlan(name, plan)
		default:
			items = triageQueue(ix, qs)
		}
		judged := judgedCount(ix)
		out.open = out.open || len(items) > 0 || judged < len(ix.convs) || stillOpen(ix, ls, p, quota)
		out.judged += judged
		var shared map[string]sharedHold // the other servers' holds too
		if !p.keepHeld && len(items) > 0 {
			shared = s.shared.of(st, now)
		}
		for _, it := range items {
			it.Item = s.itemOfConv(ix, it.idx)
			if !p.keepHeld && (s.places.heldByOther(it.Item, who, now) || heldElsewhere(shared, ix.convs[it.idx].convID, who)) {
				// Someone has its form open right now (a row waiting for
				// its second labeller too: one of them takes it).
				continue
			}
			out.items = append(out.items, benchItem{name, it})
		}
		for conv, by := range qs.byConv {
			if who != "" && by[who] {
				out.mine++
				if i, ok := ix.byConvID[conv]; ok {
					if out.answered == nil {
						out.answered = map[[2]string]int{}
					}
					out.answered[[2]string{name, ix.convs[i].metric}]++
				}
			}
		}
	}
	sortByKey(out.items, func(it *benchItem) uint64 { return it.key })
	return out
}

// refNext is next as it was: who's next item after item after (none: from their current
// place): the first of their queue, in their order, after it that they
// have not skipped — wrapping around, and never after itself.
func (s reviewQueue) refNext(who string, p queueParams, benches []string, after string) nextAnswer {
	q := s.refStudyQueue(who, p, benches)
	skipped := s.places.skippedSet(who)
	var open []benchItem
	for _, it := range q.items {
		if !skipped[it.Item] {
			open = append(open, it)
		}
	}
	ans := nextAnswer{Left: len(open), Skipped: len(skipped), PlanDone: q.planDone()}
	strict := after != ""
	if !strict {
		after = s.places.view(who).Current
	}
	var from uint64
	if st, ix, i, ok := s.findItem(after); ok {
		from = orderKey(p.seed, who, st.name, ix.convs[i].convID)
	}
	pick := -1
	for k, it := range open {
		if it.Item == after {
			if !strict {
				pick = k // the current item, still to do: stay there
				break
			}
			continue
		}
		if it.key > from || (!strict && it.key == from) {
			pick = k
			break
		}
	}
	if pick < 0 { // wrap around
		for k, it := range open {
			if it.Item != after {
				pick = k
				break
			}
		}
	}
	if pick >= 0 {
		ans.Item, ans.Bench = &open[pick].Item, open[pick].bench
	}
	return ans
}
