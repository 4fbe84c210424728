package viewer

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"strings"

	"github.com/impactbench/impactbench/internal/labels"
	"github.com/impactbench/impactbench/internal/results"
)

// One queue for the whole study: every benchmark's calibration (or
// triage) rows in one list, each item naming its benchmark, in the
// labeller's own order, with progress per benchmark and metric. Reviewers
// and the researcher use the same endpoints; a reviewer's answers are
// blind (item, benchmark and metric only) and they label as themselves.

// benchItem is a queue item and its benchmark.
type benchItem struct {
	bench string
	queueItem
}

// studyItemView is a queue item as an answer carries it: blind, only the
// item, its benchmark and metric; else the conversation and its stratum.
type studyItemView struct {
	Item    string `json:"item"`
	Bench   string `json:"bench"`
	Metric  string `json:"metric_id"`
	ConvID  string `json:"conv_id,omitempty"`
	Target  string `json:"target,omitempty"`
	Stratum string `json:"stratum,omitempty"`
	Reason  string `json:"reason,omitempty"`
	Labels  int    `json:"labels,omitempty"`
	Overlap bool   `json:"overlap,omitempty"`
}

// progressLine is one benchmark × metric of the calibration plan: labelled
// rows so far, what the plan asks for, and how many targets have a
// corrected rate. Blind answers leave out the split by judge verdict.
type progressLine struct {
	Bench       string   `json:"bench"`
	Metric      string   `json:"metric_id"`
	Labelled    int      `json:"labelled"`
	Planned     int      `json:"planned"`
	More        int      `json:"more"`
	Targets     int      `json:"targets"`
	Corrected   int      `json:"corrected"`
	Unreachable int      `json:"unreachable"`
	MorePresent *int     `json:"more_present,omitempty"`
	MoreAbsent  *int     `json:"more_absent,omitempty"`
	Now         *float64 `json:"half_width_now,omitempty"`
	HalfPlanned *float64 `json:"half_width_planned,omitempty"`
	Reachable   bool     `json:"reachable"`
}

// queueResult is a queue over one or several benchmarks.
type queueResult struct {
	// parts: each benchmark's items (queuePart; first and each read them
	// in the labeller's order over the study).
	parts       []queuePart
	progress    []progressLine
	unreachable []unreachableLine
	mine, lines int
	// answered: the labeller's rows by benchmark and metric.
	answered map[[2]string]int
	notes    []string
	// open: the queue may still bring the labeller work (see stillOpen);
	// judged: conversations with a verdict, over the benchmarks.
	open   bool
	judged int
}

// unreachableLine is a metric × target the plan cannot bring to a number.
type unreachableLine struct {
	Bench  string `json:"bench"`
	Metric string `json:"metric_id"`
	Target string `json:"target"`
	Why    string `json:"why"`
}

// labellerOf is who a request labels (and queues) as: a reviewer is always
// themselves; the researcher gives a name.
func labellerOf(p principal, given string) (string, error) {
	given = strings.TrimSpace(given)
	if !p.reviewer() {
		if why := CheckReviewerName(given); given != "" && why != "" {
			return "", fmt.Errorf("labeler: %s", why)
		}
		return given, nil
	}
	if given != "" && given != p.name {
		return "", fmt.Errorf("a reviewer labels as themselves (%s)", p.name)
	}
	return p.name, nil
}

// benchFilter is the benchmarks a study request covers: bench= one of
// them (refused when unknown), else all.
func (s reviewQueue) benchFilter(r *http.Request) ([]string, bool) {
	names := s.benchNames()
	b := r.URL.Query().Get("bench")
	if b == "" {
		return names, true
	}
	for _, n := range names {
		if n == b {
			return []string{n}, true
		}
	}
	return nil, false
}

