package results

import (
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"testing"
	"time"

	"gonum.org/v1/gonum/stat/distuv"

	"github.com/impactbench/impactbench/internal/artifacts"
	"github.com/impactbench/impactbench/internal/config"
	"github.com/impactbench/impactbench/internal/labels"
)

// The calibration grid (issue 35): does each target's corrected rate keep
// its 95 % interval's promise however people label and however the judge
// errs? Every cell simulates studies with known truth — T targets, one
// positive metric, 20 base scenarios × 2 variants × 2 samples per target,
// every target's true rate the cell's prevalence (base scenarios varying
// around it, ICC 0.3) — judged by a judge of sensitivity 0.95 and
// specificity 0.90, or with sensitivity 0.4 on target 0 ("one differs");
// labels are drawn at random within each judge verdict of the pooled rows
// (the queue's old way) or per target, n/T each, half per verdict (a team
// splitting the work by model); n labels per metric. Each study goes
// through calibrateFile, as `calibrate` and `aggregate` run it, and every
// target's corrected pass rate that is given is checked against the
// target's true rate.
//
// The suite runs a reduced grid (gridStudiesCI studies per cell, T = 4).
// The full grid, whose table is in docs/statistics.md:
//
//	IMPACTBENCH_CALIB_GRID=full go test ./internal/results -run TestCalibrationGrid -v -timeout 60m

// gridCell is one cell of the grid.
type gridCell struct {
	perTarget bool // labels drawn per target (else pooled within verdicts)
	differs   bool // the judge's sensitivity is 0.4 on target 0
	labels    int  // labels per metric
	prev      float64
	targets   int
}

func (c gridCell) String() string {
	draw, judge := "pooled", "equal"
	if c.perTarget {
		draw = "per target"
	}
	if c.differs {
		judge = "one differs"
	}
	return fmt.Sprintf("T=%d %-10s %-11s n=%3d prev=%.2f", c.targets, draw, judge, c.labels, c.prev)
}

// gridTally counts one cell's target-rates.
type gridTally struct {
	rates, given, covered int
	devGiven, devCovered  int // target 0 (the one whose judge differs)
	width                 float64
}

func (g gridTally) coverage() float64 { return float64(g.covered) / float64(g.given) }

const (
	gridBases     = 20
	gridStudiesCI = 10
	gridJudgeSe   = 0.95
	gridJudgeSp   = 0.90
	gridDeviantSe = 0.4
)

// gridStudy draws one study of the cell: score rows and each row's truth.
func gridStudy(rng *rand.Rand, c gridCell) simStudy {
	s := simStudy{human: map[string]bool{}, truth: map[string]map[string]float64{},
		metrics: []config.Metric{{ID: "m01", Type: config.Positive}}}
	const icc = 0.3
	a, b := c.prev*(1-icc)/icc, (1-c.prev)*(1-icc)/icc
	for ti := range c.targets {
		t := fmt.Sprintf("t%d", ti)
		se := gridJudgeSe
		if c.differs && ti == 0 {
			se = gridDeviantSe
		}
		s.truth[t] = map[string]float64{"m01": c.prev}
		for g := range gridBases {
			rate := distuv.Beta{Alpha: a, Beta: b, Src: rng}.Rand()
			for v := range 2 {
				id := fmt.Sprintf("m01_s%03d_v%02d", g+1, v+1)
				for smp := range 2 {
					h := rng.Float64() < rate
					present := rng.Float64() < se
					if !h {
						present = rng.Float64() < 1-gridJudgeSp
					}
					conv := artifacts.ConvID(id, t, smp)
					s.human[conv] = h
					s.scores = append(s.scores, artifacts.Score{ID: id, MetricID: "m01", TargetModel: t, Sample: smp,
						Present: ptr(present), Passed: ptr(present), ConvID: conv})
				}
			}
		}
	}
	return s
}

// gridLabels draws the cell's labels: n/2 per judge verdict over every
// target's rows, or n/T per target, half per verdict.
func gridLabels(rng *rand.Rand, s simStudy, c gridCell) []labels.Label {
	pools := map[string]*[2][]int{}
	for i, sc := range s.scores {
		k := "all"
		if c.perTarget {
			k = sc.TargetModel
		}
		if pools[k] == nil {
			pools[k] = &[2][]int{}
		}
		v := b2i(*sc.Present)
		pools[k][v] = append(pools[k][v], i)
	}
	keys, per := []string{"all"}, c.labels/2
	if c.perTarget {
		keys, per = nil, c.labels/c.targets/2
		for ti := range c.targets {
			keys = append(keys, fmt.Sprintf("t%d", ti))
		}
	}
	var out []labels.Label
	for _, k := range keys {
		for v := range 2 {
			p := pools[k][v]
			rng.Shuffle(len(p), func(a, b int) { p[a], p[b] = p[b], p[a] })
			for _, i := range p[:min(per, len(p))] {
				sc := s.scores[i]
				out = append(out, labels.Label{ConvID: sc.ConvID, MetricID: "m01", Present: s.human[sc.ConvID], Labeler: "ana", At: time.Unix(0, 0)})
			}
		}
	}
	return out
}

