package report

import (
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/impactbench/impactbench/internal/artifacts"
	"github.com/impactbench/impactbench/internal/results"
	"github.com/impactbench/impactbench/internal/sanitize"
)

// maxStatusPairs caps the model-vs-model lines of `status`; report.html
// shows every pair, per track and metric.
const maxStatusPairs = 15

// boardRow is one model of status's leaderboard.
type boardRow struct {
	model    string
	pos, neg rateView
	score    scoreView
	pairs    []results.Pairwise
	// corr is leaderboard.corrected with its tracks (nil without labels);
	// metrics the corrected rate of each metric, as results.json has it.
	corr    *correctedScore
	metrics results.Keyed[*results.Corrected]
}

// writeStatusLeaderboard prints the leaderboard ordered by score with
// every interval's method, n and scenario count, the few-clusters
// warnings, the scores corrected for judge error (when results.json has
// them), and the model-vs-model differences on the score.
func writeStatusLeaderboard(w io.Writer, c colors, bench string, res []results.ModelResult, resErr error) {
	fmt.Fprintf(w, "\n%s\n", c.bold("Leaderboard"))
	switch {
	case resErr != nil:
		fmt.Fprintf(w, "results.json unreadable: %v\n", resErr)
		return
	case len(res) == 0:
		fmt.Fprintln(w, "results.json not available yet.")
		return
	}
	rows := boardRows(res)
	writeBoardTable(w, c, rows)
	writeBoardNotes(w, c, rows)
	writeCorrectedLines(w, c, rows)
	writeCalibrationHints(w, c, bench, res, rows)
	writeHumanLines(w, c, res)
	writePairs(w, c, rows, multiplicityOf(res))
}

// writeHumanLines prints, per model people played against, its pass rates
// with people against those with simulated users (human_comparison).
func writeHumanLines(w io.Writer, c colors, res []results.ModelResult) {
	for _, r := range res {
		if r.HumanComparison == nil {
			continue
		}
		text, warning := results.HumanText(r.HumanComparison)
		fmt.Fprintf(w, "people vs simulated users: %s %s\n", r.TargetModel, text)
		if warning != "" {
			fmt.Fprintf(w, "%s %s\n", c.yellow("!"), warning)
		}
	}
}

// boardRows converts results.json's entries and orders them by score.
func boardRows(res []results.ModelResult) []boardRow {
	rows := make([]boardRow, 0, len(res))
	for i := range res {
		r := &res[i]
		pos := fromTypeRate(r.PositivePassRate, r.NPositive, r.PositiveCI)
		neg := fromTypeRate(r.NegativePassRate, r.NNegative, r.NegativeCI)
		rows = append(rows, boardRow{model: r.TargetModel, pos: pos, neg: neg, score: scoreFor(r, pos, neg), pairs: r.Pairwise, corr: correctedScoreFor(r), metrics: metricCorrections(r)})
	}
	key := func(r boardRow) float64 {
		if r.score.Score == nil {
			return -1
		}
		return *r.score.Score
	}
	sort.SliceStable(rows, func(i, j int) bool {
		if ki, kj := key(rows[i]), key(rows[j]); ki != kj {
			return ki > kj
		}
		return rows[i].model < rows[j].model
	})
	return rows
}

func multiplicityOf(res []results.ModelResult) *results.Multiplicity {
	for _, r := range res {
		if r.Multiplicity != nil {
			return r.Multiplicity
		}
	}
	return nil
}

