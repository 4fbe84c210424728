package viewer

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base32"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/impactbench/impactbench/internal/artifacts"
	"github.com/impactbench/impactbench/internal/results"
)

// Review items. A reviewer works on items, not conversations: an item id
// is an HMAC of the conversation id under a key that never leaves the
// server, so a review URL, a queue answer or a label request names a
// conversation without saying which target answered it (a conv_id holds
// the target's name). The server maps ids back; a changed key (a restart)
// only means the page fetches its queue again.

// reviewQueue is the handlers of review and calibration: the queues (one
// benchmark's, or the study's across benchmarks), review items and labels.
// It is the Server seen from the review pages (the handlers are grouped by
// page so that no type carries every handler of the viewer).
type reviewQueue struct{ *Server }

// itemIDLen is the length of an item id (base32 of 80 bits).
const itemIDLen = 16

var itemEnc = base32.StdEncoding.WithPadding(base32.NoPadding)

// itemID is conversation convID's opaque id.
func itemID(key []byte, bench, convID string) string {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(bench))
	m.Write([]byte{0})
	m.Write([]byte(convID))
	return "r" + strings.ToLower(itemEnc.EncodeToString(m.Sum(nil))[:itemIDLen])
}

// items builds the index's id maps once.
func (ix *benchIndex) items(key []byte) {
	ix.itemsOnce.Do(func() {
		ix.itemOf = make(map[string]int, len(ix.convs))
		ix.itemIDs = make([]string, len(ix.convs))
		for i := range ix.convs {
			id := itemID(key, ix.name, ix.convs[i].convID)
			ix.itemOf[id] = i
			ix.itemIDs[i] = id
		}
	})
}

// itemIndex resolves an item id; ok is false for an unknown one.
func (s reviewQueue) itemIndex(ix *benchIndex, id string) (int, bool) {
	ix.items(s.itemKey)
	i, ok := ix.itemOf[id]
	return i, ok
}

func (s reviewQueue) itemOfConv(ix *benchIndex, i int) string {
	ix.items(s.itemKey)
	return ix.itemIDs[i]
}

// reviewView is an item as the review page shows it. In blind mode it
// carries nothing that names the target, the judges' verdicts or anyone
// else's labels: the metric, the scenario (the same for every target) and
// the transcript. Outside blind mode it also has the conversation's
// identity, the judges and the labels, and where the judges' quotes are.
type reviewView struct {
	Item         string           `json:"item"`
	Bench        string           `json:"bench"`
	Blind        bool             `json:"blind"`
	Metric       metricView       `json:"metric"`
	Status       string           `json:"status"`
	StatusReason string           `json:"status_reason,omitempty"`
	Transcript   []artifacts.Turn `json:"transcript"`
	Scenario     *scenarioView    `json:"scenario,omitempty"`
	// Marks (outside blind mode only) are what the row stores about
	// single messages. Blind, they are withheld: a provider's safety stop
	// hints at which provider, and so which target, wrote the reply.
	Marks *turnMarks `json:"marks,omitempty"`
	// Mine is this labeller's own latest label on the item (to re-label).
	Mine *myLabel `json:"mine,omitempty"`

	ConvID     string           `json:"conv_id,omitempty"`
	Target     string           `json:"target,omitempty"`
	Sample     *int             `json:"sample,omitempty"`
	Score      *revealScore     `json:"score,omitempty"`
	Highlights [][3]int         `json:"highlights,omitempty"`
	Labels     []Label          `json:"labels,omitempty"`
	Raw        *artifacts.Score `json:"-"`
}

// myLabel is a label without the conversation's id.
type myLabel struct {
	Present     bool      `json:"present"`
	Labeler     string    `json:"labeler"`
	Note        string    `json:"note"`
	At          time.Time `json:"at"`
	AfterReveal bool      `json:"after_reveal,omitempty"`
}

