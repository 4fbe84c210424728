package viewer

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"

	"github.com/impactbench/impactbench/internal/artifacts"
	"github.com/impactbench/impactbench/internal/fsx"
	"github.com/impactbench/impactbench/internal/ids"
	"github.com/impactbench/impactbench/internal/layout"
	"github.com/impactbench/impactbench/internal/report"
)

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func writeErr(w http.ResponseWriter, status int, format string, args ...any) {
	writeJSON(w, status, map[string]string{"error": fmt.Sprintf(format, args...)})
}

type benchInfo struct {
	Name    string   `json:"name"`
	Title   string   `json:"title"`
	Targets []string `json:"targets"`
	Results bool     `json:"results"`
	Report  bool     `json:"report"`
}

// reviewerBench is a benchmark as a reviewer's link lists it: no targets
// (run directories are named after them) and nothing about results.
type reviewerBench struct {
	Name  string `json:"name"`
	Title string `json:"title"`
}

// handleBenches lists benchmarks from cheap facts only (no index loads), so
// the home page is instant however large the runs are. A benchmark added
// while the viewer runs is listed at once.
func (s *Server) handleBenches(w http.ResponseWriter, r *http.Request) {
	if whoOf(r).reviewer() {
		out := []reviewerBench{}
		for _, name := range s.benchNames() {
			out = append(out, reviewerBench{Name: name, Title: benchTitle(layout.BenchDir(s.opts.ProjectDir, name), name)})
		}
		writeJSON(w, http.StatusOK, out)
		return
	}
	out := []benchInfo{}
	for _, name := range s.benchNames() {
		dir := layout.BenchDir(s.opts.ProjectDir, name)
		bi := benchInfo{Name: name, Title: benchTitle(dir, name), Targets: runTargetNames(dir)}
		if bi.Targets == nil {
			bi.Targets = []string{}
		}
		_, err := os.Stat(layout.Bench{Dir: dir}.Results())
		bi.Results = err == nil
		_, err = os.Stat(layout.Bench{Dir: dir}.Report())
		bi.Report = err == nil
		out = append(out, bi)
	}
	writeJSON(w, http.StatusOK, out)
}

// benchTitle is benchmark.yaml's name, else the directory's.
func benchTitle(dir, name string) string {
	if b, err := report.LoadBenchmark(layout.BenchmarkPath(dir)); err == nil && b.Name != "" {
		return b.Name
	}
	return name
}

func (s *Server) handleProgress(w http.ResponseWriter, r *http.Request, st *benchState) {
	ix := st.index(s)
	pv := s.progress(st, ix)
	if labels, err := st.labels.List(); err == nil {
		pv.Labels = len(labels)
	} else {
		pv.Notes = append(pv.Notes, err.Error())
	}
	writeJSON(w, http.StatusOK, pv)
}

func (s *Server) handleSummary(w http.ResponseWriter, r *http.Request, st *benchState) {
	ix := st.index(s)
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	_, _ = w.Write(ix.summary)
}

// listRow is one conversation in the list.
type listRow struct {
	ConvID  string `json:"conv_id"`
	Scen    string `json:"scenario"`
	Goal    string `json:"goal"`
	Target  string `json:"target"`
	Metric  string `json:"metric_id"`
	Sample  int    `json:"sample"`
	Verdict int    `json:"verdict"`
	Status  string `json:"status"`
	Turns   int    `json:"turns"`
	Split   bool   `json:"judges_split,omitempty"`
	// Unverified: the verdict's quoted evidence was not found; Human: the
	// labellers' majority (present, absent, tie), when labelled.
	Unverified bool   `json:"unverified,omitempty"`
	Human      string `json:"human,omitempty"`
}

const maxPage = 200

// listFilters are the conversation list's "show" choices.
var listFilters = map[string]bool{"": true, "split": true, "disagree": true, "unverified": true, "unlabelled": true, "labelled": true}

