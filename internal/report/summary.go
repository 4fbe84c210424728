package report

import (
	"sort"
	"time"

	"github.com/impactbench/impactbench/internal/results"
)

// summary is the "ib-data" JSON island: every view except the transcripts.
// Field names are short because they are read by app.js only.
type summary struct {
	Title       string       `json:"title"`
	Description string       `json:"description"`
	Generated   string       `json:"generated"`
	Metrics     []metricView `json:"metrics"`
	Models      []string     `json:"models"`
	Leaderboard leaderboard  `json:"leaderboard"`
	Heatmap     heatmap      `json:"heatmap"`
	Demographic demographics `json:"demographic"`
	// Pairwise and Reliability are results.json's model-vs-model
	// differences, judge panels and per-metric agreement (statsview.go).
	Pairwise    pairwiseView    `json:"pairwise"`
	Reliability reliabilityView `json:"reliability"`
	// Fidelity is the checks of the simulated user: the scorecard per user
	// model × target and the "share failed by turn k" curves (fidelity.go).
	Fidelity fidelityView `json:"fidelity"`
	// Human is results.json's human_comparison per model: people playing
	// the user against simulated users on the same scenarios (humanview.go).
	Human []humanView `json:"human"`
	// Variance is results.json's variance_components.
	Variance varianceView `json:"variance"`
	// Calibration is results.json's judge calibration and flip rates
	// (calibview.go).
	Calibration calibrationView `json:"calibration"`
	Cost        costView        `json:"cost"`
	Settings    [][2]string     `json:"settings"`
	Notes       []string        `json:"notes"`
	// SafetyStops are the models whose provider stopped some of their
	// replies for safety, in leaderboard order; the page template renders
	// them under the leaderboard (not in the island: a page without any
	// is byte for byte what it was).
	SafetyStops []safetyStop `json:"-"`
}

type metricView struct {
	ID          string `json:"id"`
	Name        string `json:"name"`
	Type        string `json:"type"`
	Definition  string `json:"definition"`
	Matters     string `json:"matters,omitempty"`
	Contributor string `json:"contributor,omitempty"`
}

type leaderboard struct {
	// Source is "results" (results.json), "scores" (provisional recount) or "" (nothing yet).
	Source string           `json:"source"`
	Rows   []leaderboardRow `json:"rows"`
}

type leaderboardRow struct {
	Model string   `json:"model"`
	Pos   rateView `json:"pos"`
	Neg   rateView `json:"neg"`
	N     int      `json:"n"`
	Null  int      `json:"null"`
	// Valid is the landmark-adherence share when checked.
	Valid *results.ValidityStats `json:"valid,omitempty"`
	// Unverified counts judge verdicts whose quotes were not found, per
	// metric and judge (results.json's "unverified"; absent before the check).
	Unverified *results.UnverifiedStats `json:"unv,omitempty"`
	// Provisional rows are recounted from scores.json (no results.json entry).
	Provisional bool `json:"prov,omitempty"`
	// Score orders the leaderboard (statsview.go).
	Score scoreView `json:"score"`
	// Corr is the score corrected for judge error (leaderboard.corrected;
	// calibview.go), nil without one.
	Corr *correctedScore `json:"corr,omitempty"`
}

type heatmap struct {
	Source string `json:"source"`
	// Cells[model][metric]; a missing entry means no data for that pair.
	Cells map[string]map[string]rateView `json:"cells"`
	// Provisional lists models whose cells are recounted from scores.json.
	Provisional []string `json:"prov,omitempty"`
}

