package study

import (
	"cmp"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
)

// NarrowHalfWidth is the half-width below which a per-metric interval
// counts as narrow in Summary (±0.25: it can tell a mostly-passing metric
// from a mostly-failing one).
const NarrowHalfWidth = 0.25

// Summary is what `impactbench study` and `status --study` print: the
// study's size, the leaderboards, and how much the per-metric numbers can
// carry.
type Summary struct {
	File    string `json:"file"`
	Models  int    `json:"models"`
	Metrics int    `json:"metrics"`
	Nodes   int    `json:"nodes"`
	Cells   int    `json:"cells"`
	// ThinCells counts cells resting on few base scenarios (methods.thin).
	ThinCells int `json:"thin_cells"`
	Pairs     int `json:"pairs"`
	// MetricCells counts per-metric cells; MetricCellsNarrow those whose
	// interval is narrower than ±NarrowHalfWidth.
	MetricCells       int `json:"metric_cells"`
	MetricCellsNarrow int `json:"metric_cells_narrow"`
	// LabelledModels counts the models with judge calibration (human
	// labels in a benchmark's results.json); CorrectedModels those whose
	// overall score is corrected for judge error at every age group.
	LabelledModels  int `json:"labelled_models"`
	CorrectedModels int `json:"corrected_models"`
	// SafetyStops lists the models whose provider stopped target replies
	// for safety (study.json's models[].refused), in models order: those
	// replies are their answers, judged and counted in the scores.
	SafetyStops []ModelSafetyStops `json:"safety_stops"`
	// Leaderboard is the overall node's ranked cells and Label the
	// nutrition label's, each by age group, then rank.
	Leaderboard []LeaderRow `json:"leaderboard"`
	Label       []LeaderRow `json:"label"`
	Warnings    []string    `json:"warnings"`
	// Stale lists the inputs that changed after the file was written
	// (status --study; empty: it is up to date).
	Stale []string `json:"stale"`
}

// ModelSafetyStops is one model's provider safety stops over the study.
type ModelSafetyStops struct {
	Model string `json:"model"`
	SafetyStops
}

// LeaderRow is one ranked model at one age.
type LeaderRow struct {
	Age       string   `json:"age"`
	Model     string   `json:"model"`
	Score     float64  `json:"score"`
	Lo        float64  `json:"lo"`
	Hi        float64  `json:"hi"`
	Rank      int      `json:"rank"`
	RankLo    int      `json:"rank_lo"`
	RankHi    int      `json:"rank_hi"`
	TiedWith  []string `json:"tied_with"`
	Metrics   int      `json:"metrics"`
	Scenarios int      `json:"scenarios"`
	Thin      bool     `json:"thin"`
}

// Summarize condenses r; file is where r is.
func Summarize(r *Result, file string) Summary {
	s := Summary{File: file, Models: len(r.Models), Nodes: len(r.Nodes), Cells: len(r.Cells), Pairs: len(r.Pairs),
		SafetyStops: []ModelSafetyStops{}, Leaderboard: []LeaderRow{}, Label: []LeaderRow{}, Warnings: r.Warnings, Stale: []string{}}
	if s.Warnings == nil {
		s.Warnings = []string{}
	}
	for _, m := range r.Models {
		if st := m.SafetyStops(); st.Replies > 0 {
			s.SafetyStops = append(s.SafetyStops, ModelSafetyStops{Model: m.ID, SafetyStops: st})
		}
	}
	kind := map[string]string{}
	for _, n := range r.Nodes {
		kind[n.ID] = n.Kind
		if n.Kind == KindMetric {
			s.Metrics++
		}
	}
	labelled, uncorrected := map[string]bool{}, map[string]bool{}
	for _, c := range r.Cells {
		if c.Thin {
			s.ThinCells++
		}
		if kind[c.Node] == KindOverall && c.Corrected != nil {
			labelled[c.Model] = true
			if c.Corrected.Score == nil {
				uncorrected[c.Model] = true
			}
		}
		switch kind[c.Node] {
		case KindMetric:
			s.MetricCells++
			if c.Lo != nil && c.Hi != nil && (*c.Hi-*c.Lo)/2 < NarrowHalfWidth {
				s.MetricCellsNarrow++
			}
		case KindOverall, KindLabel:
			if c.Rank == nil {
				continue
			}
			row := LeaderRow{Age: c.Age, Model: c.Model, Score: *c.Score, Lo: *c.Lo, Hi: *c.Hi, Rank: *c.Rank, RankLo: *c.RankLo, RankHi: *c.RankHi,
				TiedWith: c.TiedWith, Metrics: c.Metrics, Scenarios: c.Scenarios, Thin: c.Thin}
			if row.TiedWith == nil {
				row.TiedWith = []string{}
			}
			if kind[c.Node] == KindOverall {
				s.Leaderboard = append(s.Leaderboard, row)
			} else {
				s.Label = append(s.Label, row)
			}
		}
	}
	s.LabelledModels, s.CorrectedModels = len(labelled), len(labelled)-len(uncorrected)
	order := func(a, b LeaderRow) int {
		return cmp.Or(cmp.Compare(slices.Index(Ages, a.Age), slices.Index(Ages, b.Age)), cmp.Compare(a.Rank, b.Rank), strings.Compare(a.Model, b.Model))
	}
	slices.SortStableFunc(s.Leaderboard, order)
	slices.SortStableFunc(s.Label, order)
	return s
}