// handleConvs serves one page (offset, limit) of the bench's conversations
// that pass the query's filter, with the targets and metrics to filter by.
func (s *Server) handleConvs(w http.ResponseWriter, r *http.Request, st *benchState) {
	ix := st.index(s)
	q := r.URL.Query()
	f, ok := parseConvFilter(w, q, st, ix)
	if !ok {
		return
	}
	off, _ := strconv.Atoi(q.Get("offset"))
	lim, _ := strconv.Atoi(q.Get("limit"))
	if lim <= 0 || lim > maxPage {
		lim = 50
	}
	off = max(off, 0)
	rows := []listRow{}
	matched := 0
	for i := range ix.convs {
		c := &ix.convs[i]
		goal, keep := f.keep(ix, i)
		if !keep {
			continue
		}
		if matched >= off && len(rows) < lim {
			lr := listRow{ConvID: c.convID, Scen: c.id, Goal: goal, Target: ix.runs[c.target].target, Metric: c.metric,
				Sample: c.sample, Verdict: c.verdict, Status: c.status, Turns: c.turns, Split: judgesSplit(c.judges), Unverified: c.unverified}
			if h, ok := f.human[c.convID]; ok {
				lr.Human = verdictWord(h)
			}
			rows = append(rows, lr)
		}
		matched++
	}
	targets := make([]string, len(ix.runs))
	for i, r := range ix.runs {
		targets[i] = r.target
	}
	metrics := []string{}
	for _, m := range ix.bench.Metrics {
		metrics = append(metrics, m.ID)
	}
	writeJSON(w, http.StatusOK, map[string]any{"total": len(ix.convs), "matched": matched, "offset": off,
		"rows": rows, "targets": targets, "metrics": metrics})
}

// convFilter is what the conversation list is narrowed to: a target, a
// metric, a verdict (-1: any), a text in the id or goal (lower case), a
// "show" filter with the labellers' majorities it needs, and the
// transcripts a full-text search hit (nil: no search).
type convFilter struct {
	target, metric, query, show string
	verdict                     int
	human                       map[string]*bool // conv_id → the labellers' majority (nil: tie)
	textHits                    []bool
}

// parseConvFilter reads the list's filter from query q; on a bad value, or
// labels or transcripts it cannot read, it writes the error response and
// returns false.
func parseConvFilter(w http.ResponseWriter, q url.Values, st *benchState, ix *benchIndex) (*convFilter, bool) {
	f := &convFilter{target: q.Get("target"), metric: q.Get("metric"), query: strings.ToLower(q.Get("q")), show: q.Get("show"), verdict: -1}
	if v := q.Get("verdict"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 || n > verdictUnscored {
			writeErr(w, http.StatusBadRequest, "verdict: want 0 (fail), 1 (pass), 2 (null) or 3 (unscored)")
			return nil, false
		}
		f.verdict = n
	}
	if !listFilters[f.show] {
		writeErr(w, http.StatusBadRequest, "show: want split, disagree, unverified, unlabelled or labelled")
		return nil, false
	}
	if f.show == "disagree" || f.show == "unlabelled" || f.show == "labelled" {
		ls, err := st.labels.List()
		if err != nil {
			writeErr(w, http.StatusConflict, "%v", err)
			return nil, false
		}
		f.human = majorities(ls)
	}
	if t := strings.TrimSpace(q.Get("text")); t != "" {
		hits, err := ix.searchTranscripts(t)
		if err != nil {
			writeErr(w, http.StatusConflict, "%v", err)
			return nil, false
		}
		f.textHits = hits
	}
	return f, true
}

// keep says whether conversation i passes the filter, with its scenario's
// user goal ("" for a scenario the index does not know).
func (f *convFilter) keep(ix *benchIndex, i int) (goal string, ok bool) {
	c := &ix.convs[i]
	t := ix.runs[c.target].target
	if (f.target != "" && t != f.target) || (f.metric != "" && c.metric != f.metric) || (f.verdict >= 0 && c.verdict != f.verdict) {
		return "", false
	}
	if f.textHits != nil && !f.textHits[i] {
		return "", false
	}
	if !keepShown(f.show, c, f.human) {
		return "", false
	}
	if c.scen >= 0 {
		goal = ix.scens[c.scen].UserGoal
	}
	if f.query != "" && !strings.Contains(strings.ToLower(c.convID), f.query) && !strings.Contains(strings.ToLower(goal), f.query) {
		return "", false
	}
	return goal, true
}

