package compare

import (
	"cmp"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/impactbench/impactbench/internal/stats"
)

// topMetricDiffs is how many per-metric differences the table shows.
const topMetricDiffs = 10

// WriteTable writes a plain-text summary of the report: what was compared
// and whether it is comparable, each model's rates with the difference and
// its interval, rank agreement, order changes, the largest per-metric
// differences and the notes. Rates are percentages; differences are
// percentage points.
func (r *Report) WriteTable(w io.Writer) error {
	ew := &errWriter{w: w}
	r.writeHeader(ew)
	r.writeRates(ew)
	r.writeSafetyStops(ew)
	r.writeRanks(ew)
	r.writeOrderChanges(ew)
	r.writeMetricDiffs(ew)
	r.writePeople(ew)
	if len(r.Notes) > 0 {
		ew.printf("\nNotes\n")
		for _, n := range r.Notes {
			ew.printf("  - %s\n", n)
		}
	}
	return ew.err
}

func (r *Report) writeHeader(w *errWriter) {
	w.printf("Comparison: A = %s (%s)  vs  B = %s (%s)\n", r.A.Label, r.A.Dir, r.B.Label, r.B.Dir)
	verdict := "yes"
	switch {
	case r.Forced:
		verdict = "NO (compared anyway because forced; the numbers measure different things)"
	case !r.Comparability.Comparable:
		verdict = "NO"
	}
	how := "run manifests"
	if r.Comparability.Checked == CheckedMetricsOnly {
		how = "benchmark.yaml metrics only"
	}
	w.printf("Comparable: %s (checked: %s)\n", verdict, how)
	for _, l := range r.Comparability.Lines() {
		w.printf("  %s\n", l)
	}
	w.printf("Intervals (%s): each rate %s over its base scenarios (%d in all; n and scenarios per row), B-A and gaps %s from the two rates' intervals;\n",
		confPct(r.Conf), stats.MethodClusterScore, r.Clusters, MethodMOVER)
	w.printf("  rank correlations: cluster bootstrap, %d replicates, seed %d\n", r.Reps, r.Seed)
	if r.Warning != "" {
		w.printf("Warning: %s\n", r.Warning)
	}
	w.printf("Models in both runs: %s\n", list(r.Models))
	if len(r.OnlyInA) > 0 {
		w.printf("Only in A (not compared): %s\n", list(r.OnlyInA))
	}
	if len(r.OnlyInB) > 0 {
		w.printf("Only in B (not compared): %s\n", list(r.OnlyInB))
	}
}

func (r *Report) writeRates(w *errWriter) {
	w.printf("\nPass rates with %s intervals (B-A in percentage points; * = interval excludes 0; ! = fewer than %d base scenarios)\n",
		confPct(r.Conf), stats.FewClusters)
	tw := w.table()
	fmt.Fprintf(tw, "MODEL\tTRACK\tA\tN (SCEN.)\tB\tN (SCEN.)\tB-A\t%s INTERVAL\n", confPct(r.Conf))
	for _, m := range r.Rates {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s%s\n", m.Model, m.Track, rateCI(m.A), nScen(m.A), rateCI(m.B), nScen(m.B),
			pp(m.Diff.Value), interval(m.Diff.Lo, m.Diff.Hi, pp), star(m.Diff.Significant))
	}
	w.flush(tw)
}

