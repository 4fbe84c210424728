package report

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/impactbench/impactbench/internal/artifacts"
	"github.com/impactbench/impactbench/internal/config"
	"github.com/impactbench/impactbench/internal/human"
	"github.com/impactbench/impactbench/internal/layout"
	"github.com/impactbench/impactbench/internal/results"
	"github.com/impactbench/impactbench/internal/sanitize"
)

// StatusOptions configure Status.
type StatusOptions struct {
	// Color enables ANSI colour; pass true only when w is a terminal.
	Color bool
	// Samples is the expected samples per scenario (0: inferred from the data).
	Samples int
	// CacheDir is the benchmark's .cache/<bench> directory; when set, Status
	// also shows what a run in progress (or an interrupted one) has stored.
	CacheDir string
}

// statusConv is the part of a conversations.json row Status needs; decoding
// into it skips allocating transcripts.
type statusConv struct {
	ID           string              `json:"id"`
	ConvID       string              `json:"conv_id"`
	Sample       int                 `json:"_sample"`
	Status       string              `json:"status"`
	StatusReason string              `json:"status_reason"`
	Run          *statusRun          `json:"run"`
	Validity     *artifacts.Validity `json:"validity"`
	Fidelity     *artifacts.Fidelity `json:"fidelity"`
	Refused      []int               `json:"refused"`
}

// statusRun is the part of a conversation's run block status reads.
type statusRun struct {
	UserModel string `json:"user_model"`
}

type targetStatus struct {
	target                                 string
	hasDir, hasConvs, hasScores, hasResult bool
	convs, ok, failed                      int
	scores, null, unscored                 int
	cost                                   float64
	costUnknown, costEntries               int
	failures                               map[string]int // "status: reason" → count
	human                                  *HumanCountJSON
	// refused counts the target replies its provider stopped for safety
	// (conversations' refused) and the conversations holding one.
	refused RefusedCountJSON
}

// benchStatus is what Status prints, read from the benchmark directory.
type benchStatus struct {
	name     string
	scens    []Scenario
	hasScens bool
	scenErr  error
	metrics  int
	samples  int
	rows     []*targetStatus
	card     scorecard // the checks of the simulated user, per user model × target
	rootCost []CostEntry
	res      []results.ModelResult
	resErr   error
	benchErr error // benchmark.yaml is there but does not load
	benchDir string
	live     Live
}

// Status writes the terminal summary of a benchmark directory: which
// phases are done per target, failures, cost so far and the leaderboard
// (ordered by score, with intervals, few-clusters warnings and the
// model-vs-model differences). targets nil means every directory under
// runs/.
func Status(w io.Writer, benchDir string, targets []string, opts StatusOptions) error {
	if st, err := os.Stat(benchDir); err != nil {
		return fmt.Errorf("status: %w", err)
	} else if !st.IsDir() {
		return fmt.Errorf("status: %s is not a directory", benchDir)
	}
	// Names, reasons and model ids come from files anyone may have written
	// (a provider's error text among them): they are shown, never acted
	// on. Only the colours this code adds pass as escape sequences.
	w = sanitize.NewWriter(w)
	c := colorizer(opts.Color)
	bs, err := loadStatus(benchDir, targets, opts)
	if err != nil {
		return fmt.Errorf("status: %w", err)
	}
	writeStatusHeader(w, c, bs)
	writeTargetTable(w, c, bs)
	writeShards(w, c, bs.live.Shards)
	writeFailures(w, c, bs.rows)
	writeRefused(w, bs.rows)
	writePeople(w, c, bs.rows)
	writeScorecard(w, c, bs.card.list())
	writeStatusLeaderboard(w, c, filepath.Base(benchDir), bs.res, bs.resErr)
	return nil
}

// loadStatus reads everything Status prints. Unreadable files become
// messages in the output, never an error: status is for looking at a
// half-finished run. Its error is a folder of the call store or of the
// runs holding more entries than its bound (ReadLive): that is refused
// (exit 2 naming the folder), not shown as nothing stored.
func loadStatus(benchDir string, targets []string, opts StatusOptions) (*benchStatus, error) {
	bs := &benchStatus{benchDir: benchDir}
	if opts.CacheDir != "" {
		live, err := ReadLive(benchDir, opts.CacheDir)
		if err != nil {
			return nil, err
		}
		bs.live = live
	}
	bs.name, bs.benchErr = benchmarkName(benchDir)
	if bs.name == "" {
		bs.name = filepath.Base(filepath.Clean(benchDir))
	}
	var lite lightener // rows without their bulk: status reads only ids, verdicts and demographics
	bs.scens, _, bs.hasScens, bs.scenErr = readRows(layout.Bench{Dir: benchDir}.Scenarios(), nil, lite.scenario)
	bs.res, bs.resErr = readResults(layout.Bench{Dir: benchDir}.Results())
	if targets == nil {
		var err error
		if targets, err = runTargets(benchDir, Settings{}, bs.res); err != nil {
			return nil, err
		}
	}
	maxSample := -1
	for _, t := range targets {
		ts, ms := loadTarget(benchDir, t, &lite, &bs.card)
		ts.hasResult = resultFor(&Input{Results: bs.res}, t) != nil
		ts.human = humanCount(benchDir, t)
		maxSample = max(maxSample, ms)
		bs.rows = append(bs.rows, ts)
	}
	bs.samples = opts.Samples
	if bs.samples == 0 {
		bs.samples = max(maxSample+1, 1)
	}
	metrics := map[string]bool{}
	for _, s := range bs.scens {
		metrics[scenarioMetric(s)] = true
	}
	bs.metrics = len(metrics)
	bs.rootCost, _ = readCost(layout.Bench{Dir: benchDir}.Cost(), "")
	return bs, nil
}

