package viewer

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/impactbench/impactbench/internal/artifacts"
	"github.com/impactbench/impactbench/internal/fsx"
	"github.com/impactbench/impactbench/internal/ids"
	"github.com/impactbench/impactbench/internal/layout"
	"github.com/impactbench/impactbench/internal/report"
	"github.com/impactbench/impactbench/internal/results"
)

// Verdict codes, as the static report's index uses them.
const (
	verdictFail     = 0
	verdictPass     = 1
	verdictNull     = 2 // judged, no verdict
	verdictUnscored = 3 // not judged yet
)

// span is one row's bytes in its file.
type span struct{ off, end int64 }

// conv is one conversation in the index: what lists, filters and queues
// need. Transcripts and justifications stay in the files and are read back
// by span when a conversation is opened.
type conv struct {
	target   int
	row      int
	convSpan span
	scoreRow int // -1: not scored
	scen     int // index into benchIndex.scens (-1: not in scenarios.json)

	id, convID, metric, status string
	sample, turns              int
	verdict                    int
	present                    *bool   // the (panel's) verdict: behaviour present
	judges                     []*bool // each panel member's present verdict
	unverified                 bool    // the verdict's quoted evidence was not found
}

// lightScen is the part of a scenarios.json row the index keeps.
type lightScen struct {
	ID          string             `json:"id"`
	MetricID    string             `json:"metric_id"`
	UserGoal    string             `json:"user_goal"`
	Demographic report.Demographic `json:"demographic"`
}

// lightConv is the part of a conversations.json row the index keeps; the
// transcript is only counted.
type lightConv struct {
	ID          string    `json:"id"`
	MetricID    string    `json:"metric_id"`
	ConvID      string    `json:"conv_id"`
	Sample      int       `json:"_sample"`
	TargetModel string    `json:"target_model"`
	Status      string    `json:"status"`
	Transcript  turnCount `json:"transcript"`
}

type lightScore struct {
	ID          string `json:"id"`
	MetricID    string `json:"metric_id"`
	TargetModel string `json:"target_model"`
	Sample      int    `json:"sample"`
	ConvID      string `json:"conv_id"`
	Present     *bool  `json:"present"`
	Passed      *bool  `json:"passed"`
	Valid       *bool  `json:"valid"`
	Unverified  *bool  `json:"unverified"`
	// Refused: the conversation's target replies its provider stopped
	// for safety (the summary's safety_stops recounts them for a
	// provisional row).
	Refused []int `json:"refused"`
	Judges  []struct {
		Judge   string `json:"judge"`
		Present *bool  `json:"present"`
	} `json:"judges"`
}

// turnCount counts a transcript's messages without decoding them.
type turnCount int

func (t *turnCount) UnmarshalJSON(b []byte) error {
	depth, n, inStr, esc := 0, 0, false, false
	for _, c := range b {
		switch {
		case inStr:
			if esc {
				esc = false
			} else if c == '\\' {
				esc = true
			} else if c == '"' {
				inStr = false
			}
		case c == '"':
			inStr = true
		case c == '[' || c == '{':
			if depth == 1 && c == '{' {
				n++
			}
			depth++
		case c == ']' || c == '}':
			depth--
		}
	}
	*t = turnCount(n)
	return nil
}

// run is one target's run directory as loaded.
type run struct {
	target     string
	convPath   string
	scorePath  string
	hasConvs   bool
	hasScores  bool
	convSpans  []span
	scoreSpans []span
	convs      []lightConv
	scores     []lightScore
}

// benchIndex is one benchmark's loaded state. It is immutable once built:
// a reload builds a new one.
type benchIndex struct {
	name     string
	dir      string
	stamp    string
	loadedAt time.Time
	loadDur  time.Duration

	bench      report.Benchmark
	scens      []lightScen
	scenSpans  []span
	scenByID   map[string]int
	runs       []run
	convs      []conv // scenario → sample → target order, as the report lists them
	byConvID   map[string]int
	metricType map[string]string
	summary    []byte          // the static report's summary JSON (leaderboard, heatmap…)
	results    map[string]bool // targets with a results.json entry
	notes      []string

	// items maps review item ids (opaque, see itemID) to conversations;
	// built on first use with the server's key.
	itemsOnce sync.Once
	itemOf    map[string]int
	itemIDs   []string
	// planMetrics are the labelling plan's metrics (planMetricIDs).
	planMetricsOnce sync.Once
	planMetrics     []string
	// digests are conversations' transcript digests, read on demand
	// (digestOf).
	digestMu sync.Mutex
	digests  map[int]string
	// textSearch caches the last transcript search.
	textMu    sync.Mutex
	textQuery string
	textHits  []bool
}