func (r *Report) writeRanks(w *errWriter) {
	w.printf("\nRank agreement of the models, A vs B (1 = same order, -1 = reversed)\n")
	tw := w.table()
	fmt.Fprintf(tw, "TRACK\tMODELS\tSPEARMAN RHO\tKENDALL TAU-B\n")
	for _, ra := range r.RankAgreement {
		if ra.Spearman.Value == nil {
			fmt.Fprintf(tw, "%s\t%d\tn/a\tn/a\t(%s)\n", ra.Track, len(ra.Models), ra.Note)
			continue
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\n", ra.Track, len(ra.Models), corr(ra.Spearman), corr(ra.KendallTauB))
	}
	w.flush(tw)
}

func (r *Report) writeOrderChanges(w *errWriter) {
	w.printf("\nOrder changes (pairs of models whose order reverses from A to B; gap = rate(X)-rate(Y))\n")
	if len(r.OrderChanges) == 0 {
		w.printf("  none\n")
		return
	}
	tw := w.table()
	fmt.Fprintf(tw, "TRACK\tX\tY\tGAP IN A\tGAP IN B\tBEYOND UNCERTAINTY\n")
	beyond := 0
	for _, o := range r.OrderChanges {
		flag := "no"
		if o.BeyondUncertainty {
			flag = "yes"
			beyond++
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s %s\t%s %s\t%s\n", o.Track, o.ModelX, o.ModelY,
			pp(o.GapA.Value), interval(o.GapA.Lo, o.GapA.Hi, pp),
			pp(o.GapB.Value), interval(o.GapB.Lo, o.GapB.Hi, pp), flag)
	}
	w.flush(tw)
	if beyond == 0 {
		w.printf("  none beyond uncertainty\n")
	}
}

func (r *Report) writeMetricDiffs(w *errWriter) {
	var top []MetricDiff
	for _, m := range r.MetricDiffs {
		if m.Diff.Value != nil {
			top = append(top, m)
		}
	}
	// Largest |B-A| first; ties in a fixed order so the table is stable.
	slices.SortStableFunc(top, func(x, y MetricDiff) int {
		return cmp.Or(
			cmp.Compare(math.Abs(*y.Diff.Value), math.Abs(*x.Diff.Value)),
			cmp.Compare(x.Model, y.Model),
			cmp.Compare(x.MetricID, y.MetricID),
		)
	})
	if len(top) > topMetricDiffs {
		top = top[:topMetricDiffs]
	}
	w.printf("\nLargest per-metric differences (top %d by |B-A|; intervals over the metric's base scenarios)\n", topMetricDiffs)
	if len(top) == 0 {
		w.printf("  none (no model has a rate on a metric in both runs)\n")
		return
	}
	tw := w.table()
	fmt.Fprintf(tw, "MODEL\tMETRIC\tTYPE\tSCENARIOS\tA\tB\tB-A\t%s INTERVAL\n", confPct(r.Conf))
	for _, m := range top {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%s\t%s\t%s%s\n", m.Model, m.MetricID, m.Type, m.Clusters,
			count(m.A), count(m.B), pp(m.Diff.Value), interval(m.Diff.Lo, m.Diff.Hi, pp), star(m.Diff.Significant))
	}
	w.flush(tw)
}

// writeSafetyStops says, per compared model whose provider stopped a
// reply for safety in either run, how many of its conversations hold one:
// its answers, in the rates above, which nothing else there shows.
func (r *Report) writeSafetyStops(w *errWriter) {
	if len(r.SafetyStops) == 0 {
		return
	}
	w.printf("\nProvider safety stops (target replies its provider stopped for safety: the model's answers, judged and counted in the rates above)\n")
	tw := w.table()
	fmt.Fprintf(tw, "MODEL\tA\tB\n")
	for _, s := range r.SafetyStops {
		fmt.Fprintf(tw, "%s\t%s\t%s\n", s.Model, s.A, s.B)
	}
	w.flush(tw)
}

// String is "C of N conversations (R replies)", or "0 of N conversations".
func (s SafetyStops) String() string {
	out := fmt.Sprintf("%d of %d conversations", s.Conversations, s.Rows)
	switch s.Replies {
	case 0:
	case 1:
		out += " (1 reply)"
	default:
		out += fmt.Sprintf(" (%d replies)", s.Replies)
	}
	return out
}

// writePeople lists the conversations people played (the Play page) per
// model and track, beside the rates (not in them).
func (r *Report) writePeople(w *errWriter) {
	if len(r.People) == 0 {
		return
	}
	w.printf("\nPlayed by people (the viewer's Play page; beside the rates above, not in them)\n")
	tw := w.table()
	fmt.Fprintf(tw, "MODEL\tTRACK\tA\tB\tA PLAYED (DRAFTS, NOT JUDGED)\tB PLAYED (DRAFTS, NOT JUDGED)\n")
	rate := func(x *Rate) string {
		if x == nil {
			return "n/a"
		}
		return rateCI(*x)
	}
	for _, p := range r.People {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d (%d, %d)\t%d (%d, %d)\n", p.Model, p.Track, rate(p.A), rate(p.B),
			p.ConversationsA, p.DraftsA, p.UnjudgedA, p.ConversationsB, p.DraftsB, p.UnjudgedB)
	}
	w.flush(tw)
}