// keepShown applies the list's "show" filter: judges split, people
// disagreeing with the judge (their majority against the verdict),
// unverified verdicts, unlabelled or labelled rows.
func keepShown(show string, c *conv, human map[string]*bool) bool {
	switch show {
	case "split":
		return judgesSplit(c.judges)
	case "disagree":
		h, ok := human[c.convID]
		return ok && h != nil && c.present != nil && *h != *c.present
	case "unverified":
		return c.unverified
	case "unlabelled":
		_, ok := human[c.convID]
		return !ok
	case "labelled":
		_, ok := human[c.convID]
		return ok
	}
	return true
}

// majorities is each labelled conversation's majority verdict (each
// labeller's latest label; nil on a tie), as calibration counts them.
func majorities(ls []Label) map[string]*bool {
	votes := map[string]map[string]bool{}
	for _, l := range ls {
		if votes[l.ConvID] == nil {
			votes[l.ConvID] = map[string]bool{}
		}
		votes[l.ConvID][l.Labeler] = l.Present
	}
	out := make(map[string]*bool, len(votes))
	for id, v := range votes {
		yes := 0
		for _, p := range v {
			if p {
				yes++
			}
		}
		switch {
		case 2*yes > len(v):
			out[id] = ptrBool(true)
		case 2*yes < len(v):
			out[id] = ptrBool(false)
		default:
			out[id] = nil
		}
	}
	return out
}

func ptrBool(b bool) *bool { return &b }

func verdictWord(p *bool) string {
	switch {
	case p == nil:
		return "tie"
	case *p:
		return "present"
	}
	return "absent"
}

// convView is a conversation as the detail and review pages show it.
type convView struct {
	ConvID       string           `json:"conv_id"`
	ScenarioID   string           `json:"scenario_id"`
	Target       string           `json:"target"`
	TargetModel  string           `json:"target_model"`
	Sample       int              `json:"sample"`
	Metric       metricView       `json:"metric"`
	Status       string           `json:"status"`
	StatusReason string           `json:"status_reason,omitempty"`
	Transcript   []artifacts.Turn `json:"transcript"`
	// Marks are what the row stores about single messages (omitted when
	// nothing; withheld with the verdicts in blind review).
	Marks    *turnMarks       `json:"marks,omitempty"`
	Scenario *scenarioView    `json:"scenario,omitempty"`
	Score    *artifacts.Score `json:"score,omitempty"`
	Hidden   bool             `json:"verdicts_hidden,omitempty"` // blind review: verdicts withheld
	Labels   []Label          `json:"labels,omitempty"`
	Live     bool             `json:"live,omitempty"` // read from the call store: the run is not finished
}

// turnMarks is what a conversation's row stores about single messages,
// by transcript index: Refused, the target's replies its provider stopped
// for safety; Truncated, messages made from a reply cut short; Repairs,
// what it took to read a simulated user's message (fixed phrases).
type turnMarks struct {
	Refused   []int        `json:"refused,omitempty"`
	Truncated []int        `json:"truncated,omitempty"`
	Repairs   []repairMark `json:"repairs,omitempty"`
}

type repairMark struct {
	Message int    `json:"message"`
	What    string `json:"what"`
}

// marksOf is c's turnMarks; nil when it marks no message.
func marksOf(c *artifacts.Conversation) *turnMarks {
	m := turnMarks{Refused: c.Refused, Truncated: c.Truncated}
	for _, r := range c.Repairs {
		if i, what, ok := artifacts.MessageRepair(r); ok {
			m.Repairs = append(m.Repairs, repairMark{Message: i, What: what})
		}
	}
	if len(m.Refused) == 0 && len(m.Truncated) == 0 && len(m.Repairs) == 0 {
		return nil
	}
	return &m
}

type scenarioView struct {
	ID          string               `json:"id"`
	Persona     string               `json:"persona"`
	UserGoal    string               `json:"user_goal"`
	Latent      string               `json:"latent_goal"`
	Landmarks   []artifacts.Landmark `json:"landmarks"`
	Demographic [][2]string          `json:"demographic"`
	System      string               `json:"system_prompt,omitempty"`
}

