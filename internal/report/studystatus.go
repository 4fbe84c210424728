package report

import (
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"strconv"

	"github.com/impactbench/impactbench/internal/layout"
)

// StudyBench is one benchmark of a study, as `status all` reads it.
type StudyBench struct {
	Dir      string // the benchmark directory
	CacheDir string // its .cache/<bench> (live progress)
}

// studyStatus is what `status all` prints: every benchmark's status.
type studyStatus struct {
	benches []*benchStatus
}

func loadStudyStatus(benches []StudyBench, targets []string, opts StatusOptions) (*studyStatus, error) {
	ss := &studyStatus{}
	for _, b := range benches {
		o := opts
		o.CacheDir = b.CacheDir
		bs, err := loadStatus(b.Dir, targets, o)
		if err != nil {
			return nil, fmt.Errorf("status: %w", err)
		}
		ss.benches = append(ss.benches, bs)
	}
	return ss, nil
}

// StudyStatus writes one view of a study: a row per benchmark (its
// conversations and verdicts over every target, failures, cost, results),
// a row per target over every benchmark, and the study's totals. Live
// counts of a run in progress are included, as in Status.
func StudyStatus(w io.Writer, benches []StudyBench, targets []string, opts StatusOptions) error {
	c := colorizer(opts.Color)
	ss, err := loadStudyStatus(benches, targets, opts)
	if err != nil {
		return err
	}
	tot := ss.totals()
	fmt.Fprintf(w, "%s  %d benchmarks, %d scenarios\n", c.bold("Study    "), len(ss.benches), tot.scenarios)
	fmt.Fprintf(w, "%s  %s\n", c.bold("Cost     "), studyCostLine(c, tot))
	if tot.running > 0 {
		fmt.Fprintf(w, "%s  %s\n", c.bold("Run      "), c.yellow(fmt.Sprintf("in progress on %d benchmark(s): counts below include what it has stored so far", tot.running)))
	}
	fmt.Fprintln(w)
	writeStudyBenchTable(w, c, ss, tot)
	fmt.Fprintln(w)
	writeStudyTargetTable(w, c, ss)
	writeStudyProblems(w, c, ss)
	return nil
}

// writeStudyProblems names each benchmark file the tables could not read
// (their counts leave it out), as status <bench> does.
func writeStudyProblems(w io.Writer, c colors, ss *studyStatus) {
	for _, bs := range ss.benches {
		for _, p := range []struct {
			file string
			err  error
		}{{layout.BenchmarkFile, bs.benchErr}, {layout.ScenariosFile, bs.scenErr}, {layout.ResultsFile, bs.resErr}} {
			if p.err != nil {
				fmt.Fprintf(w, "%s: %s\n", filepath.Base(bs.benchDir), c.red(p.file+" unreadable: "+p.err.Error()))
			}
		}
	}
}

// studyCounts is a row of the study tables: conversations and verdicts
// stored (finished files, or what a run in progress has stored), of how
// many expected.
type studyCounts struct {
	scenarios, expected, convs, failed, scores, null int
	cost                                             float64
	unknown, running, results, targets               int
}

func (a studyCounts) plus(b studyCounts) studyCounts {
	a.scenarios, a.expected, a.convs, a.failed = a.scenarios+b.scenarios, a.expected+b.expected, a.convs+b.convs, a.failed+b.failed
	a.scores, a.null, a.cost, a.unknown = a.scores+b.scores, a.null+b.null, a.cost+b.cost, a.unknown+b.unknown
	a.running, a.results, a.targets = a.running+b.running, a.results+b.results, a.targets+b.targets
	return a
}

// countsOf is one benchmark's counts, for one target or every target ("").
func countsOf(bs *benchStatus, target string) studyCounts {
	var n studyCounts
	if target == "" {
		n.scenarios = len(bs.scens)
		if bs.live.Running {
			n.running = 1
		}
		cost, unk := totalCost(bs)
		n.cost, n.unknown = cost, unk
	}
	for _, r := range bs.rows {
		if target != "" && r.target != target {
			continue
		}
		n.targets++
		if bs.hasScens {
			n.expected += len(bs.scens) * bs.samples
		}
		lv := bs.live.Targets[r.target]
		n.convs += storedCount(r.hasConvs, r.convs, lv.Simulate, bs.live.Running)
		n.scores += storedCount(r.hasScores, r.scores, lv.Evaluate, bs.live.Running)
		n.failed, n.null = n.failed+r.failed, n.null+r.null
		if r.hasResult {
			n.results++
		}
		if target != "" {
			n.cost += r.cost
			n.unknown += r.costUnknown
		}
	}
	return n
}

// storedCount is a file's rows, or, while a run works on it (or after it
// stopped before writing it), the rows its call store holds.
func storedCount(hasFile bool, inFile int, live UnitCount, running bool) int {
	if (running || !hasFile) && live != (UnitCount{}) {
		return live.Stored
	}
	return inFile
}

