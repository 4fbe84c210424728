package compare

import (
	"fmt"
	"io"
	"math"
	"strings"
	"text/tabwriter"

	"github.com/impactbench/impactbench/internal/artifacts"
	"github.com/impactbench/impactbench/internal/stats"
	"github.com/impactbench/impactbench/internal/study"
)

// StudyReport compares two study.json files (two publishes of a study,
// before and after a rerun): every model's score at every level both
// have, B − A with the MOVER interval built from the two cells' intervals.
type StudyReport struct {
	A       string   `json:"a"`
	B       string   `json:"b"`
	Conf    float64  `json:"conf"`
	Method  string   `json:"method"`
	Models  []string `json:"models"`
	OnlyInA []string `json:"only_in_a"`
	OnlyInB []string `json:"only_in_b"`
	// Rows: one per level (node), age group and model in both studies,
	// in A's order; Changed counts those whose interval excludes 0.
	Rows    []StudyRow `json:"rows"`
	Changed int        `json:"changed"`
	// SafetyStops: per model in both studies whose provider stopped a
	// target reply for safety in either, its stops summed over each
	// study's benchmarks (study.json's models[].refused): those replies
	// are its answers, judged and counted in the scores. Omitted when no
	// compared model has one.
	SafetyStops []StudySafetyStopRow `json:"safety_stops,omitempty"`
	Notes       []string             `json:"notes"`
}

// StudySafetyStopRow is one compared model's provider safety stops in
// study A and study B.
type StudySafetyStopRow struct {
	Model string            `json:"model"`
	A     study.SafetyStops `json:"a"`
	B     study.SafetyStops `json:"b"`
}

// StudyRow is one model's score at one level and age in both studies.
type StudyRow struct {
	Node        string  `json:"node"`
	Kind        string  `json:"kind"`
	Age         string  `json:"age"`
	Model       string  `json:"model"`
	ScoreA      float64 `json:"score_a"`
	ScoreB      float64 `json:"score_b"`
	Diff        float64 `json:"diff"`
	Lo          float64 `json:"lo"`
	Hi          float64 `json:"hi"`
	Significant bool    `json:"significant"`
	// MetricsA, MetricsB: the metrics each score averages (they differ when
	// the taxonomy or the data changed).
	MetricsA int `json:"metrics_a"`
	MetricsB int `json:"metrics_b"`
}

const studyCompareMethod = MethodMOVER + " on the two cells' " + stats.MethodStratifiedCluster + " intervals (independent studies; conservative when they share scenarios)"

// NoCommonModelsError is CompareStudies' refusal: the two studies share
// no model, so there is nothing to compare (an empty table would read as
// "nothing changed").
type NoCommonModelsError struct {
	A, B             string
	ModelsA, ModelsB []string
}

func (e *NoCommonModelsError) Error() string {
	return fmt.Sprintf("%s and %s have no model in common (%s: %s; %s: %s): nothing to compare; compare two publishes of the same study",
		e.A, e.B, e.A, listOrNone(e.ModelsA), e.B, listOrNone(e.ModelsB))
}

func listOrNone(xs []string) string {
	if len(xs) == 0 {
		return "no models"
	}
	return strings.Join(xs, ", ")
}

// CompareStudies compares study B with study A; a *NoCommonModelsError
// when they share no model.
func CompareStudies(a, b *study.Result, labelA, labelB string) (*StudyReport, error) {
	rep := &StudyReport{A: labelA, B: labelB, Conf: study.Conf, Method: studyCompareMethod,
		Models: []string{}, OnlyInA: []string{}, OnlyInB: []string{}, Rows: []StudyRow{}, Notes: []string{}}
	inA, inB := map[string]bool{}, map[string]bool{}
	for _, m := range a.Models {
		inA[m.ID] = true
	}
	for _, m := range b.Models {
		inB[m.ID] = true
		if !inA[m.ID] {
			rep.OnlyInB = append(rep.OnlyInB, m.ID)
		}
	}
	for _, m := range a.Models {
		if inB[m.ID] {
			rep.Models = append(rep.Models, m.ID)
		} else {
			rep.OnlyInA = append(rep.OnlyInA, m.ID)
		}
	}
	if len(rep.Models) == 0 {
		return nil, &NoCommonModelsError{A: labelA, B: labelB, ModelsA: rep.OnlyInA, ModelsB: rep.OnlyInB}
	}
	kind := map[string]string{}
	for _, n := range a.Nodes {
		kind[n.ID] = n.Kind
	}
	type key struct{ node, age, model string }
	cellsB := map[key]study.Cell{}
	for _, c := range b.Cells {
		cellsB[key{c.Node, c.Age, c.Model}] = c
	}
	for _, ca := range a.Cells {
		cb, ok := cellsB[key{ca.Node, ca.Age, ca.Model}]
		if !ok || ca.Score == nil || cb.Score == nil || !inB[ca.Model] {
			continue
		}
		est, lo, hi := moverDiff(asRate(cb), asRate(ca))
		row := StudyRow{Node: ca.Node, Kind: kind[ca.Node], Age: ca.Age, Model: ca.Model, ScoreA: *ca.Score, ScoreB: *cb.Score,
			Diff: est, Lo: lo, Hi: hi, Significant: lo > 0 || hi < 0,
			MetricsA: ca.Metrics, MetricsB: cb.Metrics}
		if row.Significant {
			rep.Changed++
		}
		rep.Rows = append(rep.Rows, row)
	}
	rep.SafetyStops = studySafetyStops(rep.Models, a, b)
	if a.Conf != b.Conf {
		rep.Notes = append(rep.Notes, fmt.Sprintf("the studies' intervals are at different levels (%v and %v)", a.Conf, b.Conf))
	}
	rep.Notes = append(rep.Notes, "each row is one comparison at 95 %; with thousands of rows, some intervals exclude 0 by chance (about 5 % of the unchanged ones)")
	return rep, nil
}