var errChanged = errors.New("the benchmark's files changed since they were indexed; reload")

// metricView is what a reviewer needs to know about the metric they judge.
type metricView struct {
	ID         string `json:"id"`
	Name       string `json:"name"`
	Type       string `json:"type"`
	Definition string `json:"definition"`
}

func (ix *benchIndex) metricView(id string) metricView {
	for _, m := range ix.bench.Metrics {
		if m.ID == id {
			return metricView{ID: m.ID, Name: m.Name, Type: m.Type, Definition: m.Definition}
		}
	}
	return metricView{ID: id}
}

// readConv reads conversation i of the index back from its files.
func (ix *benchIndex) readConv(i int, withScore bool) (*convView, error) {
	c := &ix.convs[i]
	r := &ix.runs[c.target]
	b, err := readSpan(r.convPath, c.convSpan)
	if err != nil {
		return nil, err
	}
	var full artifacts.Conversation
	if err := json.Unmarshal(b, &full); err != nil || full.ID != c.id || full.Sample != c.sample {
		return nil, errChanged
	}
	v := &convView{ConvID: c.convID, ScenarioID: c.id, Target: r.target, TargetModel: full.TargetModel, Sample: c.sample,
		Metric: ix.metricView(c.metric), Status: full.Status, StatusReason: full.StatusReason, Transcript: full.Transcript,
		Marks: marksOf(&full)}
	if v.Transcript == nil {
		v.Transcript = []artifacts.Turn{}
	}
	v.Scenario = ix.readScenario(c.scen)
	if withScore && c.scoreRow >= 0 {
		b, err := readSpan(r.scorePath, r.scoreSpans[c.scoreRow])
		if err != nil {
			return nil, err
		}
		var sc artifacts.Score
		if err := json.Unmarshal(b, &sc); err != nil || sc.ID != c.id {
			return nil, errChanged
		}
		v.Score = &sc
	}
	return v, nil
}

func (ix *benchIndex) readScenario(si int) *scenarioView {
	if si < 0 || si >= len(ix.scenSpans) {
		return nil
	}
	b, err := readSpan(layout.Bench{Dir: ix.dir}.Scenarios(), ix.scenSpans[si])
	if err != nil {
		return nil
	}
	var sc report.Scenario
	if json.Unmarshal(b, &sc) != nil || sc.ID != ix.scens[si].ID {
		return nil
	}
	return toScenarioView(sc)
}

func toScenarioView(sc report.Scenario) *scenarioView {
	v := &scenarioView{ID: sc.ID, Persona: sc.Persona, UserGoal: sc.UserGoal, Latent: sc.LatentAdversarialGoal,
		Landmarks: sc.Landmarks, System: sc.TargetSystemPrompt, Demographic: [][2]string{}}
	if v.Landmarks == nil {
		v.Landmarks = []artifacts.Landmark{}
	}
	for _, av := range sc.Demographic {
		v.Demographic = append(v.Demographic, [2]string{av.Axis, av.Value})
	}
	return v
}

func (s *Server) handleConv(w http.ResponseWriter, r *http.Request, st *benchState) {
	ix := st.index(s)
	i, ok := ix.byConvID[r.URL.Query().Get("id")]
	if !ok {
		writeErr(w, http.StatusNotFound, "no such conversation")
		return
	}
	review := r.URL.Query().Get("review") == "1"
	hide := review && s.opts.Blind
	v, err := ix.readConv(i, !hide)
	if err != nil {
		writeErr(w, http.StatusConflict, "%v", err)
		return
	}
	if hide {
		v.Hidden, v.Marks = true, nil
	} else if labels, err := st.labels.List(); err == nil {
		v.Labels = labelsFor(labels, v.ConvID)
	}
	writeJSON(w, http.StatusOK, v)
}

func labelsFor(all []Label, convID string) []Label {
	out := []Label{}
	for _, l := range all {
		if l.ConvID == convID {
			out = append(out, l)
		}
	}
	return out
}

// maxSideBySide caps one scenario's conversations on one page.
const maxSideBySide = 60

