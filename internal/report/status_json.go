package report

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sort"

	"github.com/impactbench/impactbench/internal/results"
)

// StatusJSON is `status --json`: the same facts as Status, one object.
// Field names are stable (docs/json.md).
type StatusJSON struct {
	Benchmark string `json:"benchmark"`
	Directory string `json:"directory"`
	Scenarios struct {
		Generated bool   `json:"generated"`
		Error     string `json:"error,omitempty"`
		N         int    `json:"n"`
		Metrics   int    `json:"metrics"`
		Samples   int    `json:"samples"`
	} `json:"scenarios"`
	Cost struct {
		USD float64 `json:"usd"`
		// UnknownPhases counts phases without a known price (then USD is
		// a lower bound).
		UnknownPhases int `json:"unknown_phases"`
	} `json:"cost"`
	Live    Live               `json:"live"`
	Targets []TargetStatusJSON `json:"targets"`
	// Leaderboard is results.json's entries in score order (empty before
	// aggregate); ResultsError says why results.json could not be read.
	Leaderboard  []LeaderboardJSON `json:"leaderboard"`
	ResultsError string            `json:"results_error,omitempty"`
	// SimulatedUsers is the checks of the simulated user per user model ×
	// target (empty when no conversation was checked).
	SimulatedUsers []ScorecardRow `json:"simulated_users"`
}

// TargetStatusJSON is one target's row of the status table.
type TargetStatusJSON struct {
	Target        string         `json:"target"`
	Started       bool           `json:"started"`
	Conversations *CountJSON     `json:"conversations"` // null: no conversations.json yet
	Scores        *ScoreJSON     `json:"scores"`        // null: no scores.json yet
	CostUSD       *float64       `json:"cost_usd"`      // null: no cost.json or no price
	HasResults    bool           `json:"has_results"`
	Failures      map[string]int `json:"failures"`
	// Human counts the conversations people played against the target
	// (runs/<target>/human/); omitted when there are none.
	Human *HumanCountJSON `json:"human,omitempty"`
	// Refused counts the target's replies its provider stopped for
	// safety; omitted when none was.
	Refused *RefusedCountJSON `json:"refused,omitempty"`
}

// RefusedCountJSON counts a target's replies its provider stopped for
// safety (its conversations' refused) and the conversations holding one.
type RefusedCountJSON struct {
	Replies       int `json:"replies"`
	Conversations int `json:"conversations"`
}

// CountJSON counts a target's conversations (Expected 0: scenarios unknown).
type CountJSON struct {
	N        int `json:"n"`
	Expected int `json:"expected"`
	OK       int `json:"ok"`
	Failed   int `json:"failed"`
}

// ScoreJSON counts a target's verdicts.
type ScoreJSON struct {
	N        int `json:"n"`
	Null     int `json:"null"`
	Unscored int `json:"unscored"`
}

// LeaderboardJSON is one model's pass rates with their intervals.
type LeaderboardJSON struct {
	Model            string               `json:"model"`
	PositivePassRate *float64             `json:"positive_pass_rate"`
	PositiveCI       *results.ClusterCI   `json:"positive_ci"`
	NegativePassRate *float64             `json:"negative_pass_rate"`
	NegativeCI       *results.ClusterCI   `json:"negative_ci"`
	NTotal           int                  `json:"n_total"`
	Leaderboard      *results.Leaderboard `json:"leaderboard"`
	// Corrected is the pass rates corrected for judge error (with human
	// labels; omitted without): per track and per metric, each with a
	// number or the warning saying why not.
	Corrected *CorrectedJSON `json:"corrected,omitempty"`
}

// CorrectedJSON is a model's pass rates corrected for judge error, as
// results.json has them.
type CorrectedJSON struct {
	Positive *results.Corrected            `json:"positive"`
	Negative *results.Corrected            `json:"negative"`
	ByMetric map[string]*results.Corrected `json:"by_metric"`
}