func writeBoardTable(w io.Writer, c colors, rows []boardRow) {
	table := [][]string{{"#", "MODEL", "SCORE [95% CI]", "RANK [95%]", "POSITIVE [95% CI]", "N (SCEN.)", "NEGATIVE [95% CI]", "N (SCEN.)", "TIED WITH"}}
	for i, r := range rows {
		rank := strconv.Itoa(i + 1)
		if r.score.Rank != nil {
			rank = strconv.Itoa(*r.score.Rank)
		}
		table = append(table, []string{rank, r.model, scoreText(r.score), rankText(r.score),
			rateCI(r.pos) + mark(r.pos.Warn), nScenText(r.pos), rateCI(r.neg) + mark(r.neg.Warn), nScenText(r.neg), tiedText(r.score)})
	}
	writeTable(w, table, []bool{true, false, true, true, true, true, true, true, false}, func(row, _ int, s string) string {
		switch {
		case row == 0:
			return c.bold(s)
		case strings.HasSuffix(s, " !"):
			return c.yellow(s)
		}
		return s
	})
}

// mark flags a cell whose interval carries a few-clusters warning; the
// warnings are spelled out under the table.
func mark(warn string) string {
	if warn == "" {
		return ""
	}
	return " !"
}

func scoreText(s scoreView) string {
	if s.Score == nil {
		return "—"
	}
	t := fmt.Sprintf("%.1f%%", *s.Score*100)
	switch {
	case s.Local:
		t += " (mean)"
	case s.Lo != nil && s.Hi != nil:
		t += fmt.Sprintf(" [%.1f, %.1f]", *s.Lo*100, *s.Hi*100)
	}
	return t + mark(s.Warn)
}

func rankText(s scoreView) string {
	if s.Rank == nil {
		return "—"
	}
	t := strconv.Itoa(*s.Rank)
	if s.RankLo != nil && s.RankHi != nil {
		if *s.RankLo == *s.RankHi {
			t += fmt.Sprintf(" [%d]", *s.RankLo)
		} else {
			t += fmt.Sprintf(" [%d–%d]", *s.RankLo, *s.RankHi)
		}
	}
	return t
}

func nScenText(v rateView) string {
	if v.Clusters > 0 {
		return fmt.Sprintf("%d (%d)", v.N, v.Clusters)
	}
	return strconv.Itoa(v.N)
}

func tiedText(s scoreView) string {
	switch {
	case len(s.Tied) > 0:
		return strings.Join(s.Tied, ", ")
	case s.Rank != nil:
		return "none"
	}
	return "—"
}

// writeBoardNotes states what the score is, the interval methods with n
// and scenario counts, and each distinct few-clusters warning once.
func writeBoardNotes(w io.Writer, c colors, rows []boardRow) {
	methods := map[string]bool{}
	local := false
	var warns []string
	where := map[string][]string{}
	note := func(warn, at string) {
		if warn == "" {
			return
		}
		if where[warn] == nil {
			warns = append(warns, warn)
		}
		where[warn] = append(where[warn], at)
	}
	for _, r := range rows {
		for _, m := range []string{r.pos.Method, r.neg.Method} {
			if m != "" {
				methods[m] = true
			}
		}
		local = local || r.score.Local
		note(r.pos.Warn, r.model+" positive")
		note(r.neg.Warn, r.model+" negative")
	}
	ms := make([]string, 0, len(methods))
	for m := range methods {
		ms = append(ms, m)
	}
	sort.Strings(ms)
	fmt.Fprintln(w, "Score: the mean of the positive and negative pass rates, the quantity models are ordered by; its interval is the mean of the tracks' limits (conservative).")
	if local {
		fmt.Fprintln(w, "(mean): results.json has no leaderboard block, so no score interval, rank interval or ties; run aggregate again.")
	} else {
		fmt.Fprintln(w, "Rank [95%]: 1 + the models significantly better to the count minus those significantly worse (the same Holm-adjusted tests as Tied; all intervals hold together at 95%). Tied: the paired score difference is not significant.")
	}
	if len(ms) > 0 {
		fmt.Fprintf(w, "Intervals: %s. N = conversations with a verdict; SCEN. = base scenarios, the unit of evidence.\n", strings.Join(ms, ", "))
	}
	for _, warn := range warns {
		fmt.Fprintf(w, "%s %s (%s)\n", c.yellow("!"), warn, strings.Join(where[warn], ", "))
	}
}

