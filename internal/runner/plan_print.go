package runner

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
	"time"
)

// PrintPlan writes one benchmark's dry-run table and its bill.
func PrintPlan(w io.Writer, s *Summary) {
	printPlanTable(w, s.Plan)
	printBill(w, s.Plan, "benchmark", s.turns)
	printWaves(w, s.Plan)
	fmt.Fprintln(w, "no model was called (dry run)")
}

// PrintStudyPlan writes a study's dry run: one table over every benchmark
// (rows of the same phase, target and model added up) and the study's bill.
func PrintStudyPlan(w io.Writer, benches []*Summary) {
	var all, merged []PlanRow
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
			merged[i] = merged[i].plus(p)
		}
	}
	printPlanTable(w, merged)
	turns := 0
	for _, s := range benches {
		turns = max(turns, s.turns)
	}
	printBill(w, merged, fmt.Sprintf("study of %d benchmarks", len(benches)), turns)
	printWaves(w, all)
	fmt.Fprintln(w, "no model was called (dry run)")
}

// plus adds another benchmark's estimate of the same phase, target and
// model. Benchmarks run at once, so the wall time is the longer one.
func (p PlanRow) plus(o PlanRow) PlanRow {
	p.Rows, p.Calls, p.RowsNow = p.Rows+o.Rows, p.Calls+o.Calls, p.RowsNow+o.RowsNow
	p.InputTokens, p.OutputTokens = p.InputTokens+o.InputTokens, p.OutputTokens+o.OutputTokens
	p.CachedInputTokens, p.CacheWriteTokens = p.CachedInputTokens+o.CachedInputTokens, p.CacheWriteTokens+o.CacheWriteTokens
	p.Cost, p.CostList, p.CostCached, p.CostNow = p.Cost+o.Cost, p.CostList+o.CostList, p.CostCached+o.CostCached, p.CostNow+o.CostNow
	p.CostKnown = p.CostKnown && o.CostKnown
	p.WallSecs = max(p.WallSecs, o.WallSecs)
	if p.CostBatch != nil && o.CostBatch != nil {
		b := *p.CostBatch + *o.CostBatch
		p.CostBatch = &b
	} else {
		p.CostBatch = nil
	}
	if p.Note != o.Note {
		p.Note = "skip in some benchmarks"
	}
	if o.Batch != nil && p.Batch != nil {
		b := *p.Batch
		b.SavingUSD += o.Batch.SavingUSD
		p.Batch = &b
	}
	return p
}

// planRank orders plan rows by stage.
func planRank(p PlanRow) int {
	for _, st := range []Stage{StageGenMetrics, StageGenScenarios, StageSimulate, StageEvaluate} {
		if p.Phase == st.String() || strings.HasPrefix(p.Phase, st.String()+" ") {
			return int(st)
		}
	}
	return 9
}

func printPlanTable(w io.Writer, plan []PlanRow) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	sort.SliceStable(plan, func(i, j int) bool {
		a, b := plan[i], plan[j]
		if a.Target != b.Target && planRank(a) >= 2 && planRank(b) >= 2 {
			return a.Target < b.Target
		}
		return planRank(a) < planRank(b)
	})
	fmt.Fprintln(tw, "phase\ttarget\tmodel\trows\tcalls\tinput tok\toutput tok\test. cost\tcached input tok\trows now\tnote\t")
	for _, p := range plan {
		c := fmt.Sprintf("$%.4f", p.Cost)
		if !p.CostKnown {
			c = "unknown"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\t%d\t%d\t%s\t%d\t%d\t%s\t\n", p.Phase, p.Target, p.Model, p.Rows, p.Calls,
			p.InputTokens, p.OutputTokens, c, p.CachedInputTokens, p.RowsNow, p.Note)
	}
	tw.Flush()
}

// PlanTotal is a plan's bill: a fresh run as configured (with prompt
// caching), in real time at list prices without caching, in real time
// with caching, through the batch APIs where the providers have them, and
// what would run now (rows whose results are not stored).
type PlanTotal struct {
	Calls        int     `json:"calls"`
	InputTokens  int     `json:"input_tokens"`
	OutputTokens int     `json:"output_tokens"`
	ConfigUSD    float64 `json:"configured_usd"`
	ListUSD      float64 `json:"list_usd"`
	CachedUSD    float64 `json:"cached_usd"`
	BatchUSD     float64 `json:"batch_usd"`
	NowUSD       float64 `json:"now_usd"`
	// Known is false when some model's price is unknown: the sums are
	// then lower bounds.
	Known bool `json:"known"`
}