func (s *Server) handleScenario(w http.ResponseWriter, r *http.Request, st *benchState) {
	ix := st.index(s)
	id := r.URL.Query().Get("id")
	var convs []*convView
	si := -1
	for i := range ix.convs {
		c := &ix.convs[i]
		if c.id != id {
			continue
		}
		si = c.scen
		if len(convs) == maxSideBySide {
			break
		}
		v, err := ix.readConv(i, true)
		if err != nil {
			writeErr(w, http.StatusConflict, "%v", err)
			return
		}
		v.Scenario = nil
		convs = append(convs, v)
	}
	if convs == nil {
		if k, ok := ix.scenByID[id]; ok {
			si = k
		} else {
			writeErr(w, http.StatusNotFound, "no such scenario")
			return
		}
		convs = []*convView{}
	}
	writeJSON(w, http.StatusOK, map[string]any{"scenario": ix.readScenario(si), "conversations": convs})
}

// handleLive shows a conversation that finished in a run still going: it
// is read from the call store, where it is stored the moment it finishes.
func (s *Server) handleLive(w http.ResponseWriter, r *http.Request, st *benchState) {
	ix := st.index(s)
	target, unit := r.URL.Query().Get("target"), r.URL.Query().Get("unit")
	known := false
	for _, t := range s.liveTargets(ix) {
		known = known || t == target
	}
	if !known {
		writeErr(w, http.StatusNotFound, "no such target")
		return
	}
	calls := s.callsDir(st.name)
	id, sample, ok := layout.ParseRowFile(unit)
	if !ok || !st.dirs.list(calls, layout.TargetDir(target, layout.SimDir)).has(unit) {
		writeErr(w, http.StatusNotFound, "no such finished conversation")
		return
	}
	var c artifacts.Conversation
	if _, ok := st.dirs.open(calls).ReadResult(layout.SimUnit(target, id, sample), &c); !ok {
		writeErr(w, http.StatusNotFound, "conversation not readable yet")
		return
	}
	v := &convView{ConvID: c.ConvID, ScenarioID: c.ID, Target: target, TargetModel: c.TargetModel, Sample: c.Sample,
		Metric: ix.metricView(c.MetricID), Status: c.Status, StatusReason: c.StatusReason, Transcript: c.Transcript, Live: true,
		Marks: marksOf(&c)}
	if v.Transcript == nil {
		v.Transcript = []artifacts.Turn{}
	}
	if k, ok := ix.scenByID[c.ID]; ok {
		v.Scenario = ix.readScenario(k)
	}
	writeJSON(w, http.StatusOK, v)
}

// maxQueue caps a queue page: a reviewer works through a few hundred
// conversations at most in one sitting, and the triage list of a large run
// can hold thousands.
const maxQueue = 500

func (s *Server) handleLabels(w http.ResponseWriter, r *http.Request, st *benchState) {
	labels, err := st.labels.List()
	if err != nil {
		writeErr(w, http.StatusConflict, "%v", err)
		return
	}
	if id := r.URL.Query().Get("conv"); id != "" {
		labels = labelsFor(labels, id)
	}
	if labels == nil {
		labels = []Label{}
	}
	writeJSON(w, http.StatusOK, labels)
}

// labelRequest is what the review form posts: the item (review pages) or
// the conversation and metric (scripts, and the page outside blind mode).
type labelRequest struct {
	Item     string `json:"item"`
	ConvID   string `json:"conv_id"`
	MetricID string `json:"metric_id"`
	Present  *bool  `json:"present"`
	Labeler  string `json:"labeler"`
	Note     string `json:"note"`
}

