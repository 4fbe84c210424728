package report

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/impactbench/impactbench/internal/artifacts"
	"github.com/impactbench/impactbench/internal/config"
	"github.com/impactbench/impactbench/internal/fsx"
	"github.com/impactbench/impactbench/internal/human"
	"github.com/impactbench/impactbench/internal/layout"
	"github.com/impactbench/impactbench/internal/results"
)

// Load reads a benchmark directory into an Input. Absent files leave their
// part empty, so a half-finished run still gets a report; a file that is
// there but damaged (truncated, duplicated rows, rows without ids, bytes
// that are not UTF-8, values over the size limits) is an error naming the
// file, row and field, as it is for every other command.
func Load(benchDir string, settings Settings) (Input, error) {
	st, err := os.Stat(benchDir)
	if err != nil {
		return Input{}, fmt.Errorf("report: %w", err)
	}
	if !st.IsDir() {
		return Input{}, fmt.Errorf("report: %s is not a directory", benchDir)
	}
	in := Input{Settings: settings}
	files := layout.Bench{Dir: benchDir}

	bp := layout.BenchmarkPath(benchDir)
	if _, err := os.Stat(bp); err == nil {
		// The same checks as every other command; the report then reads
		// only the fields it shows.
		cb, err := config.LoadBenchmark(bp)
		if err != nil {
			return Input{}, err
		}
		in.Benchmark = benchmarkOf(cb)
	}
	if in.Benchmark.Name == "" {
		in.Benchmark.Name = filepath.Base(filepath.Clean(benchDir))
	}

	var lite lightener
	sp := files.Scenarios()
	scenarioOK := artifacts.NewScenarioChecker()
	rows, spans, ok, err := readRows(sp, func(i int, sc *Scenario) error { return scenarioOK(i, sc.ID) }, lite.scenario)
	if err != nil {
		return Input{}, err
	}
	if ok {
		in.Scenarios, in.scenarioFile = rows, sp
		if len(spans) > 0 {
			in.scenarioEnd = spans[len(spans)-1].end
		}
	}

	if in.Results, err = readResults(files.Results()); err != nil {
		return Input{}, err
	}
	c, err := readCost(files.Cost(), "")
	if err != nil {
		return Input{}, err
	}
	in.Costs = append(in.Costs, c...)

	targets, err := runTargets(benchDir, settings, in.Results)
	if err != nil {
		return Input{}, err
	}
	for _, target := range targets {
		run, costs, err := loadRun(files.Run(target), target, &lite)
		if err != nil {
			return Input{}, err
		}
		in.Costs = append(in.Costs, costs...)
		in.Runs = append(in.Runs, run)
	}
	return in, nil
}

// loadRun reads one runs/<target>/ directory.
func loadRun(dir layout.Run, target string, lite *lightener) (Run, []CostEntry, error) {
	run := Run{Target: target}
	convPath := dir.Conversations()
	rows, spans, ok, err := readRows(convPath, artifacts.NewConversationChecker(target), lite.conversation(target))
	if err != nil {
		return Run{}, nil, err
	}
	run.Conversations, run.HasConvs = rows, ok
	run.convSrc = &rowSource{path: convPath, spans: spans}

	scorePath := dir.Scores()
	scores, spans, ok, err := readRows(scorePath, artifacts.NewScoreChecker(), lite.score(target))
	if err != nil {
		return Run{}, nil, err
	}
	run.Scores, run.HasScores = scores, ok
	run.scoreSrc = &rowSource{path: scorePath, spans: spans}

	if run.Human, err = human.ReadConversations(dir.HumanConversations(), target); err != nil {
		return Run{}, nil, err
	}
	if run.HumanScores, err = human.ReadScores(dir.HumanScores(), target); err != nil {
		return Run{}, nil, err
	}
	costs, err := readCost(dir.Cost(), target)
	return run, costs, err
}

// runTargets lists run directories in display order: configured targets
// first (config order), then targets named in results.json, then any other
// directory under runs/ alphabetically (a run from an older config still
// shows up). A runs/ folder over its bound is an error (runTargetsOf).
func runTargets(benchDir string, settings Settings, res []results.ModelResult) ([]string, error) {
	seen := map[string]bool{}
	var out []string
	add := func(t string) {
		if t == "" || seen[t] {
			return
		}
		if st, err := os.Stat(layout.Bench{Dir: benchDir}.RunDir(t)); err != nil || !st.IsDir() {
			return
		}
		seen[t] = true
		out = append(out, t)
	}
	for _, t := range settings.Targets {
		add(t.ID)
	}
	for _, r := range res {
		add(r.TargetModel)
	}
	dirs, err := runTargetsOf(benchDir)
	if err != nil {
		return nil, err
	}
	for _, t := range dirs {
		add(t)
	}
	return out, nil
}