// HumanCountJSON counts the conversations people played against a target
// (the viewer's Play page): all of them, the ones still being played
// (drafts), ended ones, and judged ones. Error says why the files could not
// be read (then the counts are 0).
type HumanCountJSON struct {
	Conversations int    `json:"conversations"`
	Drafts        int    `json:"drafts"`
	Ended         int    `json:"ended"`
	Judged        int    `json:"judged"`
	Error         string `json:"error,omitempty"`
}

// humanCount reads target's people-played files; nil when there are none.
func humanCount(benchDir, target string) *HumanCountJSON {
	convs, scores, err := human.Open(benchDir).List(target)
	if err != nil {
		return &HumanCountJSON{Error: sanitize.Terminal(err.Error())}
	}
	if len(convs) == 0 {
		return nil
	}
	out := &HumanCountJSON{Conversations: len(convs), Judged: len(scores)}
	for _, c := range convs {
		if c.State == human.Playing {
			out.Drafts++
		} else {
			out.Ended++
		}
	}
	return out
}

// loadTarget counts one target's conversations, verdicts and cost, and
// returns the largest sample index seen.
func loadTarget(benchDir, t string, lite *lightener, card *scorecard) (*targetStatus, int) {
	ts := &targetStatus{target: t, failures: map[string]int{}}
	dir := layout.Bench{Dir: benchDir}.Run(t)
	if st, err := os.Stat(dir.Dir); err == nil && st.IsDir() {
		ts.hasDir = true
	}
	convs, okc, _ := readArray[statusConv](dir.Conversations())
	scores, _, oks, _ := readRows(dir.Scores(), nil, lite.score(t))
	ts.hasConvs, ts.hasScores = okc, oks
	match := scoreMatcher(scores)
	maxSample := -1
	for _, cv := range convs {
		ts.convs++
		maxSample = max(maxSample, cv.Sample)
		if cv.Status == artifacts.StatusError || cv.Status == artifacts.StatusBudget {
			ts.failed++
			reason := cv.Status
			if cv.StatusReason != "" {
				reason += ": " + cv.StatusReason
			}
			ts.failures[reason]++
		} else {
			ts.ok++
		}
		user := ""
		if cv.Run != nil {
			user = cv.Run.UserModel
		}
		card.add(t, user, cv.Validity, cv.Fidelity)
		if n := len(slices.Compact(slices.Sorted(slices.Values(cv.Refused)))); n > 0 {
			ts.refused.Conversations++
			ts.refused.Replies += n
		}
		full := artifacts.Conversation{ID: cv.ID, ConvID: cv.ConvID, Sample: cv.Sample}
		if match(&full) < 0 {
			ts.unscored++
		}
	}
	for _, s := range scores {
		ts.scores++
		if s.Passed == nil {
			ts.null++
		}
	}
	costs, _ := readCost(dir.Cost(), t)
	for _, e := range costs {
		ts.costEntries++
		if costKnown(e.Cost) {
			ts.cost += e.Cost.Cost
		} else {
			ts.costUnknown++
		}
	}
	return ts, maxSample
}

func writeStatusHeader(w io.Writer, c colors, bs *benchStatus) {
	fmt.Fprintf(w, "%s  %s\n", c.bold("Benchmark"), bs.name)
	fmt.Fprintf(w, "%s  %s\n", c.bold("Directory"), bs.benchDir)
	if bs.benchErr != nil {
		fmt.Fprintf(w, "%s  %s\n", c.bold("Problem  "), c.red("benchmark.yaml unreadable: "+bs.benchErr.Error()))
	}
	switch {
	case bs.scenErr != nil:
		fmt.Fprintf(w, "%s  %s\n", c.bold("Scenarios"), c.red("unreadable: "+bs.scenErr.Error()))
	case !bs.hasScens:
		fmt.Fprintf(w, "%s  %s\n", c.bold("Scenarios"), "not generated yet")
	default:
		fmt.Fprintf(w, "%s  %d (%d metrics, %d sample(s) each per target)\n", c.bold("Scenarios"), len(bs.scens), bs.metrics, bs.samples)
	}
	if bs.live.Running {
		fmt.Fprintf(w, "%s  %s\n", c.bold("Cost     "), costLine(c, bs))
		fmt.Fprintf(w, "%s  %s\n\n", c.bold("Run      "), c.yellow("in progress ("+bs.live.Holder+"): counts below include what it has stored so far"))
		return
	}
	fmt.Fprintf(w, "%s  %s\n\n", c.bold("Cost     "), costLine(c, bs))
}