// errWriter keeps the first write error so the table code stays linear.
type errWriter struct {
	w   io.Writer
	err error
}

func (e *errWriter) Write(p []byte) (int, error) {
	if e.err != nil {
		return len(p), nil
	}
	n, err := e.w.Write(p)
	e.err = err
	return n, err
}

func (e *errWriter) printf(format string, args ...any) { fmt.Fprintf(e, format, args...) }

// table starts an aligned section indented by two spaces.
func (e *errWriter) table() *tabwriter.Writer {
	return tabwriter.NewWriter(&indent{w: e}, 0, 0, 2, ' ', 0)
}

func (e *errWriter) flush(tw *tabwriter.Writer) {
	if err := tw.Flush(); err != nil && e.err == nil {
		e.err = err
	}
}

// indent prefixes every line with two spaces. tabwriter writes whole lines
// on Flush, so tracking the line start is enough.
type indent struct {
	w   io.Writer
	mid bool
}

func (in *indent) Write(p []byte) (int, error) {
	var b strings.Builder
	for _, c := range string(p) {
		if !in.mid {
			b.WriteString("  ")
			in.mid = true
		}
		b.WriteRune(c)
		if c == '\n' {
			in.mid = false
		}
	}
	if _, err := io.WriteString(in.w, b.String()); err != nil {
		return 0, err
	}
	return len(p), nil
}

func confPct(conf float64) string {
	return fmt.Sprintf("%g%%", math.Round(conf*1000)/10)
}

func list(xs []string) string {
	if len(xs) == 0 {
		return "(none)"
	}
	return strings.Join(xs, ", ")
}

func pct(p *float64) string {
	if p == nil {
		return "n/a"
	}
	return fmt.Sprintf("%.1f%%", 100**p)
}

func count(r Rate) string {
	return fmt.Sprintf("%s (%d/%d)", exactPct(r), r.Passed, r.Total)
}

// exactPct is the rate rounded once, from its counts: Rate is rounded to
// 4 places as in results.json, and printing that with one decimal of a
// percent rounds twice (4/21 = 19.05 % via 0.1905 printed 19.1 %).
func exactPct(r Rate) string {
	if r.Rate == nil || r.Total == 0 {
		return pct(r.Rate)
	}
	exact := float64(r.Passed) / float64(r.Total)
	if math.Abs(exact-*r.Rate) > 0.00005 {
		return pct(r.Rate) // not the pooled rate of its counts
	}
	return fmt.Sprintf("%.1f%%", 100*exact)
}

// rateCI is a rate with its interval, "!" when it rests on few scenarios.
func rateCI(r Rate) string {
	if r.Rate == nil {
		return "n/a"
	}
	s := exactPct(r) + " " + interval(r.Lo, r.Hi, pct1)
	if r.Warning != "" {
		s += " !"
	}
	return s
}

func pct1(p *float64) string { return fmt.Sprintf("%.1f", 100**p) }

func nScen(r Rate) string { return fmt.Sprintf("%d (%d)", r.Total, r.Clusters) }

// pp formats a difference of fractions in signed percentage points.
func pp(p *float64) string {
	if p == nil {
		return "n/a"
	}
	v := 100 * *p
	if math.Abs(v) < 0.05 {
		v = 0 // "+0.0", never "-0.0"
	}
	return fmt.Sprintf("%+.1f", v)
}

func interval(lo, hi *float64, f func(*float64) string) string {
	if lo == nil || hi == nil {
		return "[n/a]"
	}
	return "[" + f(lo) + ", " + f(hi) + "]"
}

func num3(p *float64) string {
	if p == nil {
		return "n/a"
	}
	return fmt.Sprintf("%.3f", *p)
}

func corr(c Correlation) string {
	return num3(c.Value) + " " + interval(c.Lo, c.Hi, num3)
}

func star(b bool) string {
	if b {
		return " *"
	}
	return ""
}