// stampFiles are the files whose size and mtime decide whether an index is
// stale. Everything the pipeline writes is replaced by rename, so a changed
// file always changes its mtime or size.
func stampFiles(dir string) []string {
	b := layout.Bench{Dir: dir}
	files := []string{layout.BenchmarkPath(dir), b.Scenarios(), b.Results(), b.Cost()}
	for _, t := range runTargetNames(dir) {
		files = append(files, b.Run(t).Conversations(), b.Run(t).Scores())
	}
	return files
}

// stampHash is a short form of the stamp for the page: it refetches the
// leaderboard and the list when it changes.
func (ix *benchIndex) stampHash() string {
	h := fnv.New64a()
	h.Write([]byte(ix.stamp))
	return strconv.FormatUint(h.Sum64(), 36)
}

func computeStamp(dir string) string {
	var b strings.Builder
	for _, f := range stampFiles(dir) {
		st, err := os.Stat(f)
		if err != nil {
			fmt.Fprintf(&b, "%s:-;", f)
			continue
		}
		fmt.Fprintf(&b, "%s:%d:%d;", f, st.Size(), st.ModTime().UnixNano())
	}
	return b.String()
}

// loadIndex reads a benchmark directory. Like the report, it never fails on
// a damaged file: the problem becomes a note and that part stays empty.
func loadIndex(name, dir string, settings report.Settings, now time.Time) *benchIndex {
	t0 := time.Now()
	ix := &benchIndex{name: name, dir: dir, stamp: computeStamp(dir), scenByID: map[string]int{},
		byConvID: map[string]int{}, metricType: map[string]string{}}
	note := func(path string, err error) {
		rel, _ := filepath.Rel(dir, path)
		ix.notes = append(ix.notes, fmt.Sprintf("%s could not be read: %v", rel, err))
	}
	bp := layout.BenchmarkPath(dir)
	if _, err := os.Stat(bp); err == nil {
		if b, err := report.LoadBenchmark(bp); err != nil {
			note(bp, err)
		} else {
			ix.bench = b
		}
	}
	if ix.bench.Name == "" {
		ix.bench.Name = name
	}
	for _, m := range ix.bench.Metrics {
		ix.metricType[m.ID] = m.Type
	}
	sp := layout.Bench{Dir: dir}.Scenarios()
	if rows, spans, _, err := readRows[lightScen](sp); err != nil {
		note(sp, err)
	} else {
		ix.scens, ix.scenSpans = rows, spans
		for i, s := range rows {
			if _, dup := ix.scenByID[s.ID]; !dup {
				ix.scenByID[s.ID] = i
			}
		}
	}
	rp := layout.Bench{Dir: dir}.Results()
	res, err := results.ReadResults(rp)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		note(rp, err)
	}
	ix.results = map[string]bool{}
	for _, r := range res {
		ix.results[r.TargetModel] = true
	}
	targets, err := targetOrder(dir, settings, res)
	if err != nil {
		note(layout.Bench{Dir: dir}.RunsDir(), err)
	}
	ix.runs = loadRuns(dir, targets, note)
	ix.buildConvs()
	ix.summary = buildSummaryJSON(ix, res, settings, now, note)
	ix.loadDur = time.Since(t0)
	ix.loadedAt = now
	return ix
}

