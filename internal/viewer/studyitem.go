package viewer

import (
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/impactbench/impactbench/internal/labels"
	"github.com/impactbench/impactbench/internal/layout"
	"github.com/impactbench/impactbench/internal/report"
)

// reviewItem builds the review page's view of conversation i: blind, the
// metric, the scenario without its id (an id is a key to the run pages),
// the transcript and the labeller's own label; else also the
// conversation's identity, the judges and everyone's labels.
func (s reviewQueue) reviewItem(st *benchState, ix *benchIndex, i int, id, who string, blind bool) (*reviewView, error) {
	cv, err := ix.readConv(i, true)
	if err != nil {
		return nil, err
	}
	ls, err := s.labelsOf(st)
	if err != nil {
		return nil, err
	}
	v := &reviewView{Item: id, Bench: st.name, Blind: blind, Metric: cv.Metric, Status: cv.Status, StatusReason: cv.StatusReason,
		Transcript: cv.Transcript, Scenario: cv.Scenario}
	if who != "" {
		for _, l := range ls {
			if l.ConvID == cv.ConvID && l.Labeler == who {
				v.Mine = &myLabel{Present: l.Present, Labeler: l.Labeler, Note: l.Note, At: l.At, AfterReveal: l.AfterReveal}
			}
		}
	}
	if blind {
		// A failure reason may quote a provider's error, which names the model.
		v.StatusReason = ""
		if v.Scenario != nil {
			sc := *v.Scenario
			sc.ID, sc.System = "", ""
			v.Scenario = &sc
		}
		return v, nil
	}
	v.ConvID, v.Target, v.Sample = cv.ConvID, cv.Target, intPtr(cv.Sample)
	v.Marks = cv.Marks
	v.Score = revealOf(cv.Score)
	v.Highlights = report.Highlights(cv.Transcript, cv.Score)
	v.Labels = labelsFor(ls, cv.ConvID)
	return v, nil
}

// handleStudyItem answers GET /api/item?id=ITEM: one review item of any
// benchmark. Viewing does not hold it (only an open form does: hold).
func (s reviewQueue) handleStudyItem(w http.ResponseWriter, r *http.Request) {
	p := whoOf(r)
	id := r.URL.Query().Get("id")
	st, ix, i, ok := s.findItem(id)
	if !ok {
		writeErr(w, http.StatusNotFound, "no such review item (the viewer restarted, or the runs changed): open the queue again")
		return
	}
	who, err := labellerOf(p, r.URL.Query().Get("labeler"))
	if err != nil {
		writeErr(w, http.StatusBadRequest, "%v", err)
		return
	}
	v, err := s.reviewItem(st, ix, i, id, who, s.opts.Blind || p.reviewer())
	if err != nil {
		s.fail(w, r, http.StatusConflict, err)
		return
	}
	if who != "" {
		s.places.open(who, id) // their place (k goes back to it), not a hold
	}
	writeJSON(w, http.StatusOK, v)
}

// studyLabel is what the review form posts to /api/label.
type studyLabel struct {
	Item    string `json:"item"`
	Present *bool  `json:"present"`
	Labeler string `json:"labeler"`
	Note    string `json:"note"`
}

// handleStudyLabel records a label on an item of any benchmark.
func (s reviewQueue) handleStudyLabel(w http.ResponseWriter, r *http.Request) {
	p := whoOf(r)
	var req studyLabel
	if err := decodeStrict(r, &req); err != nil {
		writeErr(w, http.StatusBadRequest, "label: %v", err)
		return
	}
	if req.Present == nil {
		writeErr(w, http.StatusBadRequest, "label: present is required (true or false)")
		return
	}
	who, err := labellerOf(p, req.Labeler)
	if err != nil {
		writeErr(w, http.StatusBadRequest, "label: %v", err)
		return
	}
	if req.Item == "" {
		writeErr(w, http.StatusBadRequest, "label: item is required (the review item's id, as the queue gives it)")
		return
	}
	st, ix, i, ok := s.findItem(req.Item)
	if !ok {
		writeErr(w, http.StatusBadRequest, "label: unknown review item (the viewer restarted, or the runs changed): open the queue again")
		return
	}
	if p.reviewer() && !s.reviewerMay(who, st, ix, i, req.Item) {
		writeLost(w, http.StatusForbidden, "label: ", "gone")
		return
	}
	if who != "" && s.heldAway(who, st, ix, i, req.Item) {
		writeLost(w, http.StatusConflict, "label: ", "busy")
		return
	}
	out, code, err := s.saveLabel(st, ix, i, p, who, *req.Present, req.Note)
	if err != nil {
		s.fail(w, r, code, err)
		return
	}
	s.places.labelled(who, req.Item)
	s.shared.release(st, ix.convs[i].convID, who, s.now())
	writeJSON(w, http.StatusCreated, out)
}

// labelError is a label the viewer refuses (a 4xx, not the server's fault).
type labelError struct{ msg string }

func (e *labelError) Error() string { return e.msg }

