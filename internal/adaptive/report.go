package adaptive

import (
	"fmt"
	"io"
	"strings"
)

// Goal is issue #37's target for a replay, per replay: at most half the
// full study's conversations, no conclusion against it (A: a difference
// in the other direction, or a grade word it does not give — a grade it
// withholds counts, as a word it does not give) and at least 90 % of its
// different-calls and grade words stated (B).
type Goal struct {
	Half, A, B, All bool
}

// GoalOf is run's standing against the goal.
func GoalOf(r ReplayRun) Goal {
	g := Goal{Half: r.Share() <= 0.5, A: r.Against() == 0 && r.GradeBeyond == 0, B: r.Kept() >= 0.9}
	g.All = g.Half && g.A && g.B
	return g
}

// Report is a replay's distribution as impactbench-bench --preset
// adaptive-replay prints it (and its --json output).
type Report struct {
	Method  string  `json:"method"`
	Design  Options `json:"design"`
	Seed    uint64  `json:"seed"`
	Summary Summary `json:"summary"`
	// Meet counts the replays meeting each part of the goal; GoalMet is
	// the issue's: mean share ≤ 50 % and (a) and (b) each in ≥ 95 % of
	// the replays.
	MeetHalf int         `json:"meet_half"`
	MeetA    int         `json:"meet_a"`
	MeetB    int         `json:"meet_b"`
	MeetAll  int         `json:"meet_all"`
	GoalMet  bool        `json:"goal_met"`
	Runs     []ReplayRun `json:"runs"`
}

// NewReport summarises runs made under design o with seed.
func NewReport(runs []ReplayRun, o Options, seed uint64) Report {
	o, _ = o.withDefaults()
	r := Report{Method: Method, Design: o, Seed: seed, Summary: Summarize(runs), Runs: runs}
	for _, run := range runs {
		g := GoalOf(run)
		r.MeetHalf += b2i(g.Half)
		r.MeetA += b2i(g.A)
		r.MeetB += b2i(g.B)
		r.MeetAll += b2i(g.All)
	}
	n := float64(max(len(runs), 1))
	r.GoalMet = len(runs) > 0 && r.Summary.Share.Mean <= 0.5 && float64(r.MeetA)/n >= 0.95 && float64(r.MeetB)/n >= 0.95
	return r
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// WriteText prints the report: the design, the distribution of the
// conversations used and of what was stated, the goal, what cost the
// most, and one line per replay.
func (r Report) WriteText(w io.Writer) error {
	s := r.Summary
	pct := func(x float64) string { return fmt.Sprintf("%.1f %%", 100*x) }
	var b strings.Builder
	fmt.Fprintf(&b, "adaptive study replay: %d replays, seed %d\n", s.Replays, r.Seed)
	fmt.Fprintf(&b, "design: α %.3g, start %d, max %d base scenarios per metric, ρ %.3g, hope %.3g, budget %s of the worst case\n",
		r.Design.Alpha, r.Design.Start, r.Design.Max, r.Design.Rho, r.Design.Hope, pct(r.Design.Budget))
	fmt.Fprintf(&b, "method: %s\n\n", r.Method)
	q := func(label string, x Quantiles) {
		fmt.Fprintf(&b, "%-44s median %s, 5th–95th percentile %s–%s (mean %s, min %s, max %s)\n",
			label, pct(x.P50), pct(x.P5), pct(x.P95), pct(x.Mean), pct(x.Min), pct(x.Max))
	}
	q("conversations used, of the full study's:", s.Share)
	q("its different-calls and grades stated:", s.Kept)
	q("  its different-calls stated:", s.DifferentKept)
	q("  its grade words stated:", s.GradesKept)
	n := max(s.Replays, 1)
	fmt.Fprintf(&b, "\ngoal (issue #37): ≤ 50 %% of the conversations, and in ≥ 95 %% of the replays (a) and (b)\n")
	fmt.Fprintf(&b, "  replays using ≤ 50 %% of the conversations:           %d of %d\n", r.MeetHalf, n)
	fmt.Fprintf(&b, "  (a) nothing against the full study (strict):          %d of %d (%s; %s counting only against, not beyond)\n", r.MeetA, n, pct(float64(r.MeetA)/float64(n)), pct(s.NoAgainst))
	fmt.Fprintf(&b, "  (b) ≥ 90 %% of its different-calls and grades stated:  %d of %d (%s)\n", r.MeetB, n, pct(float64(r.MeetB)/float64(n)))
	fmt.Fprintf(&b, "  all three in one replay:                               %d of %d\n", r.MeetAll, n)
	fmt.Fprintf(&b, "  goal met: %s\n", map[bool]string{true: "yes", false: "no"}[r.GoalMet])
	fmt.Fprintf(&b, "\nconversations per conclusion stated: %.1f (the full study: %.1f)\n", s.PerConclusion, s.FullPerConclusion)
	fmt.Fprintf(&b, "what cost the most (share of the rows added after the first round, by the open conclusion that asked): %s\n\n", orNone(s.CostLine()))
	b.WriteString("replay  conversations  looks  different stated/kept/full  grades stated/kept/full  stated  against(diff grade rank)  beyond  goal\n")
	for _, run := range r.Runs {
		g := GoalOf(run)
		fmt.Fprintf(&b, "%6d  %12s  %5d  %9d/%d/%d  %15d/%d/%d  %7s  %12d %d %d  %6d  %s\n", run.Index, pct(run.Share()), run.Looks,
			run.Different, run.DifferentKept, run.DifferentFull, run.Grades, run.GradesKept, run.GradesFull, pct(run.Kept()),
			run.DiffAgainst, run.GradeAgainst, run.RankAgainst, run.GradeBeyond, goalWord(g))
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func orNone(s string) string {
	if s == "" {
		return "nothing was added"
	}
	return s
}

// goalWord names the parts of the goal a replay misses.
func goalWord(g Goal) string {
	if g.All {
		return "met"
	}
	var miss []string
	if !g.Half {
		miss = append(miss, ">50 %")
	}
	if !g.A {
		miss = append(miss, "(a)")
	}
	if !g.B {
		miss = append(miss, "(b)")
	}
	return "misses " + strings.Join(miss, " ")
}