// studyQueue draws who's queue over benches: each benchmark's items in
// who's order (queueCache keeps them while the index, the labels and her
// promise stay the same), less those someone else has open (unless
// p.keepHeld). Its items are read in the order of the whole study (first,
// each) without building that list.
func (s reviewQueue) studyQueue(who string, p queueParams, benches []string) queueResult {
	var out queueResult
	now := s.now()
	var held []string // items others have open on this server
	if !p.keepHeld {
		held = s.places.heldByOthers(who, now)
	}
	for _, name := range benches {
		st := s.bench(name)
		if st == nil {
			continue
		}
		ix := st.index(s.Server)
		ls, err := s.labelsOf(st)
		if err != nil {
			// The benchmark is left out of the queue, so the plan is not
			// done: its rows may still be asked once the file is fixed.
			out.notes = append(out.notes, err.Error())
			out.open = true
			continue
		}
		out.lines += len(ls)
		bq := s.benchQueueOf(name, ix, ls, who, p)
		out.progress = append(out.progress, bq.progress...)
		out.unreachable = append(out.unreachable, bq.unreachable...)
		out.open = out.open || bq.open
		out.judged += bq.judged
		out.mine += bq.mine
		for m, n := range bq.answered {
			if out.answered == nil {
				out.answered = map[[2]string]int{}
			}
			out.answered[[2]string{name, m}] += n
		}
		part := queuePart{bench: name, bq: bq}
		if !p.keepHeld && len(bq.items) > 0 {
			// Someone has its form open right now (a row waiting for its
			// second labeller too: one of them takes it), here or on
			// another view server on the project.
			for _, item := range held {
				if i, ok := s.itemIndex(ix, item); ok {
					part.hide(i)
				}
			}
			for conv, h := range s.shared.of(st, now) {
				if i, ok := ix.byConvID[conv]; ok && h.Who != who {
					part.hide(i)
				}
			}
		}
		out.parts = append(out.parts, part)
	}
	return out
}

// planDone: nothing more can come to the labeller from these benchmarks —
// some conversation has a verdict and the queue is not still open.
func (q *queueResult) planDone() bool { return !q.open && q.judged > 0 }

// stillOpen reports whether a calibration queue may yet bring the
// labeller work beyond the items of their queue now and the verdicts
// still to come (which the caller checks): a row the plan still asks of
// anyone — one someone else's open form holds, or an overlap row waiting
// for its second labeller, whoever that will be. Triage rows are fixed
// per labeller, so only the verdicts still to come matter there. With
// those, this is what "the review plan is unfinished" means on the queue
// page.
func stillOpen(ix *benchIndex, ls []Label, p queueParams, quota map[quotaKey][2]int) bool {
	if p.kind != "calibration" {
		return false
	}
	open := false
	eachCalibrationRow(ix, newQueueState(ls, "", p.overlap, p.seed), p.per, quota, func(string, int, bool) bool {
		open = true
		return false
	})
	return open
}

// judgedCount is the number of the benchmark's conversations with a verdict.
func judgedCount(ix *benchIndex) int {
	n := 0
	for i := range ix.convs {
		if ix.convs[i].verdict != verdictUnscored {
			n++
		}
	}
	return n
}

// addPlan adds a benchmark's plan to the progress lines.
func (q *queueResult) addPlan(bench string, plan results.LabelPlan) {
	for _, e := range plan.Metrics {
		m := e.Value
		l := progressLine{Bench: bench, Metric: e.Key, Labelled: m.LabelledPresent + m.LabelledAbsent, More: m.MorePresent + m.MoreAbsent,
			Targets: len(m.Targets), Corrected: m.Corrected, Reachable: m.Reachable,
			MorePresent: intPtr(m.MorePresent), MoreAbsent: intPtr(m.MoreAbsent), Now: m.HalfWidthNow, HalfPlanned: m.HalfWidthPlanned}
		l.Planned = l.Labelled + l.More
		for _, t := range m.Targets {
			if t.Value.Status == results.PlanUnreachable {
				l.Unreachable++
			}
		}
		q.progress = append(q.progress, l)
	}
	for _, u := range plan.Unreachable {
		q.unreachable = append(q.unreachable, unreachableLine{Bench: bench, Metric: u.Metric, Target: u.Target, Why: u.Why})
	}
}