// WriteStatusJSON writes `status --json` for the benchmark in benchDir.
func WriteStatusJSON(w io.Writer, benchDir string, targets []string, opts StatusOptions) error {
	if _, err := os.Stat(benchDir); err != nil {
		return err
	}
	bs, err := loadStatus(benchDir, targets, opts)
	if err != nil {
		return fmt.Errorf("status: %w", err)
	}
	out := statusJSON(bs)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}

func statusJSON(bs *benchStatus) StatusJSON {
	var s StatusJSON
	s.Benchmark, s.Directory, s.Live = bs.name, bs.benchDir, bs.live
	s.Scenarios.Generated, s.Scenarios.N, s.Scenarios.Metrics, s.Scenarios.Samples = bs.hasScens, len(bs.scens), bs.metrics, bs.samples
	if bs.scenErr != nil {
		s.Scenarios.Error = bs.scenErr.Error()
	}
	s.Cost.USD, s.Cost.UnknownPhases = totalCost(bs)
	for _, r := range bs.rows {
		s.Targets = append(s.Targets, targetJSON(r, bs))
	}
	if bs.resErr != nil {
		s.ResultsError = bs.resErr.Error()
	}
	s.Leaderboard = leaderboardJSON(bs.res)
	s.SimulatedUsers = nonNil(bs.card.list())
	return s
}

func targetJSON(r *targetStatus, bs *benchStatus) TargetStatusJSON {
	_, live := bs.live.Targets[r.target]
	t := TargetStatusJSON{Target: r.target, Started: r.hasDir || live, HasResults: r.hasResult, Failures: r.failures, Human: r.human}
	if r.hasConvs {
		t.Conversations = &CountJSON{N: r.convs, OK: r.ok, Failed: r.failed}
		if bs.hasScens {
			t.Conversations.Expected = len(bs.scens) * bs.samples
		}
	}
	if r.refused.Replies > 0 {
		n := r.refused
		t.Refused = &n
	}
	if r.hasScores {
		t.Scores = &ScoreJSON{N: r.scores, Null: r.null, Unscored: r.unscored}
	}
	if r.costEntries > 0 && r.costUnknown == 0 {
		c := r.cost
		t.CostUSD = &c
	}
	return t
}

// totalCost sums the benchmark's and every target's known costs.
func totalCost(bs *benchStatus) (usd float64, unknown int) {
	for _, e := range bs.rootCost {
		if costKnown(e.Cost) {
			usd += e.Cost.Cost
		} else {
			unknown++
		}
	}
	for _, r := range bs.rows {
		usd += r.cost
		unknown += r.costUnknown
	}
	return usd, unknown
}

// leaderboardJSON orders models by leaderboard.score (best first), then name.
func leaderboardJSON(res []results.ModelResult) []LeaderboardJSON {
	out := make([]LeaderboardJSON, 0, len(res))
	for _, m := range res {
		l := LeaderboardJSON{
			Model: m.TargetModel, PositivePassRate: m.PositivePassRate, PositiveCI: m.PositiveCI,
			NegativePassRate: m.NegativePassRate, NegativeCI: m.NegativeCI, NTotal: m.NTotal, Leaderboard: m.Leaderboard,
		}
		if m.JudgeCalibration != nil {
			l.Corrected = &CorrectedJSON{Positive: m.PositiveCorrected, Negative: m.NegativeCorrected, ByMetric: map[string]*results.Corrected{}}
			for _, e := range m.ByMetric {
				if e.Value.Corrected != nil {
					l.Corrected.ByMetric[e.Key] = e.Value.Corrected
				}
			}
		}
		out = append(out, l)
	}
	score := func(l LeaderboardJSON) float64 {
		if l.Leaderboard == nil || l.Leaderboard.Score == nil {
			return -1
		}
		return *l.Leaderboard.Score
	}
	sort.SliceStable(out, func(i, j int) bool {
		if a, b := score(out[i]), score(out[j]); a != b {
			return a > b
		}
		return out[i].Model < out[j].Model
	})
	return out
}