// saveLabel appends who's label on conversation i and answers what the
// principal may see: the label back, and — unless blind with reveal never,
// or a reviewer — the judges' verdict. The line records whether that
// answer showed the verdict (verdict_shown), and the label is stored with
// after_reveal when the person had been shown the verdict on this row
// before giving it: blind review off (every page showed it), or an earlier
// label of theirs on the row was saved with it shown (seenBefore). What was
// shown is recorded, not inferred from how the viewer is set now: a
// restart with other settings changes neither.
func (s reviewQueue) saveLabel(st *benchState, ix *benchIndex, i int, p principal, who string, present bool, note string) (map[string]any, int, error) {
	c := &ix.convs[i]
	if err := checkConvID(ix, i); err != nil {
		return nil, http.StatusBadRequest, err
	}
	blind := s.opts.Blind || p.reviewer()
	shown := !p.reviewer() && !(blind && s.opts.Reveal == RevealNever)
	// The verdict the answer will show, read before the line is written so
	// that the line can say whether it was shown (a row not judged yet,
	// or not readable now, shows none).
	var judged *convView
	if shown {
		if v, err := ix.readConv(i, true); err == nil {
			judged = v
		}
	}
	verdictShown := judged != nil && judged.Score != nil
	// A file that cannot be read (a bad line; a link Append will refuse)
	// is Append's to answer, as before labels were read here.
	ls, _ := s.labelsOf(st)
	afterReveal := (!blind && verdictShown) || seenBefore(ls, c.convID, who, shown)
	// The label records the transcript its labeller read: a conversation
	// run again later has another, and the label then no longer counts.
	digest, ok := ix.digestOf(i)
	if !ok {
		return nil, http.StatusConflict, errChanged
	}
	l := Label{ConvID: c.convID, MetricID: c.metric, Present: present, Labeler: who, Note: note,
		At: s.now().UTC().Truncate(time.Second), AfterReveal: afterReveal, VerdictShown: &verdictShown, Transcript: digest}
	if err := checkLabel(l); err != nil {
		return nil, http.StatusBadRequest, &labelError{"label: " + err.Error()}
	}
	if err := st.labels.Append(l); err != nil {
		var le *labels.Error
		if errors.As(err, &le) || strings.Contains(err.Error(), "label: ") {
			return nil, http.StatusBadRequest, err
		}
		return nil, http.StatusInternalServerError, err
	}
	out := map[string]any{"item": s.itemOfConv(ix, i), "label": myLabel{Present: l.Present, Labeler: l.Labeler, Note: l.Note, At: l.At, AfterReveal: l.AfterReveal}}
	if !blind {
		out["label"] = l
	}
	if judged == nil {
		return out, 0, nil
	}
	out["score"] = revealOf(judged.Score)
	if !blind {
		out["score"] = judged.Score
	}
	out["highlights"] = report.Highlights(judged.Transcript, judged.Score)
	return out, 0, nil
}

// seenBefore reports whether who had been shown the judges' verdict on
// conversation conv before: a line of theirs on it says the verdict was
// shown with it (verdict_shown), or that it was itself given after the
// verdict was shown (after_reveal). A line that does not say
// (hand-written, or written before lines recorded it) counts as shown when
// the viewer shows the verdict to this principal now — the rule such lines
// were always read by.
func seenBefore(ls []Label, conv, who string, shownNow bool) bool {
	for _, l := range ls {
		if l.ConvID != conv || l.Labeler != who {
			continue
		}
		if l.AfterReveal || l.VerdictShown != nil && *l.VerdictShown || l.VerdictShown == nil && shownNow {
			return true
		}
	}
	return false
}

// fail answers an error; to a reviewer, with every target name the viewer
// knows taken out (a file's path or a conv_id in a message would name one).
func (s *Server) fail(w http.ResponseWriter, r *http.Request, code int, err error) {
	msg := err.Error()
	if whoOf(r).reviewer() {
		msg = s.scrubTargets(msg)
	}
	writeErr(w, code, "%s", msg)
}

// scrubTargets replaces every target name of every benchmark (run
// directories, configured and playable targets) in msg.
func (s *Server) scrubTargets(msg string) string {
	var names []string
	for _, b := range s.benchNames() {
		names = append(names, runTargetNames(layout.BenchDir(s.opts.ProjectDir, b))...)
	}
	for _, t := range s.opts.Settings.Targets {
		names = append(names, t.ID, t.Model)
	}
	if s.opts.Play != nil {
		names = append(names, s.opts.Play.Targets()...)
	}
	return scrub(msg, names)
}

// scrub replaces each of names in msg with "a model", longest first (a
// name may hold a shorter one).
func scrub(msg string, names []string) string {
	names = slices.DeleteFunc(slices.Clone(names), func(n string) bool { return n == "" })
	slices.SortFunc(names, func(a, b string) int { return len(b) - len(a) })
	for _, n := range names {
		msg = strings.ReplaceAll(msg, n, "a model")
	}
	return msg
}

// checkConvID refuses to label a conversation whose conv_id is not an id
// or does not name the run it was found in (<scenario>__<target>__s<n>):
// a crafted conversations.json row is not a conversation to label, and the
// request is the client's problem to see (400), not the server's.
func checkConvID(ix *benchIndex, i int) error {
	c := &ix.convs[i]
	if why := convIDProblem(c.convID, c.id, ix.runs[c.target].target, c.sample); why != "" {
		return &labelError{fmt.Sprintf("label: this conversation's conv_id is not one to label (%s); fix %s", why, layout.RunFileRel("<target>", layout.ConversationsFile))}
	}
	return nil
}