// answeredLine is a reviewer's progress in one benchmark × metric: the
// rows they labelled.
type answeredLine struct {
	Bench    string `json:"bench"`
	Metric   string `json:"metric_id"`
	Answered int    `json:"answered"`
}

// answeredLines is the labeller's answered rows for each benchmark ×
// metric of the plan, in its order.
func (q *queueResult) answeredLines() []answeredLine {
	out := make([]answeredLine, 0, len(q.progress))
	for _, l := range q.progress {
		out = append(out, answeredLine{Bench: l.Bench, Metric: l.Metric, Answered: q.answered[[2]string{l.Bench, l.Metric}]})
	}
	return out
}

// blindLines drops what only the researcher may see from progress lines.
func blindLines(ls []progressLine) []progressLine {
	out := make([]progressLine, len(ls))
	for i, l := range ls {
		l.MorePresent, l.MoreAbsent, l.Now, l.HalfPlanned = nil, nil, nil, nil
		out[i] = l
	}
	return out
}

// handleStudyQueue answers GET /api/queue: the whole study's queue (or one
// benchmark's, bench=), for the requesting reviewer or the labeler named.
func (s reviewQueue) handleStudyQueue(w http.ResponseWriter, r *http.Request) {
	p := whoOf(r)
	params, bad := s.queueParams(r)
	if bad != "" {
		badParams(w, bad)
		return
	}
	who, err := labellerOf(p, params.labeler)
	if err != nil {
		writeErr(w, http.StatusBadRequest, "%v", err)
		return
	}
	benches, ok := s.benchFilter(r)
	if !ok {
		writeErr(w, http.StatusNotFound, "no such benchmark")
		return
	}
	q := s.studyQueue(who, params, benches)
	blind := s.opts.Blind || p.reviewer()
	first := q.first(maxQueue)
	items := make([]studyItemView, 0, len(first))
	for _, it := range first {
		v := studyItemView{Item: it.Item, Bench: it.bench, Metric: it.Metric}
		if !blind {
			v.ConvID, v.Target, v.Stratum, v.Reason, v.Labels, v.Overlap = it.ConvID, it.Target, it.Stratum, it.Reason, it.Labels, it.Overlap
		}
		items = append(items, v)
	}
	out := map[string]any{"kind": params.kind, "overlap": params.overlap, "blind": blind, "who": who, "items": items,
		"total": q.total(), "mine": q.mine, "half_width": params.halfWidth, "place": s.places.view(who),
		"plan_done": q.planDone()}
	switch {
	case p.reviewer():
		// A reviewer's progress is what they answered. The plan's lines
		// (labelled, planned, more, corrected, unreachable) move with
		// whether a label agreed with the judge: read after each label,
		// they would say the judge's verdict on the row just labelled.
		out["progress"] = q.answeredLines()
	case blind:
		out["progress"], out["unreachable"] = nonNil(blindLines(q.progress)), len(q.unreachable)
	default:
		out["progress"], out["unreachable"], out["labels"] = nonNil(q.progress), nonNil(q.unreachable), q.lines
	}
	notes := s.notesFor(p, q.notes, "%d benchmark(s) could not be read; ask the researcher")
	if params.kind == "triage" {
		notes = append([]string{triageNote}, notes...)
	}
	out["notes"] = notes
	writeJSON(w, http.StatusOK, out)
}

// triageNote heads the triage queue: its labels go into labels.jsonl like
// any other, and calibration assumes a random draw (calibrate flags the
// metrics where the labelled rows are not one).
const triageNote = "These rows are chosen for what they show (a judge panel split, samples that disagree), not drawn at random: " +
	"labels given here count in calibrate like any other and bias the judge's sensitivity and specificity, and the corrected rates with them " +
	"(calibrate says so where it sees it). To calibrate the judge, label from the calibration queue."