// handleAddLabel records a label on one benchmark's conversation (the
// researcher's API and scripts: by item or by conv_id and metric_id; the
// page uses /api/label). The body is one JSON object, no key twice,
// nothing after it; the conversation must be the benchmark's, and the
// metric its own.
func (s *Server) handleAddLabel(w http.ResponseWriter, r *http.Request, st *benchState) {
	var req labelRequest
	if err := decodeStrict(r, &req); err != nil {
		writeErr(w, http.StatusBadRequest, "label: %v", err)
		return
	}
	if req.Present == nil {
		writeErr(w, http.StatusBadRequest, "label: present is required (true or false)")
		return
	}
	ix := st.index(s)
	var i int
	switch {
	case req.Item != "":
		var ok bool
		if i, ok = (reviewQueue{s}).itemIndex(ix, req.Item); !ok {
			writeErr(w, http.StatusBadRequest, "label: unknown review item (the viewer restarted, or the runs changed): open the queue again")
			return
		}
		if req.ConvID != "" || req.MetricID != "" {
			writeErr(w, http.StatusBadRequest, "label: give the item or the conversation, not both")
			return
		}
	default:
		var ok bool
		if i, ok = ix.byConvID[req.ConvID]; !ok {
			writeErr(w, http.StatusBadRequest, "label: unknown conv_id %s", ids.Quote(req.ConvID))
			return
		}
		if c := &ix.convs[i]; c.metric != req.MetricID {
			writeErr(w, http.StatusBadRequest, "label: conversation %s is about metric %s, not %s", ids.Quote(req.ConvID), ids.Quote(c.metric), ids.Quote(req.MetricID))
			return
		}
	}
	who := strings.TrimSpace(req.Labeler)
	if q := (reviewQueue{s}); who != "" && q.heldAway(who, st, ix, i, q.itemOfConv(ix, i)) {
		writeErr(w, http.StatusConflict, "label: %s", errHeldAway)
		return
	}
	out, code, err := reviewQueue{s}.saveLabel(st, ix, i, whoOf(r), who, *req.Present, req.Note)
	if err != nil {
		writeErr(w, code, "%v", err)
		return
	}
	writeJSON(w, http.StatusCreated, out)
}

// reportCSP is the policy the static report is served under. A report
// can come from a shared or cloned benchmark folder, so it must never act
// as the viewer:
//   - sandbox allow-scripts gives it an opaque origin: it cannot read the
//     viewer's pages or API (no CORS is ever granted), its writes carry
//     Origin "null" and no token, and it may open no popup (one would be
//     same-origin with the viewer's page, token and all, if it could);
//   - script-src is the report's own two scripts by hash (report.PageCSP),
//     so a crafted file's scripts do not run at all;
//   - no network loads, no framing.
var reportCSP = "sandbox allow-scripts; " + report.PageCSP() + "; frame-ancestors 'none'"

// handleReport serves the static report: report.html when this build wrote
// it (report.IsOwn) and it is newer than every input, else one built now,
// streamed as it is written.
func (s *Server) handleReport(w http.ResponseWriter, r *http.Request, st *benchState) {
	h := w.Header()
	h.Set("Content-Security-Policy", reportCSP)
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	if f := openOwnReport(layout.Bench{Dir: st.dir}.Report(), stampFiles(st.dir)); f != nil {
		defer f.Close()
		if info, err := f.Stat(); err == nil {
			http.ServeContent(w, r, layout.ReportFile, info.ModTime(), f)
			return
		}
	}
	in, err := report.Load(st.dir, s.opts.Settings)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	if err := report.Build(r.Context(), in, w); err != nil {
		s.opts.Logger.Warn("view: report", "bench", st.name, "err", err)
	}
}

// openOwnReport opens path if it is a report this build wrote and no older
// than any of inputs; else nil.
func openOwnReport(path string, inputs []string) *os.File {
	if !fresh(path, inputs) {
		return nil
	}
	f, err := fsx.Open(path) // a regular file only: a FIFO or a device would block or stream forever
	if err != nil {
		return nil
	}
	head := make([]byte, report.OwnHeadLen())
	if _, err := io.ReadFull(f, head); err != nil || !report.IsOwn(head) {
		f.Close()
		return nil
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		f.Close()
		return nil
	}
	return f
}

// fresh: path exists and is no older than any of inputs.
func fresh(path string, inputs []string) bool {
	st, err := os.Stat(path)
	if err != nil {
		return false
	}
	for _, in := range inputs {
		if i, err := os.Stat(in); err == nil && i.ModTime().After(st.ModTime()) {
			return false
		}
	}
	return true
}