// targetOrder is the report's order: configured targets, then targets in
// results.json, then any other run directory alphabetically. A runs/
// folder over its bound is an error (runTargetsOf).
func targetOrder(dir string, settings report.Settings, res []results.ModelResult) ([]string, error) {
	dirs, err := runTargetsOf(dir)
	if err != nil {
		return nil, err
	}
	have := map[string]bool{}
	for _, d := range dirs {
		have[d] = true
	}
	var out []string
	seen := map[string]bool{}
	add := func(t string) {
		if have[t] && !seen[t] {
			seen[t] = true
			out = append(out, t)
		}
	}
	for _, t := range settings.Targets {
		add(t.ID)
	}
	for _, r := range res {
		add(r.TargetModel)
	}
	for _, d := range dirs {
		add(d)
	}
	return out, nil
}

func loadRuns(dir string, targets []string, note func(string, error)) []run {
	var runs []run
	for _, t := range targets {
		rd := layout.Bench{Dir: dir}.Run(t)
		r := run{target: t, convPath: rd.Conversations(), scorePath: rd.Scores()}
		if rows, spans, ok, err := readRows[lightConv](r.convPath); err != nil {
			note(r.convPath, err)
		} else {
			r.convs, r.convSpans, r.hasConvs = rows, spans, ok
		}
		if rows, spans, ok, err := readRows[lightScore](r.scorePath); err != nil {
			note(r.scorePath, err)
		} else {
			r.scores, r.scoreSpans, r.hasScores = rows, spans, ok
		}
		runs = append(runs, r)
	}
	return runs
}

// buildConvs fills ix.convs from the runs: each conversation with its score
// row (matched by conv_id, else by scenario id and sample; the last row
// wins, like the report) in scenario → sample → target order. A row whose
// ids are not ids, or whose conv_id names another target or scenario than
// its own, is left out with a note: nothing can be opened or labelled by it
// (the label request gets a 4xx), and `view` refuses to start on it.
func (ix *benchIndex) buildConvs() {
	for ti := range ix.runs {
		r := &ix.runs[ti]
		match := scoreMatcher(r.scores)
		for ci := range r.convs {
			c := &r.convs[ci]
			if field, why := convRowProblem(c, r.target); why != "" {
				ix.notes = append(ix.notes, fmt.Sprintf("%s row %d: field %q: %s; the row is left out", layout.RunFileRel(r.target, layout.ConversationsFile), ci, field, why))
				continue
			}
			e := conv{target: ti, row: ci, convSpan: r.convSpans[ci], id: c.ID, convID: c.ConvID,
				metric: c.MetricID, status: c.Status, sample: c.Sample, turns: int(c.Transcript), verdict: verdictUnscored}
			if e.convID == "" {
				e.convID = artifacts.ConvID(c.ID, r.target, c.Sample)
			}
			if e.metric == "" {
				e.metric = metricFromID(c.ID)
			}
			e.scen = -1
			if si, ok := ix.scenByID[c.ID]; ok {
				e.scen = si
			}
			e.scoreRow = match(e.convID, c.ID, c.Sample)
			if e.scoreRow >= 0 {
				s := &r.scores[e.scoreRow]
				e.present = s.Present
				e.unverified = s.Unverified != nil && *s.Unverified
				switch {
				case s.Passed == nil:
					e.verdict = verdictNull
				case *s.Passed:
					e.verdict = verdictPass
				default:
					e.verdict = verdictFail
				}
				for _, j := range s.Judges {
					e.judges = append(e.judges, j.Present)
				}
			}
			ix.convs = append(ix.convs, e)
		}
	}
	scenKey := func(c *conv) (int, string) {
		if c.scen >= 0 {
			return c.scen, ""
		}
		return len(ix.scens), c.id
	}
	sort.SliceStable(ix.convs, func(a, b int) bool {
		ca, cb := &ix.convs[a], &ix.convs[b]
		sa, ia := scenKey(ca)
		sb, ib := scenKey(cb)
		if sa != sb {
			return sa < sb
		}
		if ia != ib {
			return ia < ib
		}
		if ca.sample != cb.sample {
			return ca.sample < cb.sample
		}
		return ca.target < cb.target
	})
	for i := range ix.convs {
		ix.byConvID[ix.convs[i].convID] = i
	}
}