// notesFor is how notes on files that cannot be read (a labels file with
// a bad line) reach p: to a reviewer, only how many benchmarks
// (reviewerNote, given the count; a path or a line is the researcher's);
// blind, without a target's name (a bad line's conv_id carries one); else
// as they are. Never null.
func (s reviewQueue) notesFor(p principal, notes []string, reviewerNote string) []string {
	switch {
	case len(notes) == 0:
		return []string{}
	case p.reviewer():
		return []string{fmt.Sprintf(reviewerNote, len(notes))}
	case s.opts.Blind:
		out := make([]string, len(notes))
		for i, n := range notes {
			out[i] = s.scrubTargets(n)
		}
		return out
	}
	return notes
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// nextAnswer is where j, s and "Go back to them" lead.
type nextAnswer struct {
	Item    *string `json:"item"`
	Bench   string  `json:"bench,omitempty"`
	Left    int     `json:"left"`
	Skipped int     `json:"skipped"`
	// PlanDone: with no item, whether that is final (see
	// queueResult.planDone) or the page should ask again later.
	PlanDone bool `json:"plan_done"`
}

// next is who's next item after item after (none: from their current
// place): the first of their queue, in their order, after it that they
// have not skipped — wrapping around, and never after itself.
func (s reviewQueue) next(who string, p queueParams, benches []string, after string) nextAnswer {
	q := s.studyQueue(who, p, benches)
	skipped := s.places.skippedSet(who)
	for k := range q.parts {
		ix := q.parts[k].bq.ix
		for item := range skipped {
			if i, ok := s.itemIndex(ix, item); ok {
				q.parts[k].hide(i)
			}
		}
	}
	ans := nextAnswer{Left: q.total(), Skipped: len(skipped), PlanDone: q.planDone()}
	strict := after != ""
	if !strict {
		after = s.places.view(who).Current
	}
	// The items before after's key (all of them, when after is no item)
	// cannot be the next: the walk starts at its key.
	var from uint64
	if st, ix, i, ok := s.findItem(after); ok {
		from = orderKey(p.seed, who, st.name, ix.convs[i].convID)
	}
	var pick *benchItem
	q.each(from, func(it benchItem) bool {
		if it.Item == after {
			if !strict {
				pick = &it // the current item, still to do: stay there
				return false
			}
			return true
		}
		if it.key > from || (!strict && it.key == from) {
			pick = &it
			return false
		}
		return true
	})
	if pick == nil { // wrap around
		q.each(0, func(it benchItem) bool {
			if it.Item != after {
				pick = &it
				return false
			}
			return true
		})
	}
	if pick != nil {
		ans.Item, ans.Bench = &pick.Item, pick.bench
	}
	return ans
}

// placeRequest is the body of skip, unskip and hold.
type placeRequest struct {
	Item    string `json:"item"`
	Labeler string `json:"labeler"`
}

// studyRequest decodes a place request and resolves who and the queue's
// parameters and benchmarks (from the URL, as GET /api/queue takes them);
// false: the error is answered.
func (s reviewQueue) studyRequest(w http.ResponseWriter, r *http.Request, body any, labeler func() string) (string, queueParams, []string, bool) {
	if body != nil {
		if err := decodeStrict(r, body); err != nil {
			writeErr(w, http.StatusBadRequest, "%v", err)
			return "", queueParams{}, nil, false
		}
	}
	params, bad := s.queueParams(r)
	if bad != "" {
		badParams(w, bad)
		return "", params, nil, false
	}
	given := params.labeler
	if labeler != nil && labeler() != "" {
		given = labeler()
	}
	who, err := labellerOf(whoOf(r), given)
	if err == nil && who == "" {
		err = fmt.Errorf("say who you are (labeler)")
	}
	if err != nil {
		writeErr(w, http.StatusBadRequest, "%v", err)
		return "", params, nil, false
	}
	benches, ok := s.benchFilter(r)
	if !ok {
		writeErr(w, http.StatusNotFound, "no such benchmark")
		return "", params, nil, false
	}
	return who, params, benches, true
}

// handleNext answers GET /api/next?after=ITEM (j): the next item to label.
func (s reviewQueue) handleNext(w http.ResponseWriter, r *http.Request) {
	who, params, benches, ok := s.studyRequest(w, r, nil, nil)
	if !ok {
		return
	}
	writeJSON(w, http.StatusOK, s.next(who, params, benches, r.URL.Query().Get("after")))
}

// handleSkip sets an item aside (it comes back once the rest is done, or
// on unskip), lets go of its hold, and answers the next one.
func (s reviewQueue) handleSkip(w http.ResponseWriter, r *http.Request) {
	var req placeRequest
	who, params, benches, ok := s.studyRequest(w, r, &req, func() string { return req.Labeler })
	if !ok {
		return
	}
	st, ix, i, found := s.findItem(req.Item)
	if !found {
		writeErr(w, http.StatusNotFound, "no such review item (the viewer restarted, or the runs changed): open the queue again")
		return
	}
	s.places.skip(who, req.Item)
	s.shared.release(st, ix.convs[i].convID, who, s.now())
	writeJSON(w, http.StatusOK, s.next(who, params, benches, req.Item))
}

// handleUnskip brings the skipped items back and answers the first.
func (s reviewQueue) handleUnskip(w http.ResponseWriter, r *http.Request) {
	var req placeRequest
	who, params, benches, ok := s.studyRequest(w, r, &req, func() string { return req.Labeler })
	if !ok {
		return
	}
	s.places.unskip(who)
	writeJSON(w, http.StatusOK, s.next(who, params, benches, ""))
}

// handleHold is the open review form holding its item (renewed while it
// stays open): the item is who's current place, and others' queues leave
// it out until the form closes or the hold lapses.
func (s reviewQueue) handleHold(w http.ResponseWriter, r *http.Request) {
	var req placeRequest
	who, _, _, ok := s.studyRequest(w, r, &req, func() string { return req.Labeler })
	if !ok {
		return
	}
	st, ix, i, found := s.findItem(req.Item)
	if !found {
		writeErr(w, http.StatusNotFound, "no such review item (the viewer restarted, or the runs changed): open the queue again")
		return
	}
	if whoOf(r).reviewer() && !s.reviewerMay(who, st, ix, i, req.Item) {
		// Not hers to label (others' labels took it out of her queue after
		// it was answered to her page, or it never was in it): nothing is
		// held, and the page moves on, as from a busy item. Her label on it
		// is refused (403).
		writeJSON(w, http.StatusOK, map[string]any{"held": false, "gone": true})
		return
	}
	held, holder := s.take(who, st, ix, i, req.Item)
	if !held && holder != "" && !s.labelledBy(who, st, ix, i) {
		// Another's form opened it first: the row is theirs to label (the
		// label is refused, heldAway), and the page moves on. It does not
		// become this labeller's place either.
		writeJSON(w, http.StatusOK, map[string]any{"held": false, "busy": true, "renew_s": holdRenew.Seconds()})
		return
	}
	s.places.open(who, req.Item)
	writeJSON(w, http.StatusOK, map[string]any{"held": held, "renew_s": holdRenew.Seconds()})
}

// heldAway reports whether someone other than who has item (the
// conversation i of st) open in their review form, and who has not
// labelled it before: the first to open a row's form labels it, so two
// people do not both label a row the plan asked of one.
func (s reviewQueue) heldAway(who string, st *benchState, ix *benchIndex, i int, item string) bool {
	return s.heldByOther(who, st, ix, i, item, s.now()) && !s.labelledBy(who, st, ix, i)
}

// labelledBy reports whether who has labelled the conversation i of st (a
// labels file that cannot be read says no: the label is refused when it
// is appended, saying why).
func (s reviewQueue) labelledBy(who string, st *benchState, ix *benchIndex, i int) bool {
	ls, err := s.labelsOf(st)
	if err != nil {
		return false
	}
	for _, l := range ls {
		if l.Labeler == who && l.ConvID == ix.convs[i].convID {
			return true
		}
	}
	return false
}

// handleMe says who the token is, and the labeller's place (a
// reviewer's own; the researcher's under the labeler named).
func (s reviewQueue) handleMe(w http.ResponseWriter, r *http.Request) {
	p := whoOf(r)
	reveal := s.opts.Reveal
	if p.reviewer() {
		reveal = RevealNever
	}
	who, err := labellerOf(p, r.URL.Query().Get("labeler"))
	if err != nil {
		writeErr(w, http.StatusBadRequest, "%v", err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"role": p.role, "name": p.name, "team": s.team(),
		"blind": s.opts.Blind || p.reviewer(), "reveal": reveal, "place": s.places.view(who)})
}

// mineRow is one of the labeller's own labels, blind: by item, not by
// conversation.
type mineRow struct {
	Item        string `json:"item"`
	Bench       string `json:"bench"`
	Metric      string `json:"metric_id"`
	Present     bool   `json:"present"`
	Note        string `json:"note"`
	At          string `json:"at"`
	AfterReveal bool   `json:"after_reveal,omitempty"`
}

// handleMine lists the labeller's own latest label of each row
// ({labels, notes}): a benchmark whose labels file cannot be read is a
// note (notesFor), never left out without a word.
func (s reviewQueue) handleMine(w http.ResponseWriter, r *http.Request) {
	who, err := labellerOf(whoOf(r), r.URL.Query().Get("labeler"))
	if err != nil {
		writeErr(w, http.StatusBadRequest, "%v", err)
		return
	}
	out := []mineRow{}
	var notes []string
	stale := 0
	for _, name := range s.benchNames() {
		st := s.bench(name)
		if st == nil || who == "" {
			continue
		}
		ix := st.index(s.Server)
		raw, err := s.readLabelsOf(st)
		if err != nil {
			notes = append(notes, err.Error())
			continue
		}
		ls := currentLabels(ix, raw)
		stale += staleRows(raw, ls, who)
		latest := map[string]int{}
		var order []string
		for k, l := range ls {
			if l.Labeler != who {
				continue
			}
			if _, ok := latest[l.ConvID]; !ok {
				order = append(order, l.ConvID)
			}
			latest[l.ConvID] = k
		}
		for _, id := range order {
			l := ls[latest[id]]
			i, ok := ix.byConvID[id]
			if !ok {
				continue
			}
			out = append(out, mineRow{Item: s.itemOfConv(ix, i), Bench: name, Metric: l.MetricID, Present: l.Present, Note: l.Note,
				At: l.At.UTC().Format("2006-01-02T15:04:05Z"), AfterReveal: l.AfterReveal})
		}
	}
	notes = s.notesFor(whoOf(r), notes, "%d benchmark(s) could not be read, so your labels there are not listed; ask the researcher")
	if stale > 0 {
		notes = append(notes, fmt.Sprintf("%d of your labels are not listed: their conversations were run again after you labelled them, "+
			"so those labels no longer count, and the rows come back to the review queue to be labelled again", stale))
	}
	writeJSON(w, http.StatusOK, map[string]any{"labels": out, "notes": notes})
}

// staleRows counts the rows who labelled (in raw) that have no label of
// theirs among the current labels (currentLabels: run again since).
func staleRows(raw, current []Label, who string) int {
	now := map[string]bool{}
	for _, l := range current {
		if l.Labeler == who {
			now[l.ConvID] = true
		}
	}
	gone := map[string]bool{}
	for _, l := range raw {
		if l.Labeler == who && !now[l.ConvID] {
			gone[l.ConvID] = true
		}
	}
	return len(gone)
}

// reviewerMay reports whether reviewer who may hold or label item (the
// conversation i of st): it is in their queue (their promised one,
// promise.go; whoever has it open now),
// they hold it already (their form was open when others' labels took it
// out of the queue), or they labelled it before (a changed mind). An item
// that left their queue before they opened it, or was never in it, is not
// theirs: the plan asked it of others.
func (s reviewQueue) reviewerMay(who string, st *benchState, ix *benchIndex, i int, item string) bool {
	if s.holding(who, st, ix, i, item, s.now()) {
		return true
	}
	if _, err := s.labelsOf(st); err != nil {
		return true // the label is refused when it is appended, saying why
	}
	if s.labelledBy(who, st, ix, i) {
		return true
	}
	p := queueParams{kind: "calibration", seed: s.opts.Seed, overlap: s.opts.Overlap, halfWidth: s.opts.PlanHalfWidth, keepHeld: true, promised: true}
	for _, part := range s.studyQueue(who, p, []string{st.name}).parts {
		if j, ok := s.itemIndex(part.bq.ix, item); ok && part.bq.in[j] {
			return true
		}
	}
	return false
}

// errNotYours answers a reviewer's hold or label on an item reviewerMay refuses.
const errNotYours = "this item is not in your queue (others' labels took it, or it was never asked of you): j for your next item"

// errHeldAway answers a label on an item another labeller has open (heldAway).
const errHeldAway = "another reviewer opened this item first and labels it: j for your next item"

// writeLost refuses a label on an item that is not the asker's to label:
// "gone" (errNotYours), "busy" (errHeldAway). The page reads lost and
// moves on to the next item, saying why, as when its hold finds the item
// busy or gone; the error says the same to anyone else.
func writeLost(w http.ResponseWriter, status int, prefix, lost string) {
	msg := errNotYours
	if lost == "busy" {
		msg = errHeldAway
	}
	writeJSON(w, status, map[string]string{"error": prefix + msg, "lost": lost})
}

// findItem resolves an item id over every benchmark.
func (s reviewQueue) findItem(id string) (*benchState, *benchIndex, int, bool) {
	if !strings.HasPrefix(id, "r") || len(id) != itemIDLen+1 {
		return nil, nil, 0, false
	}
	for _, name := range s.benchNames() {
		st := s.bench(name)
		if st == nil {
			continue
		}
		ix := st.index(s.Server)
		if i, ok := s.itemIndex(ix, id); ok {
			return st, ix, i, true
		}
	}
	return nil, nil, 0, false
}

// maxBody bounds a request body.
const maxBody = 64 << 10

// decodeStrict reads a JSON request body into v: one object, no key twice,
// nothing after it, no field v does not have.
func decodeStrict(r *http.Request, v any) error { return decodeStrictN(r, v, maxBody) }

// decodeStrictN is decodeStrict for a body of at most limit bytes.
func decodeStrictN(r *http.Request, v any, limit int64) error {
	b, err := io.ReadAll(io.LimitReader(r.Body, limit+1))
	if err != nil {
		return err
	}
	if int64(len(b)) > limit {
		return fmt.Errorf("the request body is over %d KiB", limit>>10)
	}
	if err := labels.CheckObject(b); err != nil {
		return err
	}
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.DisallowUnknownFields()
	err = dec.Decode(v)
	// Say which field and what it wants, in the request's words, not Go's
	// ("cannot unmarshal string into Go struct field studyLabel.present").
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) && te.Field != "" {
		return fmt.Errorf("%s: want %s, got a JSON %s", te.Field, jsonKind(te.Type.Kind()), te.Value)
	}
	return err
}

// jsonKind names a Go kind as the JSON a request should send for it.
func jsonKind(k reflect.Kind) string {
	switch k {
	case reflect.Bool:
		return "true or false"
	case reflect.String:
		return "a string"
	case reflect.Int, reflect.Int64, reflect.Int32, reflect.Uint, reflect.Uint64, reflect.Float64:
		return "a number"
	case reflect.Slice, reflect.Array:
		return "an array"
	}
	return "an object"
}