// studySafetyStops lists the compared models (in models' order) whose
// provider stopped a reply for safety in study a or b; nil when none.
func studySafetyStops(models []string, a, b *study.Result) []StudySafetyStopRow {
	stops := func(r *study.Result) map[string]study.SafetyStops {
		out := map[string]study.SafetyStops{}
		for _, m := range r.Models {
			out[m.ID] = m.SafetyStops()
		}
		return out
	}
	inA, inB := stops(a), stops(b)
	var out []StudySafetyStopRow
	for _, m := range models {
		if sa, sb := inA[m], inB[m]; sa.Replies > 0 || sb.Replies > 0 {
			out = append(out, StudySafetyStopRow{Model: m, A: sa, B: sb})
		}
	}
	return out
}

func asRate(c study.Cell) stats.RateInterval {
	lo, hi := math.NaN(), math.NaN()
	if c.Lo != nil && c.Hi != nil {
		lo, hi = *c.Lo, *c.Hi
	}
	return stats.RateInterval{Estimate: *c.Score, Lo: lo, Hi: hi, N: c.Conversations}
}

// WriteTable prints the overall and area rows, then how many rows changed
// beyond their intervals at each kind of level.
func (r *StudyReport) WriteTable(w io.Writer) error {
	fmt.Fprintf(w, "A: %s\nB: %s\n%s\n\n", r.A, r.B, r.Method)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "level\tage\tmodel\tA\tB\tB − A\t95% interval\t")
	for _, row := range r.Rows {
		if row.Kind != study.KindOverall && row.Kind != study.KindArea && row.Kind != study.KindLabel {
			continue
		}
		mark := ""
		if row.Significant {
			mark = "*"
		}
		// Rounded once, from the unrounded values; a limit that is not 0
		// never prints as 0 (an interval marked * visibly excludes 0).
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t[%s, %s]\t%s\n", row.Node, row.Age, row.Model,
			artifacts.Fixed(row.ScoreA, 3, false), artifacts.Fixed(row.ScoreB, 3, false), artifacts.Fixed(row.Diff, 3, true),
			artifacts.Limit(row.Lo, 3, true), artifacts.Limit(row.Hi, 3, true), mark)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	byKind := map[string][2]int{}
	var kinds []string
	for _, row := range r.Rows {
		c, seen := byKind[row.Kind]
		if !seen {
			kinds = append(kinds, row.Kind)
		}
		c[1]++
		if row.Significant {
			c[0]++
		}
		byKind[row.Kind] = c
	}
	counts := make([]string, len(kinds))
	for i, k := range kinds {
		counts[i] = fmt.Sprintf("%s %d/%d", k, byKind[k][0], byKind[k][1])
	}
	fmt.Fprintf(w, "\n* the interval excludes 0. Changed beyond the interval, by level: %s.\n", strings.Join(counts, "; "))
	if len(r.SafetyStops) > 0 {
		fmt.Fprintf(w, "\nProvider safety stops (target replies its provider stopped for safety, over the study's benchmarks: the model's answers, judged and counted in the scores above)\n")
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "  MODEL\tA\tB")
		for _, s := range r.SafetyStops {
			fmt.Fprintf(tw, "  %s\t%s\t%s\n", s.Model, studyStops(s.A), studyStops(s.B))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
		fmt.Fprintln(w)
	}
	if len(r.OnlyInA)+len(r.OnlyInB) > 0 {
		fmt.Fprintf(w, "only in A: %v; only in B: %v\n", r.OnlyInA, r.OnlyInB)
	}
	for _, n := range r.Notes {
		fmt.Fprintln(w, "note:", n)
	}
	return nil
}

// studyStops is "R replies in C conversations across K benchmarks", or
// "none".
func studyStops(s study.SafetyStops) string {
	if s.Replies == 0 {
		return "none"
	}
	return fmt.Sprintf("%d %s in %d %s across %d %s", s.Replies, plural(s.Replies, "reply", "replies"),
		s.Conversations, plural(s.Conversations, "conversation", "conversations"), s.Benchmarks, plural(s.Benchmarks, "benchmark", "benchmarks"))
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