// costLine sums the benchmark's and every target's cost.json.
func costLine(c colors, bs *benchStatus) string {
	total, unknown := totalCost(bs)
	entries := len(bs.rootCost)
	for _, r := range bs.rows {
		entries += r.costEntries
	}
	line := money(total) + " so far"
	if entries == 0 {
		line = "not recorded (no cost.json)"
	}
	if unknown > 0 {
		line += c.yellow(fmt.Sprintf(" + unknown (%d phase(s) without prices)", unknown))
	}
	return line
}

func writeTargetTable(w io.Writer, c colors, bs *benchStatus) {
	if len(bs.rows) == 0 {
		fmt.Fprintln(w, "No target runs yet.")
		return
	}
	table := [][]string{{"TARGET", "CONVERSATIONS", "OK", "FAILED", "SCORES", "NULL", "UNSCORED", "COST", "RESULTS"}}
	for _, r := range bs.rows {
		table = append(table, targetRow(r, bs))
	}
	writeTable(w, table, []bool{false, true, true, true, true, true, true, true, false}, func(row, col int, s string) string {
		switch {
		case row == 0:
			return c.bold(s)
		case col == 3 && s != "0" && s != "":
			return c.red(s)
		case col == 7 && strings.Contains(s, "unknown"):
			return c.yellow(s)
		}
		return s
	})
}

func targetRow(r *targetStatus, bs *benchStatus) []string {
	lv, hasLive := bs.live.Targets[r.target]
	if !r.hasDir && !hasLive {
		return []string{r.target, "not started", "", "", "", "", "", "", ""}
	}
	total := 0
	if bs.hasScens {
		total = len(bs.scens) * bs.samples
	}
	conv := "not run yet"
	if r.hasConvs {
		conv = strconv.Itoa(r.convs)
		if bs.hasScens {
			conv += "/" + strconv.Itoa(total)
		}
	}
	sc, null, uns := "not judged yet", "", ""
	if r.hasScores {
		sc, null, uns = strconv.Itoa(r.scores), strconv.Itoa(r.null), strconv.Itoa(r.unscored)
	}
	// While a run works on a phase (or after one was interrupted) its
	// output is missing or about to be replaced: show what is stored.
	if hasLive && (bs.live.Running || !r.hasConvs) && (lv.Simulate != UnitCount{}) {
		conv = liveCell(lv.Simulate, total)
	}
	if hasLive && (bs.live.Running || !r.hasScores) && (lv.Evaluate != UnitCount{}) {
		sc = liveCell(lv.Evaluate, total)
	}
	cost := "—"
	switch {
	case r.costEntries > 0 && r.costUnknown == r.costEntries:
		cost = "unknown"
	case r.costUnknown > 0:
		cost = money(r.cost) + "+unknown"
	case r.costEntries > 0:
		cost = money(r.cost)
	}
	res := "no"
	if r.hasResult {
		res = "yes"
	}
	return []string{r.target, conv, itoaIf(r.hasConvs, r.ok), itoaIf(r.hasConvs, r.failed), sc, null, uns, cost, res}
}

// writeRefused says, per target, how many of its replies its provider
// stopped for safety: answers, judged and counted, which nothing else in
// the table shows.
func writeRefused(w io.Writer, rows []*targetStatus) {
	for _, r := range rows {
		if n := r.refused; n.Replies > 0 {
			replies := "replies"
			if n.Replies == 1 {
				replies = "reply"
			}
			fmt.Fprintf(w, "provider safety stops: %s: %d target %s in %d conversation(s), the target's answers (judged and counted)\n",
				r.target, n.Replies, replies, n.Conversations)
		}
	}
}

// writePeople says, per target, how many conversations people played on
// the Play page, drafts (still being played) included.
func writePeople(w io.Writer, c colors, rows []*targetStatus) {
	for _, r := range rows {
		h := r.human
		switch {
		case h == nil:
		case h.Error != "":
			fmt.Fprintf(w, "%s played by people: %s: %s\n", c.yellow("!"), r.target, h.Error)
		default:
			fmt.Fprintf(w, "played by people: %s: %d conversation(s), %d judged, %d ended without a verdict yet, %d draft(s) still being played\n",
				r.target, h.Conversations, h.Judged, h.Ended-min(h.Ended, h.Judged), h.Drafts)
		}
	}
}