// revealScore is the judges' verdict as a reviewer may see it: what they
// said and quoted, not which target or row it was.
type revealScore struct {
	Present       *bool                    `json:"present"`
	Passed        *bool                    `json:"passed"`
	Justification string                   `json:"justification"`
	NullReason    string                   `json:"null_reason,omitempty"`
	Judges        []artifacts.JudgeVerdict `json:"judges,omitempty"`
	Evidence      []artifacts.Quote        `json:"evidence,omitempty"`
	Unverified    *bool                    `json:"unverified,omitempty"`
}

func revealOf(s *artifacts.Score) *revealScore {
	if s == nil {
		return nil
	}
	return &revealScore{Present: s.Present, Passed: s.Passed, Justification: s.Justification, NullReason: s.NullReason,
		Judges: s.Judges, Evidence: s.Evidence, Unverified: s.Unverified}
}

// blindNow: the review API withholds verdicts, targets and others' labels.
func (s reviewQueue) blindNow() bool { return s.opts.Blind }

// handleItem answers one benchmark's review item (the researcher's API;
// the page uses /api/item). Viewing does not hold it.
func (s reviewQueue) handleItem(w http.ResponseWriter, r *http.Request, st *benchState) {
	ix := st.index(s.Server)
	id := r.URL.Query().Get("id")
	i, ok := s.itemIndex(ix, id)
	if !ok {
		writeErr(w, http.StatusNotFound, "no such review item (the viewer restarted, or the runs changed): open the queue again")
		return
	}
	v, err := s.reviewItem(st, ix, i, id, strings.TrimSpace(r.URL.Query().Get("labeler")), s.blindNow())
	if err != nil {
		writeErr(w, http.StatusConflict, "%v", err)
		return
	}
	writeJSON(w, http.StatusOK, v)
}

// handleResolve maps a conversation id to its review item (the way in
// from a conversation page or an old link).
func (s reviewQueue) handleResolve(w http.ResponseWriter, r *http.Request, st *benchState) {
	ix := st.index(s.Server)
	i, ok := ix.byConvID[r.URL.Query().Get("conv")]
	if !ok {
		writeErr(w, http.StatusNotFound, "no such conversation")
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"item": s.itemOfConv(ix, i)})
}

// queueParams are a queue request's options.
type queueParams struct {
	kind, labeler string
	seed          uint64
	per           int
	overlap       float64
	halfWidth     float64
	// keepHeld keeps the items others have open (reviewerMay).
	keepHeld bool
	// promised: the queue is a reviewer's, her promised one (promise.go).
	promised bool
}

func (s reviewQueue) queueParams(r *http.Request) (queueParams, string) {
	q := r.URL.Query()
	p := queueParams{kind: q.Get("kind"), labeler: strings.TrimSpace(q.Get("labeler")), seed: s.opts.Seed,
		overlap: s.opts.Overlap, halfWidth: s.opts.PlanHalfWidth, promised: whoOf(r).reviewer()}
	if whoOf(r).reviewer() {
		// A reviewer's queue is the study's calibration queue as the
		// researcher set it. Another kind or draw would say what the
		// blind answers withhold: the triage queue holds the rows where
		// judges disagree, and per=1 under a few seeds sorts the items by
		// stratum (target × judge verdict).
		for _, k := range reviewerFixed {
			if q.Has(k) && !(k == "kind" && q.Get(k) == "calibration") {
				return p, reviewerParamsRefused
			}
		}
	}
	if p.kind == "" {
		p.kind = "calibration"
	}
	if p.kind != "calibration" && p.kind != "triage" {
		return p, "kind: want calibration or triage"
	}
	if v := q.Get("seed"); v != "" {
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			return p, "seed: want a non-negative integer"
		}
		p.seed = n
	}
	if v := q.Get("per"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 1000 {
			return p, "per: want 1 to 1000 conversations per stratum"
		}
		p.per = n
	}
	if v := q.Get("overlap"); v != "" {
		f, err := strconv.ParseFloat(v, 64)
		if err != nil || f < 0 || f > 1 {
			return p, "overlap: want a share between 0 and 1"
		}
		p.overlap = f
	}
	if v := q.Get("width"); v != "" {
		f, err := strconv.ParseFloat(v, 64)
		if err != nil || !(f > 0 && f < 1) {
			return p, "width: want a half-width between 0 and 1 (0.1 = ±10 points)"
		}
		p.halfWidth = f
	}
	return p, ""
}