// runGridCell simulates studies of one cell.
func runGridCell(t *testing.T, c gridCell, studies int, seed uint64) gridTally {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 35))
	var g gridTally
	for range studies {
		s := gridStudy(rng, c)
		ls := gridLabels(rng, s, c)
		rows := make([]ScoreRow, len(s.scores))
		for i, sc := range s.scores {
			rows[i] = RowOf(sc)
		}
		order, groups, _, err := groupByTarget(rows, nil, map[string]config.MetricType{"m01": config.Positive})
		if err != nil {
			t.Fatal(err)
		}
		trs := make([]targetRows, len(order))
		for i, name := range order {
			trs[i] = targetRows{name, groups[name]}
		}
		cals := calibrateFile(trs, &CalibrationInput{Labels: ls}, Options{Seed: rng.Uint64(), Conf: 0.95, calibReps: 20})
		for ti, name := range order {
			g.rates++
			cor := cals[ti].byMetric["m01"]
			if cor == nil || cor.Estimate == nil {
				continue
			}
			truth := s.truth[name]["m01"]
			in := *cor.Low <= truth && truth <= *cor.High
			g.given++
			g.width += *cor.High - *cor.Low
			if in {
				g.covered++
			}
			if name == "t0" {
				g.devGiven++
				if in {
					g.devCovered++
				}
			}
		}
	}
	return g
}

// TestCalibrationGrid asserts ≥ 93 % coverage of each target's true rate in
// every cell where a corrected number is given — for the target whose
// judge differs too — and that numbers are given where the labels allow
// (every cell of 100 labels per metric at prevalence 0.1 or more gets them
// in at least half its target-rates), so the test cannot pass by giving
// none.
func TestCalibrationGrid(t *testing.T) {
	if testing.Short() {
		t.Skip("simulation")
	}
	studies, targets := gridStudiesCI, []int{4}
	if os.Getenv("IMPACTBENCH_CALIB_GRID") == "full" {
		studies, targets = 200, []int{3, 4}
	}
	var log strings.Builder
	fmt.Fprintf(&log, "%d studies per cell; coverage of the given corrected rates (target 0's: the one whose judge may differ), share of target-rates given, mean width\n", studies)
	k := uint64(0)
	for _, nt := range targets {
		for _, perTarget := range []bool{false, true} {
			for _, differs := range []bool{false, true} {
				for _, n := range []int{20, 50, 100} {
					for _, prev := range []float64{0.03, 0.1, 0.3, 0.6} {
						k++
						c := gridCell{perTarget: perTarget, differs: differs, labels: n, prev: prev, targets: nt}
						g := runGridCell(t, c, studies, 2026*1000+k)
						checkGridCell(t, c, g, &log)
					}
				}
			}
		}
	}
	t.Log("\n" + log.String())
}

func checkGridCell(t *testing.T, c gridCell, g gridTally, log *strings.Builder) {
	t.Helper()
	share := float64(g.given) / float64(g.rates)
	if g.given == 0 {
		fmt.Fprintf(log, "%s  no number (0 of %d)\n", c, g.rates)
	} else {
		dev := "—"
		if g.devGiven > 0 {
			dev = fmt.Sprintf("%.1f%%", 100*float64(g.devCovered)/float64(g.devGiven))
		}
		fmt.Fprintf(log, "%s  coverage %5.1f%% (target 0: %s)  given %5.1f%%  width %.2f\n", c, 100*g.coverage(), dev, 100*share, g.width/float64(g.given))
	}
	if g.given > 0 && g.coverage() < 0.93 {
		t.Errorf("%s: coverage %.3f of %d given, want ≥ 0.93", c, g.coverage(), g.given)
	}
	if g.devGiven > 0 && float64(g.devCovered) < 0.93*float64(g.devGiven) {
		t.Errorf("%s: target 0's coverage %d of %d, want ≥ 93 %%", c, g.devCovered, g.devGiven)
	}
	if c.labels == 100 && c.prev >= 0.1 && share < 0.5 {
		t.Errorf("%s: a corrected rate for %.0f%% of target-rates, want at least half", c, 100*share)
	}
}
