package cli

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/impactbench/impactbench/internal/plan"
	"github.com/impactbench/impactbench/internal/summary"
)

// printDryRun writes one benchmark's dry-run table and its bill.
func printDryRun(w io.Writer, s *summary.Summary) {
	printPlanTable(w, s.Plan)
	printBill(w, s.Plan, "benchmark", s.Turns)
	printWaves(w, s.Plan)
	fmt.Fprintln(w, "no model was called (dry run)")
}

// printStudyPlan writes a study's dry run: one table over every benchmark
// (rows of the same phase, target and model added up) and the study's bill.
func printStudyPlan(w io.Writer, benches []*summary.Summary) {
	var all, merged []plan.Row
	at := map[[3]string]int{}
	for _, s := range benches {
		all = append(all, s.Plan...)
		for _, p := range s.Plan {
			k := [3]string{p.Phase, p.Target, p.Model}
			i, ok := at[k]
			if !ok {
				at[k] = len(merged)
				merged = append(merged, p)
				continue
			}
			merged[i] = merged[i].Plus(p)
		}
	}
	printPlanTable(w, merged)
	turns := 0
	for _, s := range benches {
		turns = max(turns, s.Turns)
	}
	printBill(w, merged, fmt.Sprintf("study of %d benchmarks", len(benches)), turns)
	printWaves(w, all)
	fmt.Fprintln(w, "no model was called (dry run)")
}

func printPlanTable(w io.Writer, rows []plan.Row) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	sort.SliceStable(rows, func(i, j int) bool {
		a, b := rows[i], rows[j]
		if a.Target != b.Target && plan.Rank(a) >= 2 && plan.Rank(b) >= 2 {
			return a.Target < b.Target
		}
		return plan.Rank(a) < plan.Rank(b)
	})
	fmt.Fprintln(tw, "phase\ttarget\tmodel\trows\tcalls\tinput tok\toutput tok\test. cost\tcached input tok\trows now\tnote\t")
	for _, p := range rows {
		c := fmt.Sprintf("$%.4f", p.Cost)
		if !p.CostKnown {
			c = "unknown"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\t%d\t%d\t%s\t%d\t%d\t%s\t\n", p.Phase, p.Target, p.Model, p.Rows, p.Calls,
			p.InputTokens, p.OutputTokens, c, p.CachedInputTokens, p.RowsNow, p.Note)
	}
	tw.Flush()
}

// printBill writes the bill under a plan table: per phase and in all, in
// real time at list prices, with prompt caching, with the batch APIs, and
// as configured, with the expected wall time of each way.
func printBill(w io.Writer, rows []plan.Row, who string, turns int) {
	t := plan.TotalOf(rows)
	unk := ""
	if !t.Known {
		unk = " (lower bounds: some model prices are unknown; add them under pricing: in config.yaml)"
		if names := plan.UnpricedModels(rows); len(names) > 0 {
			// pricing: is keyed by model name, which the table's model
			// column does not show for a target (it shows the id).
			unk = fmt.Sprintf(" (lower bounds: no price is known for %s; add under pricing: in config.yaml what each costs in USD per 1M tokens, e.g. `pricing: {%s: {input: 0.5, output: 1.5}}`)",
				strings.Join(names, ", "), names[0])
		}
	}
	lead := ""
	if who != "benchmark" {
		lead = who + ": " // a study's one-line total names it
	}
	fmt.Fprintf(w, "%sestimated cost of a fresh run: $%.4f as configured%s; real time at list prices $%.4f, with prompt caching $%.4f, with the batch APIs $%.4f\n",
		lead, t.ConfigUSD, unk, t.ListUSD, t.CachedUSD, t.BatchUSD)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "phase\treal time, list prices\twith prompt caching\twith batch APIs\tas configured\t\n")
	var wall, batchWall float64
	waves := 0
	for _, b := range plan.BillByPhase(rows, turns) {
		fmt.Fprintf(tw, "%s\t$%.4f  ~%s\t$%.4f  ~%s\t$%.4f  %s\t$%.4f\t\n", b.Name, b.List, dur(b.Wall), b.Cached, dur(b.Wall), b.Batch, batchDur(b), b.Cfg)
		wall += b.Wall
		if b.Waves > 0 {
			waves += b.Waves
		} else {
			batchWall += b.Wall
		}
	}
	fmt.Fprintf(tw, "%s\t$%.4f  ~%s\t$%.4f  ~%s\t$%.4f  %s\t$%.4f\t\n", who, t.ListUSD, dur(wall), t.CachedUSD, dur(wall), t.BatchUSD,
		batchDur(plan.PhaseBill{Wall: batchWall, Waves: waves}), t.ConfigUSD)
	tw.Flush()
	fmt.Fprintf(w, "  %d calls, %d input and %d output tokens. Caching: each call of a conversation reads the previous one's prompt where it reaches the model's cache minimum (cache_min_tokens). "+
		"Batch APIs: every role whose provider has one, at half price, a batch per turn and role (here ~1 h each; 5 min to 24 h). "+
		"Real-time wall times assume run.concurrency's calls in flight per phase (32 under auto, where its pools start) and 1.5 s + 60 output tokens/s a call, phases one after another (run overlaps them).\n",
		t.Calls, t.InputTokens, t.OutputTokens)
	now, calls := 0.0, 0
	for _, p := range rows {
		now += p.CostNow
		if p.Rows > 0 {
			calls += p.Calls * p.RowsNow / p.Rows
		}
	}
	fmt.Fprintf(w, "what would run now: $%.4f as configured, ~%d calls (rows whose results are not stored under their current inputs; phases up to date cost nothing)\n", now, calls)
}