// readResults reads results.json through the results package (the one
// definition of its format), which accepts upstream-only entries (our
// additions left zero/nil) as well as ours. A missing file is no results
// (nil, nil), not an error.
func readResults(path string) ([]results.ModelResult, error) {
	rows, err := results.ReadResults(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	return rows, err
}

// readArray decodes a JSON array file element by element, so a 20,000-row
// conversations.json never needs a second in-memory copy of its raw bytes.
// ok is false when the file does not exist.
func readArray[T any](path string) (rows []T, ok bool, err error) {
	// Through artifacts' input guards: a named pipe is refused, not waited
	// on (status blocked forever on one), and a row is bounded.
	rr, ok, err := artifacts.OpenRows(path, "")
	if err != nil || !ok {
		return nil, false, err
	}
	rows = []T{}
	for rr.More() {
		var v T
		if err := rr.Next(&v); err != nil {
			rr.Close()
			return nil, false, err
		}
		rows = append(rows, v)
	}
	if err := rr.Close(); err != nil {
		return nil, false, err
	}
	return rows, true, nil
}

// readRows is readArray keeping each row's span in the file, through
// artifacts' input guards; check (nil: none) validates each decoded row
// before keep strips it of its bulk (and returns its transcript length, if
// any). A file that does not parse keeps no rows at all.
func readRows[T any](path string, check func(int, *T) error, keep func(*T) int32) (rows []T, spans []span, ok bool, err error) {
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
			// Size the slices from the first rows' mean length: growing a
			// 100,000-row slice by appending copies it a dozen times and
			// holds the last two copies at once, the load's memory peak.
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
		// The span starts just past the previous row (or the '['); the row
		// itself starts after the separator, which rowBytes skips.
		off, end := rr.Span()
		if err := checkRow(rr, off, end, len(rows), &v, check); err != nil {
			rr.Close()
			return nil, nil, false, err
		}
		n := keep(&v)
		rows = append(rows, v)
		spans = append(spans, span{off: off, end: end, n: n})
	}
	if err := rr.Close(); err != nil {
		return nil, nil, false, err
	}
	return rows, spans, true, nil
}

// checkRow applies the size limit on single values (only rows longer than
// it can break it, so the bytes are re-read only for those) and check.
func checkRow[T any](rr *artifacts.RowReader, off, end int64, i int, v *T, check func(int, *T) error) error {
	if end-off > artifacts.MaxFieldBytes {
		// Opened as the first read opened it (fsx.Open): a file swapped
		// for a named pipe meanwhile fails instead of blocking forever.
		f, err := fsx.Open(rr.Path())
		if err != nil {
			return err
		}
		b, err := rowBytes(f, span{off: off, end: end})
		f.Close()
		if err != nil {
			return err
		}
		if err := artifacts.CheckFieldSizes(b); err != nil {
			return rr.Fail(err)
		}
	}
	if check != nil {
		if err := check(i, v); err != nil {
			return rr.Fail(err)
		}
	}
	return nil
}

// rowBytes reads one row's JSON back from f.
func rowBytes(f *os.File, sp span) ([]byte, error) {
	b := make([]byte, sp.end-sp.off)
	if _, err := f.ReadAt(b, sp.off); err != nil {
		return nil, err
	}
	return bytes.TrimLeft(b, " \t\r\n,"), nil
}

// lightener strips rows of what only the transcript store needs and
// interns what repeats across rows (metric ids, statuses, models, goals,
// demographics, run records, verdicts). A conv_id equal to the default
// <id>__<target>__s<n> is dropped: rows are then matched by (id, sample),
// which for default ids is the same match.
type lightener struct {
	strs  map[string]string
	runs  map[artifacts.RunInfo]*artifacts.RunInfo
	demos map[string]Demographic
	vals  map[string]*artifacts.Validity
	fids  map[string]*artifacts.Fidelity
}

var boolPtrs = [2]*bool{new(bool), func() *bool { b := true; return &b }()}

// shareBool replaces b by a shared pointer to the same value: the report
// never writes through these pointers.
func shareBool(b *bool) *bool {
	if b == nil {
		return nil
	}
	if *b {
		return boolPtrs[1]
	}
	return boolPtrs[0]
}

func (l *lightener) s(v string) string {
	if l.strs == nil {
		l.strs = map[string]string{}
	}
	if w, ok := l.strs[v]; ok {
		return w
	}
	l.strs[v] = v
	return v
}