// TotalOf adds up a plan.
func TotalOf(plan []PlanRow) PlanTotal {
	t := PlanTotal{Known: true}
	for _, p := range plan {
		t.Calls, t.InputTokens, t.OutputTokens = t.Calls+p.Calls, t.InputTokens+p.InputTokens, t.OutputTokens+p.OutputTokens
		t.ConfigUSD += p.Cost
		t.ListUSD += p.CostList
		t.CachedUSD += p.CostCached
		if p.CostBatch != nil {
			t.BatchUSD += *p.CostBatch
		} else {
			t.BatchUSD += p.CostCached
		}
		t.NowUSD += p.CostNow
		t.Known = t.Known && p.CostKnown
	}
	return t
}

// phaseBill is one phase's line of the bill.
type phaseBill struct {
	name                     string
	list, cached, batch, cfg float64
	wall                     float64 // real time, seconds
	waves                    int     // batch turnarounds one after another with every batchable role batched
}

// billByPhase adds the plan's rows up per stage, in stage order.
func billByPhase(plan []PlanRow, turns int) []phaseBill {
	var out []phaseBill
	idx := map[int]int{}
	waves := map[int]map[string]int{} // stage → target → waves
	for _, p := range plan {
		rank := planRank(p)
		i, ok := idx[rank]
		if !ok {
			idx[rank], i = len(out), len(out)
			name, _, _ := strings.Cut(p.Phase, " (")
			out = append(out, phaseBill{name: name})
			waves[rank] = map[string]int{}
		}
		b := &out[i]
		b.list, b.cached, b.cfg = b.list+p.CostList, b.cached+p.CostCached, b.cfg+p.Cost
		b.wall = max(b.wall, p.WallSecs)
		if p.CostBatch == nil {
			b.batch += p.CostCached
			continue
		}
		b.batch += *p.CostBatch
		switch Stage(rank) {
		case StageSimulate:
			waves[rank][p.Target] += turns // this role batched: a wave per turn
		case StageEvaluate:
			waves[rank][p.Target] = 1
		}
	}
	for rank, i := range idx {
		for _, n := range waves[rank] {
			out[i].waves = max(out[i].waves, n)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return idx[i] < idx[j] })
	return out
}

// printBill writes the bill under a plan table: per phase and in all, in
// real time at list prices, with prompt caching, with the batch APIs, and
// as configured, with the expected wall time of each way.
func printBill(w io.Writer, plan []PlanRow, who string, turns int) {
	t := TotalOf(plan)
	unk := ""
	if !t.Known {
		unk = " (lower bounds: some model prices are unknown; add them under pricing: in config.yaml)"
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
	for _, b := range billByPhase(plan, turns) {
		fmt.Fprintf(tw, "%s\t$%.4f  ~%s\t$%.4f  ~%s\t$%.4f  %s\t$%.4f\t\n", b.name, b.list, dur(b.wall), b.cached, dur(b.wall), b.batch, batchDur(b), b.cfg)
		wall += b.wall
		if b.waves > 0 {
			waves += b.waves
		} else {
			batchWall += b.wall
		}
	}
	fmt.Fprintf(tw, "%s\t$%.4f  ~%s\t$%.4f  ~%s\t$%.4f  %s\t$%.4f\t\n", who, t.ListUSD, dur(wall), t.CachedUSD, dur(wall), t.BatchUSD,
		batchDur(phaseBill{wall: batchWall, waves: waves}), t.ConfigUSD)
	tw.Flush()
	fmt.Fprintf(w, "  %d calls, %d input and %d output tokens. Caching: each call of a conversation reads the previous one's prompt where it reaches the model's cache minimum (cache_min_tokens). "+
		"Batch APIs: every role whose provider has one, at half price, a batch per turn and role (here ~1 h each; 5 min to 24 h). "+
		"Real-time wall times assume run.concurrency's calls in flight per phase (32 under auto, where its pools start) and 1.5 s + 60 output tokens/s a call, phases one after another (run overlaps them).\n",
		t.Calls, t.InputTokens, t.OutputTokens)
	now, calls := 0.0, 0
	for _, p := range plan {
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
func batchDur(b phaseBill) string {
	if b.waves == 0 {
		return "~" + dur(b.wall)
	}
	h := time.Duration(b.waves) * waveTypical
	noun := "batches"
	if b.waves == 1 {
		noun = "batch"
	}
	return fmt.Sprintf("~%s (%d %s: %s–%s)", dur((h + time.Duration(b.wall*float64(time.Second))).Seconds()), b.waves, noun,
		dur(float64(b.waves)*waveFast.Seconds()), dur(float64(b.waves)*waveMax.Seconds()))
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
func printWaves(w io.Writer, plan []PlanRow) {
	type waves struct {
		b      PlanBatch
		calls  int
		known  bool
		target string
	}
	var order []*waves
	byTarget := map[string]*waves{}
	for _, p := range plan {
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