func buildSummary(in *Input, now time.Time) summary {
	s := summary{
		Title:       in.Benchmark.Name,
		Description: in.Benchmark.Description,
		Generated:   now.UTC().Format(time.RFC3339),
		Notes:       append([]string{}, in.Notes...),
	}
	if !in.Settings.Generated.IsZero() {
		s.Generated = in.Settings.Generated.UTC().Format(time.RFC3339)
	}
	s.Metrics = metricList(in)
	metricType := map[string]string{}
	for _, m := range s.Metrics {
		metricType[m.ID] = m.Type
	}
	s.Models = modelList(in)
	t := newTally(in, metricType)
	s.Leaderboard = buildLeaderboard(in, s.Models, t)
	// Every view lists models in leaderboard order (by score).
	s.Models = byScore(s.Models, scoreOrder(s.Leaderboard.Rows))
	s.SafetyStops = buildSafetyStops(in, s.Models)
	s.Heatmap = buildHeatmap(in, t)
	s.Demographic = buildDemographics(in, s.Models, s.Metrics, t)
	s.Pairwise = buildPairwise(in, s.Models)
	s.Reliability = buildReliability(in, s.Models, s.Metrics)
	s.Fidelity = buildFidelity(in, s.Models)
	s.Human = buildHuman(in, s.Models)
	s.Variance = buildVariance(in, s.Models, s.Metrics)
	s.Calibration = buildCalibration(in, s.Models)
	s.Cost = buildCost(in)
	s.Settings = settingsRows(in)
	// app.js reads these as arrays; a nil slice would encode as null.
	s.Metrics = nonNil(s.Metrics)
	s.Models = nonNil(s.Models)
	s.Settings = nonNil(s.Settings)
	s.Leaderboard.Rows = nonNil(s.Leaderboard.Rows)
	s.Demographic.Axes = nonNil(s.Demographic.Axes)
	s.Demographic.Rows = nonNil(s.Demographic.Rows)
	s.Cost.Rows = nonNil(s.Cost.Rows)
	return s
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// metricList is benchmark.yaml's metrics plus any metric id that only
// appears in data (a metric removed from the yaml after the run still shows).
func metricList(in *Input) []metricView {
	var out []metricView
	seen := map[string]bool{}
	for _, m := range in.Benchmark.Metrics {
		if seen[m.ID] {
			continue
		}
		seen[m.ID] = true
		out = append(out, metricView{ID: m.ID, Name: m.Name, Type: m.Type, Definition: m.Definition,
			Matters: m.MattersBecause, Contributor: m.Contributor})
	}
	var extra []string
	addID := func(id string) {
		if id != "" && !seen[id] {
			seen[id] = true
			extra = append(extra, id)
		}
	}
	for _, r := range in.Results {
		for _, e := range r.ByMetric {
			addID(e.Key)
		}
	}
	for _, sc := range in.Scenarios {
		addID(scenarioMetric(sc))
	}
	for _, run := range in.Runs {
		for _, c := range run.Conversations {
			if c.MetricID != "" {
				addID(c.MetricID)
			} else {
				addID(metricFromID(c.ID))
			}
		}
	}
	sort.Strings(extra)
	for _, id := range extra {
		out = append(out, metricView{ID: id, Name: id})
	}
	return out
}

func scenarioMetric(sc Scenario) string {
	if sc.MetricID != "" {
		return sc.MetricID
	}
	return metricFromID(sc.ID)
}

// modelList is the run directories' order, then results-only models.
func modelList(in *Input) []string {
	var out []string
	seen := map[string]bool{}
	for _, r := range in.Runs {
		if !seen[r.Target] {
			seen[r.Target] = true
			out = append(out, r.Target)
		}
	}
	for _, r := range in.Results {
		if !seen[r.TargetModel] {
			seen[r.TargetModel] = true
			out = append(out, r.TargetModel)
		}
	}
	return out
}

func resultFor(in *Input, model string) *results.ModelResult {
	for i := range in.Results {
		if in.Results[i].TargetModel == model {
			return &in.Results[i]
		}
	}
	return nil
}

func buildLeaderboard(in *Input, models []string, t *tally) leaderboard {
	var lb leaderboard
	for _, m := range models {
		if r := resultFor(in, m); r != nil {
			lb.Source = "results"
			row := leaderboardRow{
				Model: m,
				Pos:   fromTypeRate(r.PositivePassRate, r.NPositive, r.PositiveCI),
				Neg:   fromTypeRate(r.NegativePassRate, r.NNegative, r.NegativeCI),
				N:     r.NTotal, Null: r.NNull, Valid: r.Validity, Unverified: r.Unverified,
			}
			row.Score = scoreFor(r, row.Pos, row.Neg)
			row.Corr = correctedScoreFor(r)
			lb.Rows = append(lb.Rows, row)
			continue
		}
		kinds := t.kind[m]
		if kinds == nil {
			continue
		}
		if lb.Source == "" {
			lb.Source = "scores"
		}
		row := leaderboardRow{Model: m, Provisional: true}
		if c := kinds["positive"]; c != nil {
			row.Pos = wilsonView(c.K, c.N)
			row.Null += c.Null
		}
		if c := kinds["negative"]; c != nil {
			row.Neg = wilsonView(c.K, c.N)
			row.Null += c.Null
		}
		row.N = row.Pos.N + row.Neg.N
		row.Score = scoreFor(nil, row.Pos, row.Neg)
		lb.Rows = append(lb.Rows, row)
	}
	return lb
}

func buildHeatmap(in *Input, t *tally) heatmap {
	h := heatmap{Cells: map[string]map[string]rateView{}}
	for _, r := range in.Results {
		if len(r.ByMetric) == 0 {
			continue
		}
		h.Source = "results"
		cells := map[string]rateView{}
		for _, e := range r.ByMetric {
			cells[e.Key] = fromRate(e.Value)
		}
		h.Cells[r.TargetModel] = cells
	}
	for model, byMetric := range t.metric {
		if _, ok := h.Cells[model]; ok {
			continue
		}
		if h.Source == "" {
			h.Source = "scores"
		}
		cells := map[string]rateView{}
		for mid, c := range byMetric {
			cells[mid] = wilsonView(c.K, c.N)
		}
		h.Cells[model] = cells
		h.Provisional = append(h.Provisional, model)
	}
	sort.Strings(h.Provisional)
	return h
}