// writePairs lists the score differences between models (each pair once,
// from the higher-scored side), then the ties and the significant ones.
func writePairs(w io.Writer, c colors, rows []boardRow, mult *results.Multiplicity) {
	type pair struct {
		a string
		p results.Pairwise
	}
	var pairs []pair
	for i, r := range rows {
		for _, o := range rows[i+1:] {
			for _, p := range r.pairs {
				if p.Track == "leaderboard" && p.MetricID == nil && p.Other == o.model {
					pairs = append(pairs, pair{r.model, p})
				}
			}
		}
	}
	if len(pairs) == 0 {
		return
	}
	adj := "p-values as given"
	switch {
	case pairs[0].p.Family != "" && mult != nil:
		adj = fmt.Sprintf("%s-adjusted within the %d pairs of models (family %s)",
			strings.ToUpper(mult.Correction[:1])+mult.Correction[1:], pairs[0].p.FamilySize, pairs[0].p.Family)
	case mult != nil:
		adj = fmt.Sprintf("%s-adjusted over %d tests in this file", strings.ToUpper(mult.Correction[:1])+mult.Correction[1:], mult.FamilySize)
	}
	fmt.Fprintf(w, "\n%s\n", c.bold("Model vs model (score: mean difference over the base scenarios both ran; "+adj+")"))
	table := [][]string{{"A − B", "DIFF (PT) [95% CI]", "SCEN.", "P", "ADJUSTED P", "RESULT"}}
	var ties, sig []string
	for i, x := range pairs {
		p := x.p
		label := x.a + " − " + p.Other
		result := "not significant"
		switch {
		case p.Significant:
			result = "significant"
			sig = append(sig, fmt.Sprintf("%s > %s", x.a, p.Other))
			if p.Diff != nil && *p.Diff < 0 {
				sig[len(sig)-1] = fmt.Sprintf("%s > %s", p.Other, x.a)
			}
		case p.Family != "" || (p.CILow != nil && p.CIHigh != nil && *p.CILow <= 0 && *p.CIHigh >= 0):
			// A tie is a pair that is not significant (older files: whose
			// interval contains 0), as results.json's tied_with says.
			result = "tie"
			ties = append(ties, x.a+" = "+p.Other)
		}
		if i < maxStatusPairs {
			table = append(table, []string{label, ppCI(p.Diff, p.CILow, p.CIHigh), strconv.Itoa(p.NClusters) + mark(p.Warning),
				fmtP(p.PValue), fmtP(p.PAdjusted), result})
		}
	}
	writeTable(w, table, []bool{false, true, true, true, true, false}, func(row, col int, s string) string {
		switch {
		case row == 0:
			return c.bold(s)
		case col == 5 && s == "significant":
			return c.red(s)
		}
		return s
	})
	if len(pairs) > maxStatusPairs {
		fmt.Fprintf(w, "… %d more pair(s): see report.html (every pair, per track and metric).\n", len(pairs)-maxStatusPairs)
	}
	fmt.Fprintf(w, "Statistical ties: %s\n", listOrNone(ties))
	fmt.Fprintf(w, "Differences beyond chance: %s\n", listOrNone(sig))
}

func listOrNone(xs []string) string {
	if len(xs) == 0 {
		return "none"
	}
	return strings.Join(xs, "; ")
}

// ppCI formats a difference and its interval in signed percentage points.
func ppCI(d, lo, hi *float64) string {
	if d == nil {
		return "—"
	}
	s := signedPP(*d)
	if lo != nil && hi != nil {
		s += " [" + signedPP(*lo) + ", " + signedPP(*hi) + "]"
	}
	return s
}

func signedPP(x float64) string {
	v := x * 100
	if math.Abs(v) < 0.05 {
		v = 0 // "+0.0", never "-0.0"
	}
	return fmt.Sprintf("%+.1f", v)
}