// convIDProblem says what is wrong with a conv_id ("" when nothing): it
// must be an id, and name the row's own scenario, target and sample.
func convIDProblem(convID, id, target string, sample int) string {
	if why := ids.Problem(convID, ids.MaxConv); why != "" {
		return fmt.Sprintf("%s is not an id: %s", ids.Quote(convID), why)
	}
	if want := artifacts.ConvID(id, target, sample); convID != want {
		return fmt.Sprintf("%s does not name this row's scenario, target and sample (%s)", ids.Quote(convID), ids.Quote(want))
	}
	return ""
}

// convRowProblem checks a conversations.json row's ids: the field and what
// is wrong, or "" and "".
func convRowProblem(c *lightConv, target string) (string, string) {
	if why := ids.Problem(c.ID, ids.MaxScenario); why != "" {
		return "id", fmt.Sprintf("%s is not an id: %s", ids.Quote(c.ID), why)
	}
	if c.MetricID != "" {
		if why := ids.Problem(c.MetricID, ids.MaxName); why != "" {
			return "metric_id", fmt.Sprintf("%s is not an id: %s", ids.Quote(c.MetricID), why)
		}
	}
	if c.ConvID != "" {
		if why := convIDProblem(c.ConvID, c.ID, target, c.Sample); why != "" {
			return "conv_id", why
		}
	}
	return "", ""
}

// metricFromID takes the metric id from a scenario id (m01_s002_v01 → m01).
func metricFromID(id string) string {
	if i := strings.IndexByte(id, '_'); i > 0 {
		return id[:i]
	}
	return ""
}

func scoreMatcher(scores []lightScore) func(convID, id string, sample int) int {
	byConv := map[string]int{}
	type key struct {
		id     string
		sample int
	}
	byKey := map[key]int{}
	for i := range scores {
		if scores[i].ConvID != "" {
			byConv[scores[i].ConvID] = i
		}
		byKey[key{scores[i].ID, scores[i].Sample}] = i
	}
	return func(convID, id string, sample int) int {
		if i, ok := byConv[convID]; ok {
			return i
		}
		if i, ok := byKey[key{id, sample}]; ok {
			return i
		}
		return -1
	}
}

// buildSummaryJSON hands the loaded rows to the static report's summary
// builder, so the viewer's leaderboard and heatmap are the report's numbers.
func buildSummaryJSON(ix *benchIndex, res []results.ModelResult, settings report.Settings, now time.Time, note func(string, error)) []byte {
	in := report.Input{Benchmark: ix.bench, Results: res, Settings: settings, Notes: ix.notes}
	in.Scenarios = make([]report.Scenario, len(ix.scens))
	for i, s := range ix.scens {
		in.Scenarios[i] = report.Scenario{ID: s.ID, MetricID: s.MetricID, UserGoal: s.UserGoal, Demographic: s.Demographic}
	}
	for _, r := range ix.runs {
		rr := report.Run{Target: r.target, HasConvs: r.hasConvs, HasScores: r.hasScores}
		if r.hasConvs {
			rr.Conversations = make([]artifacts.Conversation, len(r.convs))
			for i, c := range r.convs {
				rr.Conversations[i] = artifacts.Conversation{ID: c.ID, MetricID: c.MetricID, ConvID: c.ConvID,
					Sample: c.Sample, TargetModel: c.TargetModel, Status: c.Status}
			}
		}
		if r.hasScores {
			rr.Scores = make([]artifacts.Score, len(r.scores))
			for i, s := range r.scores {
				rr.Scores[i] = artifacts.Score{ID: s.ID, MetricID: s.MetricID, TargetModel: s.TargetModel,
					Sample: s.Sample, Present: s.Present, Passed: s.Passed, ConvID: s.ConvID, Valid: s.Valid, Refused: s.Refused}
			}
		}
		in.Runs = append(in.Runs, rr)
	}
	b, err := report.SummaryJSON(&in, now)
	if err != nil {
		note(layout.Bench{Dir: ix.dir}.Results(), err)
		return []byte("null")
	}
	return b
}