// writeFailures lists each target's most frequent failure reasons.
// writeShards lists `--shard` outputs not merged yet, with their rows.
func writeShards(w io.Writer, c colors, shards map[string][]ShardFile) {
	if len(shards) == 0 {
		return
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, c.bold("Shard files (combine them with `impactbench merge`)"))
	targets := make([]string, 0, len(shards))
	for t := range shards {
		targets = append(targets, t)
	}
	sort.Strings(targets)
	for _, t := range targets {
		for _, f := range shards[t] {
			rows := strconv.Itoa(f.Rows) + " rows"
			if f.Rows < 0 {
				rows = c.red("unreadable")
			}
			fmt.Fprintf(w, "  %s  %s  %s\n", t, f.File, rows)
		}
	}
}

func writeFailures(w io.Writer, c colors, rows []*targetStatus) {
	var fails []string
	for _, r := range rows {
		if r.failed == 0 {
			continue
		}
		fails = append(fails, fmt.Sprintf("  %s: %d conversation(s) failed", r.target, r.failed))
		reasons := make([]string, 0, len(r.failures))
		for k := range r.failures {
			reasons = append(reasons, k)
		}
		sort.Slice(reasons, func(i, j int) bool {
			if r.failures[reasons[i]] != r.failures[reasons[j]] {
				return r.failures[reasons[i]] > r.failures[reasons[j]]
			}
			return reasons[i] < reasons[j]
		})
		for i, k := range reasons {
			if i == 5 {
				fails = append(fails, fmt.Sprintf("    … %d more reason(s)", len(reasons)-5))
				break
			}
			fails = append(fails, fmt.Sprintf("    ×%d  %s", r.failures[k], oneLine(k, 100)))
		}
	}
	if len(fails) > 0 {
		fmt.Fprintf(w, "\n%s\n%s\n", c.red("Failures"), strings.Join(fails, "\n"))
	}
}

func itoaIf(ok bool, n int) string {
	if !ok {
		return ""
	}
	return strconv.Itoa(n)
}

func money(c float64) string {
	if c >= 1 {
		return fmt.Sprintf("$%.2f", c)
	}
	return fmt.Sprintf("$%.4f", c)
}

func rateCI(v rateView) string {
	if v.Rate == nil {
		return "—"
	}
	s := fmt.Sprintf("%.1f%%", *v.Rate*100)
	if v.Lo != nil && v.Hi != nil {
		s += fmt.Sprintf(" [%.1f, %.1f]", *v.Lo*100, *v.Hi*100)
	}
	return s
}

// oneLine flattens and truncates a failure reason (provider errors can be
// multi-line JSON) so the table stays readable.
func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}

// writeTable pads columns to their widest plain cell (right-aligned where
// right[col]) and applies style after padding, so ANSI codes never count
// toward the width.
func writeTable(w io.Writer, rows [][]string, right []bool, style func(row, col int, s string) string) {
	widths := make([]int, len(rows[0]))
	for _, r := range rows {
		for i, cell := range r {
			widths[i] = max(widths[i], len([]rune(cell)))
		}
	}
	for ri, r := range rows {
		var b strings.Builder
		for i, cell := range r {
			pad := strings.Repeat(" ", widths[i]-len([]rune(cell)))
			if i > 0 {
				b.WriteString("  ")
			}
			if right[i] {
				b.WriteString(pad + style(ri, i, cell))
			} else {
				b.WriteString(style(ri, i, cell))
				if i < len(r)-1 {
					b.WriteString(pad)
				}
			}
		}
		fmt.Fprintln(w, strings.TrimRight(b.String(), " "))
	}
}

type colors bool

func colorizer(on bool) colors { return colors(on) }

func (c colors) wrap(code, s string) string {
	if !c || s == "" {
		return s
	}
	return "\x1b[" + code + "m" + s + "\x1b[0m"
}
func (c colors) bold(s string) string   { return c.wrap("1", s) }
func (c colors) red(s string) string    { return c.wrap("31", s) }
func (c colors) yellow(s string) string { return c.wrap("33", s) }

// benchmarkName is the name in benchDir's benchmark.yaml, read once, and
// what is wrong with the file when it is there but does not load: then the
// name is what can still be read of it ("" when nothing can).
func benchmarkName(benchDir string) (string, error) {
	spec := layout.BenchmarkPath(benchDir)
	if _, err := os.Lstat(spec); err != nil {
		return "", nil // none yet: not a problem status reports
	}
	b, err := config.LoadBenchmark(spec)
	if err != nil {
		return config.BenchmarkName(spec), err
	}
	return b.Name, nil
}