func (l *lightener) conversation(target string) func(c *artifacts.Conversation) int32 {
	return func(c *artifacts.Conversation) int32 {
		n := int32(len(c.Transcript))
		c.Transcript = nil
		c.UserThoughts = nil
		c.StatusReason = ""
		// The scorecard needs only the verdict and the failure kinds; the
		// chunks read the rest back from the file.
		c.Validity, c.Fidelity = l.validity(c.Validity), l.fidelity(c.Fidelity)
		c.MetricID, c.TargetModel, c.Status = l.s(c.MetricID), l.s(c.TargetModel), l.s(c.Status)
		if c.ConvID == artifacts.ConvID(c.ID, target, c.Sample) {
			c.ConvID = ""
		}
		c.Usage.CostKnown = shareBool(c.Usage.CostKnown)
		if c.Run != nil {
			// Seeds differ per conversation and would defeat the
			// interning; chunks read them back from the file.
			c.Run.UserSeeds, c.Run.TargetSeeds = artifacts.Seeds{}, artifacts.Seeds{}
			if l.runs == nil {
				l.runs = map[artifacts.RunInfo]*artifacts.RunInfo{}
			}
			if r, ok := l.runs[*c.Run]; ok {
				c.Run = r
			} else {
				l.runs[*c.Run] = c.Run
			}
		}
		return n
	}
}

// validity is v reduced to its verdict and failure kinds, one shared
// value per distinct pair.
func (l *lightener) validity(v *artifacts.Validity) *artifacts.Validity {
	if v == nil {
		return nil
	}
	key := fmt.Sprint(fmtBool(v.Valid), v.Failed)
	if w, ok := l.vals[key]; ok {
		return w
	}
	if l.vals == nil {
		l.vals = map[string]*artifacts.Validity{}
	}
	w := &artifacts.Validity{Valid: shareBool(v.Valid), Failed: v.Failed}
	l.vals[key] = w
	return w
}

// fidelity is f reduced to the checks of its rejected replies and the
// failure kinds of its redos, one shared value per distinct record.
func (l *lightener) fidelity(f *artifacts.Fidelity) *artifacts.Fidelity {
	if f == nil {
		return nil
	}
	var b strings.Builder
	out := &artifacts.Fidelity{}
	for _, q := range f.Reasks {
		b.WriteString(q.Check + ",")
		out.Reasks = append(out.Reasks, artifacts.Reask{Check: l.s(q.Check)})
	}
	for _, d := range f.Redos {
		b.WriteString("|" + strings.Join(d.Failed, ","))
		out.Redos = append(out.Redos, artifacts.Redo{Failed: d.Failed})
	}
	if w, ok := l.fids[b.String()]; ok {
		return w
	}
	if l.fids == nil {
		l.fids = map[string]*artifacts.Fidelity{}
	}
	l.fids[b.String()] = out
	return out
}

func fmtBool(b *bool) string {
	if b == nil {
		return "null"
	}
	return fmt.Sprint(*b)
}

func (l *lightener) score(target string) func(s *artifacts.Score) int32 {
	return func(s *artifacts.Score) int32 {
		s.Justification, s.NullReason, s.Judges, s.Usage = "", "", nil, nil
		s.MetricID, s.TargetModel = l.s(s.MetricID), l.s(s.TargetModel)
		if s.ConvID == artifacts.ConvID(s.ID, target, s.Sample) {
			s.ConvID = ""
		}
		s.Present, s.Passed, s.Valid = shareBool(s.Present), shareBool(s.Passed), shareBool(s.Valid)
		return 0
	}
}

func (l *lightener) scenario(sc *Scenario) int32 {
	sc.Persona, sc.UserPersona, sc.LatentAdversarialGoal, sc.TargetSystemPrompt, sc.Landmarks = "", "", "", "", nil
	sc.MetricID, sc.UserGoal = l.s(sc.MetricID), l.s(sc.UserGoal)
	if len(sc.Demographic) > 0 {
		var key strings.Builder
		for _, av := range sc.Demographic {
			key.WriteString(av.Axis)
			key.WriteByte(0)
			key.WriteString(av.Value)
			key.WriteByte(0)
		}
		if l.demos == nil {
			l.demos = map[string]Demographic{}
		}
		if d, ok := l.demos[key.String()]; ok {
			sc.Demographic = d
		} else {
			l.demos[key.String()] = sc.Demographic
		}
	}
	return 0
}

// readCost reads a cost.json object ({phase: entry}) in pipeline order.
func readCost(path, scope string) ([]CostEntry, error) {
	phases, err := artifacts.ReadCost(path)
	if err != nil {
		return nil, err
	}
	sort.SliceStable(phases, func(i, j int) bool { return phaseLess(phases[i].Phase, phases[j].Phase) })
	out := make([]CostEntry, 0, len(phases))
	for _, p := range phases {
		out = append(out, CostEntry{Scope: scope, Key: p.Phase, Cost: p})
	}
	return out, nil
}

// phaseOrder is the pipeline order, so cost tables read top to bottom like
// the run happened; unknown phases sort after, alphabetically.
var phaseOrder = map[string]int{
	"gen_metrics": 1, "gen_scenarios": 2, "gen_scenarios_expand": 3,
	"simulate": 4, "validity": 5, "evaluate": 6,
}

func phaseLess(a, b string) bool {
	pa, pb := phaseOrder[a], phaseOrder[b]
	if pa == 0 {
		pa = 100
	}
	if pb == 0 {
		pb = 100
	}
	if pa != pb {
		return pa < pb
	}
	return a < b
}