// fmtP prints a p-value with 3 decimals, never across 0.05 (0.04996 is
// "0.04996", not "0.050": the row's "significant" and its p must read
// alike); tiny ones in exponent form.
func fmtP(p float64) string {
	if p < 0.001 {
		return fmt.Sprintf("%.1e", p)
	}
	return artifacts.PValue(p, 0.05, 3)
}

// writeCorrectedLines prints, per model with leaderboard.corrected, its
// score and track rates corrected for judge error, or why there is none —
// and then every metric's corrected rate that exists (a score that cannot
// be corrected does not hide the metrics that can), clipped ones marked.
func writeCorrectedLines(w io.Writer, c colors, rows []boardRow) {
	for _, r := range rows {
		if r.corr == nil {
			continue
		}
		fmt.Fprintf(w, "corrected for judge error: %s %s\n", sanitize.Terminal(r.model), correctedText(c, r.corr))
		var parts []string
		n := 0
		for _, e := range r.metrics {
			m := e.Value
			if m.Estimate == nil {
				parts = append(parts, sanitize.Terminal(e.Key)+" —")
				continue
			}
			n++
			part := sanitize.Terminal(e.Key) + " " + rateCI(rateView{Rate: m.Estimate, Lo: m.Low, Hi: m.High})
			if m.ClipNote != "" {
				part += fmt.Sprintf(" (clipped from %.3f)", *m.Unclipped)
			}
			parts = append(parts, part)
		}
		if n > 0 {
			fmt.Fprintf(w, "  by metric: %s\n", strings.Join(parts, "; "))
		}
	}
}

// writeCalibrationHints says, under the corrected lines, what to do when a
// model has no corrected score (which command says why, and which labels
// would give one) and when label lines were left out because their
// conversation was run again since: status alone otherwise said only
// "no corrected rate for the positive and negative tracks".
func writeCalibrationHints(w io.Writer, c colors, bench string, res []results.ModelResult, rows []boardRow) {
	missing := 0
	for _, r := range rows {
		if r.corr != nil && r.corr.Score == nil {
			missing++
		}
	}
	if missing > 0 {
		b := sanitize.Terminal(bench)
		fmt.Fprintf(w, "  %d model(s) without a corrected score: `impactbench calibrate %s` says why, per metric; `impactbench calibrate %s --plan` which labels would give one (label them in impactbench view's review queue)\n", missing, b, b)
	}
	for _, r := range res {
		if jc := r.JudgeCalibration; jc != nil && jc.AllTargets != nil && jc.AllTargets.NStale > 0 {
			fmt.Fprintf(w, "  %s\n", c.yellow(fmt.Sprintf("! %d label line(s) were given on a conversation run again since: left out; label those rows again", jc.AllTargets.NStale)))
			break
		}
	}
}

// metricCorrections are r's per-metric corrected rates, in metric order.
func metricCorrections(r *results.ModelResult) results.Keyed[*results.Corrected] {
	var out results.Keyed[*results.Corrected]
	for _, e := range r.ByMetric {
		if e.Value.Corrected != nil {
			out = append(out, results.Entry[*results.Corrected]{Key: e.Key, Value: e.Value.Corrected})
		}
	}
	return out
}

func correctedText(c colors, s *correctedScore) string {
	if s.Score == nil {
		return c.yellow("not corrected: " + strings.TrimPrefix(s.Warn, "not corrected: "))
	}
	t := rateCI(rateView{Rate: s.Score, Lo: s.Lo, Hi: s.Hi})
	var tracks []string
	for _, tr := range []struct {
		name string
		v    *corrRate
	}{{"positive", s.Pos}, {"negative", s.Neg}} {
		if tr.v != nil && tr.v.Rate != nil {
			tracks = append(tracks, tr.name+" "+rateCI(rateView{Rate: tr.v.Rate, Lo: tr.v.Lo, Hi: tr.v.Hi}))
		}
	}
	t += " (Rogan–Gladen, judge " + s.Judge
	if len(tracks) > 0 {
		t += "; " + strings.Join(tracks, ", ")
	}
	return t + ")"
}