// reviewerFixed are the queue parameters a reviewer may not set (kind
// only to calibration, the page's default).
var reviewerFixed = []string{"kind", "seed", "per", "overlap", "width"}

// reviewerParamsRefused answers a reviewer's request that sets one of them.
const reviewerParamsRefused = "a reviewer's queue is the study's calibration queue as the researcher set it: kind, seed, per, overlap and width are not yours to set"

// badParams answers a queue request refused by queueParams: 403 for a
// parameter a reviewer may not set, else 400.
func badParams(w http.ResponseWriter, bad string) {
	code := http.StatusBadRequest
	if bad == reviewerParamsRefused {
		code = http.StatusForbidden
	}
	writeErr(w, code, "%s", bad)
}

// planMetric is one metric's line of the queue's plan. In blind mode only
// the total is given: the split by judge verdict is the researcher's.
type planLine struct {
	Metric      string   `json:"metric_id"`
	More        int      `json:"more"`
	MorePresent *int     `json:"more_present,omitempty"`
	MoreAbsent  *int     `json:"more_absent,omitempty"`
	Now         *float64 `json:"half_width_now,omitempty"`
	Planned     *float64 `json:"half_width_planned,omitempty"`
	Reachable   bool     `json:"reachable"`
}

// handleQueue answers one benchmark's queue (the researcher's API; the
// page uses /api/queue): its items for this labeller, and, for the
// calibration queue, the plan it was drawn to reach.
func (s reviewQueue) handleQueue(w http.ResponseWriter, r *http.Request, st *benchState) {
	p, bad := s.queueParams(r)
	if bad != "" {
		badParams(w, bad)
		return
	}
	ix := st.index(s.Server)
	ls, err := s.labelsOf(st)
	if err != nil {
		writeErr(w, http.StatusConflict, "%v", err)
		return
	}
	q := s.studyQueue(p.labeler, p, []string{st.name})
	out := map[string]any{"kind": p.kind, "overlap": p.overlap, "blind": s.blindNow()}
	if p.kind == "calibration" && p.per == 0 {
		plan := planOf(ix, ls, p.halfWidth)
		out["plan"] = planLines(plan, s.blindNow())
		out["half_width"] = plan.HalfWidth
	}
	items := make([]queueItem, 0, min(q.total(), maxQueue))
	for _, it := range q.first(maxQueue) {
		if s.blindNow() {
			it.queueItem = queueItem{Item: it.Item, Metric: it.Metric}
		}
		items = append(items, it.queueItem)
	}
	out["items"], out["total"], out["mine"] = items, q.total(), q.mine
	if !s.blindNow() {
		out["labels"] = len(ls)
	}
	writeJSON(w, http.StatusOK, out)
}

func planLines(plan results.LabelPlan, blind bool) []planLine {
	var out []planLine
	for _, e := range plan.Metrics {
		m := e.Value
		l := planLine{Metric: e.Key, More: m.MorePresent + m.MoreAbsent, Reachable: m.Reachable}
		if !blind {
			l.MorePresent, l.MoreAbsent = intPtr(m.MorePresent), intPtr(m.MoreAbsent)
			l.Now, l.Planned = m.HalfWidthNow, m.HalfWidthPlanned
		}
		out = append(out, l)
	}
	if out == nil {
		out = []planLine{}
	}
	return out
}

func intPtr(n int) *int { return &n }