// batchDur is a phase's expected wall time through the batch APIs: its
// batches one after another (typically 1 h each, 5 min at best, 24 h at
// most), or its real-time wall time when none of it is batched.
func batchDur(b plan.PhaseBill) string {
	if b.Waves == 0 {
		return "~" + dur(b.Wall)
	}
	h := time.Duration(b.Waves) * plan.WaveTypical
	noun := "batches"
	if b.Waves == 1 {
		noun = "batch"
	}
	return fmt.Sprintf("~%s (%d %s: %s–%s)", dur((h + time.Duration(b.Wall*float64(time.Second))).Seconds()), b.Waves, noun,
		dur(float64(b.Waves)*plan.WaveFast.Seconds()), dur(float64(b.Waves)*plan.WaveMax.Seconds()))
}

// dur writes seconds as seconds, minutes, hours or days.
func dur(secs float64) string {
	switch {
	case secs < 90:
		return fmt.Sprintf("%.0f s", secs)
	case secs < 90*60:
		return fmt.Sprintf("%.0f min", secs/60)
	case secs < 48*3600:
		return fmt.Sprintf("%.1f h", secs/3600)
	}
	return fmt.Sprintf("%.1f days", secs/86400)
}

// printWaves says, per target simulated in batch waves, what the waves
// save and how long they may take.
func printWaves(w io.Writer, rows []plan.Row) {
	type waves struct {
		b      plan.Batch
		calls  int
		known  bool
		target string
	}
	var order []*waves
	byTarget := map[string]*waves{}
	for _, p := range rows {
		if p.Batch == nil {
			continue
		}
		t := byTarget[p.Target]
		if t == nil {
			t = &waves{b: *p.Batch, known: true, target: p.Target}
			t.b.SavingUSD = 0
			byTarget[p.Target] = t
			order = append(order, t)
		}
		t.calls += p.Calls
		t.b.SavingUSD += p.Batch.SavingUSD
		t.known = t.known && p.CostKnown
	}
	for _, t := range order {
		saving := fmt.Sprintf("$%.4f", t.b.SavingUSD)
		if !t.known {
			saving = "unknown (a price is unknown)"
		}
		fmt.Fprintf(w, "batch waves for %s: %d waves, %d calls (saving %s vs real time with caching); "+
			"elapsed ≈ %s if each batch takes 5 min, %s at a typical 1 h, up to %s at the providers' 24 h limit (an estimate: batch turnaround is not promised)\n",
			t.target, t.b.Waves, t.calls, saving, hours(t.b.ElapsedFastHours), hours(t.b.ElapsedTypicalHours), hours(t.b.ElapsedMaxHours))
	}
}

// hours writes a duration in hours as minutes, hours or days.
func hours(h float64) string {
	switch {
	case h < 1:
		return fmt.Sprintf("%.0f min", h*60)
	case h < 48:
		return fmt.Sprintf("%.0f h", h)
	}
	return fmt.Sprintf("%.0f days", h/24)
}

// printPrecision writes the plan as a short table.
func printPrecision(w io.Writer, p *plan.PrecisionPlan) {
	fmt.Fprintf(w, "Precision (%.0f%% intervals, pass rate near %.2f): %d scenario(s) per metric × %d demographic variant(s) × %d sample(s) = %d conversations per base scenario\n",
		p.Conf*100, p.Rate, p.ScenariosPerMetric, p.Variants, p.Samples, p.M)
	if p.Pilot != "" {
		fmt.Fprintf(w, "ICC from the pilot %s (largest over its models; assumed %.2f where it has none)\n", p.Pilot, p.AssumedICC)
	} else {
		fmt.Fprintf(w, "ICC assumed %.2f (--icc; or --pilot results.json for a previous run's)\n", p.AssumedICC)
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "scope\tmetrics\tbase scenarios\tICC\texpected ±half-width\tbase scenarios for ±%s\tper metric\n", pts(p.TargetHalfWidth))
	for _, s := range p.Scopes {
		hw := "n/a (< 2 scenarios)"
		switch {
		case s.HalfWidthOK && s.HalfWidth >= 0.5:
			hw = "≥ ±50 pt (uninformative)" // the interval spans most of 0–100%
		case s.HalfWidthOK:
			hw = "±" + pts(s.HalfWidth)
		}
		need, per := "> 1,000,000", "—"
		if s.Needed > 0 {
			need, per = fmt.Sprint(s.Needed), fmt.Sprint(s.PerMetric)
		}
		icc := fmt.Sprintf("%.2f", s.ICC)
		if s.ICCSource != "assumed" {
			icc += " (" + s.ICCSource + ")"
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%s\t%s\t%s\t%s\n", s.Scope, s.Metrics, s.G, icc, hw, need, per)
	}
	tw.Flush()
	for _, n := range p.Notes {
		fmt.Fprintf(w, "note: %s\n", n)
	}
	fmt.Fprintln(w, "More base scenarios narrow the interval far more than more samples per scenario when the ICC is high.")
}

// pts formats a fraction as percentage points ("10.0 pt").
func pts(x float64) string { return fmt.Sprintf("%.1f pt", x*100) }