func (ss *studyStatus) totals() studyCounts {
	var t studyCounts
	for _, bs := range ss.benches {
		t = t.plus(countsOf(bs, ""))
	}
	return t
}

func studyCostLine(c colors, t studyCounts) string {
	line := money(t.cost) + " so far"
	if t.unknown > 0 {
		line += c.yellow(fmt.Sprintf(" + unknown (%d phase(s) without prices)", t.unknown))
	}
	return line
}

func writeStudyBenchTable(w io.Writer, c colors, ss *studyStatus, tot studyCounts) {
	table := [][]string{{"BENCHMARK", "SCENARIOS", "CONVERSATIONS", "FAILED", "SCORES", "NULL", "COST", "RESULTS"}}
	row := func(name string, n studyCounts) []string {
		return []string{name, strconv.Itoa(n.scenarios), ofExpected(n.convs, n.expected), strconv.Itoa(n.failed),
			ofExpected(n.scores, n.expected), strconv.Itoa(n.null), money(n.cost), fmt.Sprintf("%d/%d", n.results, n.targets)}
	}
	for _, bs := range ss.benches {
		table = append(table, row(filepath.Base(bs.benchDir), countsOf(bs, "")))
	}
	table = append(table, row("TOTAL", tot))
	writeStudyTable(w, c, table)
}

func writeStudyTargetTable(w io.Writer, c colors, ss *studyStatus) {
	table := [][]string{{"TARGET", "BENCHMARKS", "CONVERSATIONS", "FAILED", "SCORES", "NULL", "COST", "RESULTS"}}
	for _, t := range ss.targetNames() {
		var n studyCounts
		for _, bs := range ss.benches {
			n = n.plus(countsOf(bs, t))
		}
		table = append(table, []string{t, strconv.Itoa(n.targets), ofExpected(n.convs, n.expected), strconv.Itoa(n.failed),
			ofExpected(n.scores, n.expected), strconv.Itoa(n.null), money(n.cost), fmt.Sprintf("%d/%d", n.results, n.targets)})
	}
	writeStudyTable(w, c, table)
}

// targetNames lists the targets of every benchmark, in first-seen order.
func (ss *studyStatus) targetNames() []string {
	var out []string
	seen := map[string]bool{}
	for _, bs := range ss.benches {
		for _, r := range bs.rows {
			if !seen[r.target] {
				seen[r.target] = true
				out = append(out, r.target)
			}
		}
	}
	return out
}

func writeStudyTable(w io.Writer, c colors, table [][]string) {
	writeTable(w, table, []bool{false, true, true, true, true, true, true, true}, func(row, col int, s string) string {
		switch {
		case row == 0 || row == len(table)-1 && table[row][0] == "TOTAL":
			return c.bold(s)
		case col == 3 && s != "0":
			return c.red(s)
		}
		return s
	})
}

func ofExpected(n, expected int) string {
	if expected == 0 {
		return strconv.Itoa(n)
	}
	return fmt.Sprintf("%d/%d", n, expected)
}

// StudyStatusJSON is `status all --json`: each benchmark's status object
// and the study's totals.
type StudyStatusJSON struct {
	Benchmarks []StatusJSON    `json:"benchmarks"`
	Totals     StudyTotalsJSON `json:"totals"`
}

// StudyTotalsJSON is the study's totals over every benchmark and target.
type StudyTotalsJSON struct {
	Benchmarks            int     `json:"benchmarks"`
	Scenarios             int     `json:"scenarios"`
	Conversations         int     `json:"conversations"`
	ExpectedConversations int     `json:"expected_conversations"`
	Failed                int     `json:"failed"`
	Scores                int     `json:"scores"`
	Null                  int     `json:"null"`
	CostUSD               float64 `json:"cost_usd"`
	UnknownCostPhases     int     `json:"unknown_cost_phases"`
	Running               int     `json:"running"`
}

// WriteStudyStatusJSON writes `status all --json`.
func WriteStudyStatusJSON(w io.Writer, benches []StudyBench, targets []string, opts StatusOptions) error {
	ss, err := loadStudyStatus(benches, targets, opts)
	if err != nil {
		return err
	}
	out := StudyStatusJSON{Benchmarks: []StatusJSON{}}
	for _, bs := range ss.benches {
		out.Benchmarks = append(out.Benchmarks, statusJSON(bs))
	}
	t := ss.totals()
	out.Totals = StudyTotalsJSON{Benchmarks: len(ss.benches), Scenarios: t.scenarios, Conversations: t.convs, ExpectedConversations: t.expected,
		Failed: t.failed, Scores: t.scores, Null: t.null, CostUSD: t.cost, UnknownCostPhases: t.unknown, Running: t.running}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}