// readRows decodes a JSON array file row by row, keeping each row's span so
// its full text can be read back later. ok is false when the file is absent.
// It reads through artifacts' input guards, as the report does: a named
// pipe is refused, not waited on, and a row is bounded (MaxRowBytes) and
// UTF-8, so one huge row is refused instead of read into memory whole.
func readRows[T any](path string) (rows []T, spans []span, ok bool, err error) {
	rr, ok, err := artifacts.OpenRows(path, "")
	if err != nil || !ok {
		return nil, nil, false, err
	}
	var size int64
	if fi, err := os.Stat(path); err == nil {
		size = fi.Size()
	}
	rows = []T{}
	for rr.More() {
		if len(rows) == 64 && size > 0 {
			_, end := rr.Span()
			est := int(float64(size)/float64(end)*64*1.05) + 1
			rows = slices.Grow(rows, est-len(rows))
			spans = slices.Grow(spans, est-len(spans))
		}
		var v T
		if err := rr.Next(&v); err != nil {
			rr.Close()
			return nil, nil, false, err
		}
		off, end := rr.Span()
		rows = append(rows, v)
		spans = append(spans, span{off: off, end: end})
	}
	if err := rr.Close(); err != nil {
		return nil, nil, false, err
	}
	return rows, spans, true, nil
}

// readSpan reads one row back from its file. The file may have been
// replaced since the index was built: the caller decodes and checks the id.
func readSpan(path string, sp span) ([]byte, error) {
	f, err := fsx.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b := make([]byte, sp.end-sp.off)
	if _, err := f.ReadAt(b, sp.off); err != nil {
		return nil, err
	}
	return bytes.TrimLeft(b, " \t\r\n,"), nil
}

// searchTranscripts marks the conversations whose transcript contains
// query (case-insensitive), reading every conversations.json once, in
// file order; the last query's answer is kept.
func (ix *benchIndex) searchTranscripts(query string) ([]bool, error) {
	query = strings.ToLower(query)
	ix.textMu.Lock()
	defer ix.textMu.Unlock()
	if ix.textQuery == query && ix.textHits != nil {
		return ix.textHits, nil
	}
	hits := make([]bool, len(ix.convs))
	byRun := make([][]int, len(ix.runs)) // conversations of each run, by file row
	for i := range ix.convs {
		c := &ix.convs[i]
		byRun[c.target] = append(byRun[c.target], i)
	}
	for ri, r := range ix.runs {
		if len(byRun[ri]) == 0 {
			continue
		}
		f, err := fsx.Open(r.convPath)
		if err != nil {
			return nil, err
		}
		idx := byRun[ri]
		sort.Slice(idx, func(a, b int) bool { return ix.convs[idx[a]].convSpan.off < ix.convs[idx[b]].convSpan.off })
		for _, i := range idx {
			sp := ix.convs[i].convSpan
			b := make([]byte, sp.end-sp.off)
			if _, err := f.ReadAt(b, sp.off); err != nil {
				f.Close()
				return nil, err
			}
			var row struct {
				Transcript []struct {
					Content string `json:"content"`
				} `json:"transcript"`
			}
			if json.Unmarshal(bytes.TrimLeft(b, " \t\r\n,"), &row) != nil {
				f.Close()
				return nil, errChanged
			}
			for _, t := range row.Transcript {
				if strings.Contains(strings.ToLower(t.Content), query) {
					hits[i] = true
					break
				}
			}
		}
		f.Close()
	}
	ix.textQuery, ix.textHits = query, hits
	return hits, nil
}

// runTargetsOf lists the benchmark's run directories; an unreadable runs/
// shows as none (the viewer shows what there is). Its error is a runs/
// folder holding more entries than its bound (an *fsx.TooManyEntriesError
// naming it): view refuses it at start (Check) and the index shows it as
// a note while serving, never as a benchmark without runs.
func runTargetsOf(dir string) ([]string, error) {
	ts, err := layout.RunTargets(dir)
	var many *fsx.TooManyEntriesError
	if errors.As(err, &many) {
		return nil, err
	}
	return ts, nil
}

// runTargetNames is runTargetsOf for what only lists names (the home
// page, the stamp, scrubbing): a crowded runs/ lists none there, and the
// benchmark's own pages say why (loadIndex's note).
func runTargetNames(dir string) []string {
	ts, _ := runTargetsOf(dir)
	return ts
}