// WriteText prints the summary for a terminal: the results only (the
// command prints Warnings as messages, on stderr).
func (s Summary) WriteText(w io.Writer) error {
	fmt.Fprintf(w, "%s: %d models, %d metrics; %d levels, %d cells (%d thin), %d model pairs\n",
		s.File, s.Models, s.Metrics, s.Nodes, s.Cells, s.ThinCells, s.Pairs)
	anyThin := false
	for _, board := range []struct {
		title string
		rows  []LeaderRow
	}{{"Overall", s.Leaderboard}, {"Nutrition label (mean of the categories)", s.Label}} {
		for _, age := range Ages {
			var rows []LeaderRow
			for _, r := range board.rows {
				if r.Age == age {
					rows = append(rows, r)
				}
			}
			if len(rows) == 0 {
				continue
			}
			fmt.Fprintf(w, "\n%s, %s (%d metrics, %d base scenarios per model; 95%% intervals):\n", board.title, age, rows[0].Metrics, rows[0].Scenarios)
			tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
			fmt.Fprintln(tw, "  rank\tmodel\tscore\tinterval\trank interval\ttied with")
			for _, r := range rows {
				thin := ""
				if r.Thin {
					thin = " !"
					anyThin = true
				}
				fmt.Fprintf(tw, "  %d\t%s\t%.3f%s\t[%.3f, %.3f]\t%d–%d\t%s\n", r.Rank, r.Model, r.Score, thin, r.Lo, r.Hi, r.RankLo, r.RankHi, strings.Join(r.TiedWith, ", "))
			}
			if err := tw.Flush(); err != nil {
				return err
			}
		}
	}
	if anyThin {
		// The mark is explained where it appears.
		fmt.Fprintf(w, "\n! %s: the interval is wide and rests on few independent scenarios.\n", methodThin)
	}
	if s.MetricCells > 0 {
		fmt.Fprintf(w, "\nPer-metric scores: %d of %d have a 95%% interval narrower than ±%.2f.\n", s.MetricCellsNarrow, s.MetricCells, NarrowHalfWidth)
	}
	if s.LabelledModels > 0 {
		// The scores above are the judges' verdicts; say what the labels
		// gave, and where the rest would come from.
		fmt.Fprintf(w, "Judge error: %d of the %d models with human labels have an overall score corrected for it (study.json cells' corrected); the scores above are the judges' verdicts, uncorrected.", s.CorrectedModels, s.LabelledModels)
		if s.CorrectedModels < s.LabelledModels {
			fmt.Fprint(w, " `impactbench calibrate all --plan` says which labels the others need.")
		}
		fmt.Fprintln(w)
	}
	// Nothing in the scores above shows which rest on replies a provider
	// stopped for safety: say so per model, as status does per target.
	for _, m := range s.SafetyStops {
		replies := "replies"
		if m.Replies == 1 {
			replies = "reply"
		}
		fmt.Fprintf(w, "provider safety stops: %s: %d target %s in %d conversation(s) across %d benchmark(s), the target's answers (judged and counted)\n",
			m.Model, m.Replies, replies, m.Conversations, m.Benchmarks)
	}
	return nil
}
