package results

import (
	"fmt"
	"math/rand/v2"
	"os"
	"sort"
	"strings"
	"testing"
	"time"

	"gonum.org/v1/gonum/stat/distuv"

	"github.com/impactbench/impactbench/internal/artifacts"
	"github.com/impactbench/impactbench/internal/config"
	"github.com/impactbench/impactbench/internal/labels"
	"github.com/impactbench/impactbench/internal/racemode"
	"github.com/impactbench/impactbench/internal/stats"
)

// simJudge is a judge's true error on one metric.
type simJudge struct{ se, sp float64 }

// simStudy is a simulated benchmark: targets × metrics × base scenarios ×
// variants × samples, each row with the truth (what people would say) and
// a judge verdict drawn from the metric's judge error. truth[t][m] is the
// target's true rate of the behaviour on the metric (the population the
// base scenarios are drawn from).
type simStudy struct {
	scores  []artifacts.Score
	human   map[string]bool // conv_id → truth
	truth   map[string]map[string]float64
	metrics []config.Metric
}

// simulateStudy draws one study. Metric k's type alternates positive,
// negative; each target's true rate on it is drawn in [0.1, 0.6]; base
// scenarios vary around it (beta, ICC 0.3).
func simulateStudy(rng *rand.Rand, targets []string, judges []simJudge, bases, variants, samples int) simStudy {
	s := simStudy{human: map[string]bool{}, truth: map[string]map[string]float64{}}
	for k := range judges {
		typ := config.Positive
		if k%2 == 1 {
			typ = config.Negative
		}
		s.metrics = append(s.metrics, config.Metric{ID: fmt.Sprintf("m%02d", k+1), Type: typ})
	}
	const icc = 0.3
	for _, t := range targets {
		s.truth[t] = map[string]float64{}
		for k, m := range s.metrics {
			mu := 0.1 + 0.5*rng.Float64()
			s.truth[t][m.ID] = mu
			a, b := mu*(1-icc)/icc, (1-mu)*(1-icc)/icc
			for g := range bases {
				rate := distuv.Beta{Alpha: a, Beta: b, Src: rng}.Rand()
				for v := range variants {
					id := fmt.Sprintf("%s_s%03d_v%02d", m.ID, g+1, v+1)
					for smp := range samples {
						h := rng.Float64() < rate
						j := judges[k]
						present := rng.Float64() < j.se
						if !h {
							present = rng.Float64() < 1-j.sp
						}
						conv := artifacts.ConvID(id, t, smp)
						s.human[conv] = h
						passed := present == (m.Type == config.Positive)
						s.scores = append(s.scores, artifacts.Score{ID: id, MetricID: m.ID, TargetModel: t, Sample: smp,
							Present: ptr(present), Passed: ptr(passed), ConvID: conv})
					}
				}
			}
		}
	}
	return s
}

// labelEvenly draws, per metric and target, rows labelled at random within
// each judge verdict of the target's rows: what the viewer's calibration
// queue draws. perVerdict[k] is metric k's count per target and verdict.
func (s simStudy) labelEvenly(rng *rand.Rand, perVerdict func(k int) int) []labels.Label {
	pools := map[string]*[2][]int{}
	var keys []string
	for i, sc := range s.scores {
		key := sc.MetricID + "\x00" + sc.TargetModel
		if pools[key] == nil {
			pools[key] = &[2][]int{}
			keys = append(keys, key)
		}
		v := b2i(*sc.Present)
		pools[key][v] = append(pools[key][v], i)
	}
	var out []labels.Label
	for k, m := range s.metrics {
		for _, key := range keys {
			if !strings.HasPrefix(key, m.ID+"\x00") {
				continue
			}
			for v := range 2 {
				p := pools[key][v]
				rng.Shuffle(len(p), func(a, b int) { p[a], p[b] = p[b], p[a] })
				for _, i := range p[:min(perVerdict(k), len(p))] {
					sc := s.scores[i]
					out = append(out, labels.Label{ConvID: sc.ConvID, MetricID: sc.MetricID, Present: s.human[sc.ConvID], Labeler: "ana", At: time.Unix(0, 0)})
				}
			}
		}
	}
	return out
}

// simConfig is one row of the calibration simulation: labels per target
// and judge verdict of every metric, and how many studies.
type simConfig struct {
	perVerdict, studies int
	assert              bool
}

// TestCalibrationLoopSimulation: four targets × four metrics, each metric
// with its own judge error (three informative judges, one that guesses),
// labels drawn as the viewer's queue draws them — at random within each
// target × judge verdict, 10 of each (80 per metric) — through calibrateFile
// as `calibrate` runs it. Every metric with an informative judge gets a
// corrected rate for (at least 95 % of) the target-rates, its interval
// covers the target's true rate at least 93 % of the time, and the
// guessing judge gets a warning instead of a number in at least 95 % of
// them (the informative gate is a one-sided 5 % test). It also checks that
// the labelling plan's expected half-width matches the intervals the
// studies got. IMPACTBENCH_CALIB_SIM=1 adds the budget table of
// docs/statistics.md (3 to 25 labels per target and verdict).
func TestCalibrationLoopSimulation(t *testing.T) {
	racemode.SkipHeavy(t)
	if testing.Short() {
		t.Skip("simulation")
	}
	configs := []simConfig{{10, 100, true}}
	if os.Getenv("IMPACTBENCH_CALIB_SIM") != "" {
		configs = []simConfig{{3, 200, false}, {5, 200, false}, {10, 200, true}, {25, 200, false}}
	}
	var log strings.Builder
	for _, cfg := range configs {
		runCalibSim(t, cfg, &log)
	}
	t.Logf("calibration: 4 targets × 4 metrics, 10 base scenarios × 2 variants × 2 samples per target and metric (true rates 0.1–0.6, ICC 0.3), labels per target × judge verdict:\n%s", log.String())
}

// calibrateSim runs the calibration as Aggregate does (calibrateFile on
// the rows grouped by target; the rest of Aggregate — pairwise tests and
// the like — is left out for speed), and returns each target's observed
// pass-rate interval per metric beside it.
func calibrateSim(t *testing.T, s simStudy, ls []labels.Label, seed uint64) ([]*calibrationOf, []map[string]stats.RateInterval) {
	t.Helper()
	types := map[string]config.MetricType{}
	for _, m := range s.metrics {
		types[m.ID] = m.Type
	}
	rows := make([]ScoreRow, len(s.scores))
	for i, sc := range s.scores {
		rows[i] = RowOf(sc)
	}
	order, groups, _, err := groupByTarget(rows, nil, types)
	if err != nil {
		t.Fatal(err)
	}
	var trs []targetRows
	var obs []map[string]stats.RateInterval
	for _, name := range order {
		trs = append(trs, targetRows{name, groups[name]})
		cs := map[string]*clusterSet{}
		for _, r := range groups[name] {
			if cs[r.MetricID] == nil {
				cs[r.MetricID] = newClusterSet()
			}
			cs[r.MetricID].add(keyOf(r), *r.Passed)
		}
		o := map[string]stats.RateInterval{}
		for m, c := range cs {
			o[m] = stats.ClusterRate(c.sums(func(clusterKey) bool { return true }), 0.95)
		}
		obs = append(obs, o)
	}
	return calibrateFile(trs, &CalibrationInput{Labels: ls}, Options{Seed: seed, Conf: 0.95, calibReps: 50}), obs
}

func runCalibSim(t *testing.T, cfg simConfig, log *strings.Builder) {
	targets := []string{"a", "b", "c", "d"}
	judges := []simJudge{{0.9, 0.9}, {0.85, 0.95}, {0.95, 0.85}, {0.5, 0.5}}
	rng := rand.New(rand.NewPCG(2026, uint64(26+cfg.perVerdict)))
	type tally struct {
		produced, covered, n, planned int
		width, obsWidth               float64
		planHW, realHW                float64
		levels                        map[string]int
	}
	per := make([]tally, len(judges))
	for k := range per {
		per[k].levels = map[string]int{}
	}
	for range cfg.studies {
		s := simulateStudy(rng, targets, judges, 10, 2, 2)
		ls := s.labelEvenly(rng, func(int) int { return cfg.perVerdict })
		rows := make([]ScoreRow, len(s.scores))
		for i, sc := range s.scores {
			rows[i] = RowOf(sc)
		}
		plan := PlanLabels(rows, ls, "judge", 0.1, 0.95)
		cals, obs := calibrateSim(t, s, ls, rng.Uint64())
		halves := make([][]float64, len(judges))
		for ti, cal := range cals {
			target := targets[ti]
			for k, metric := range s.metrics {
				c := cal.byMetric[metric.ID]
				tl := &per[k]
				tl.n++
				if c == nil || c.Estimate == nil {
					continue
				}
				tl.produced++
				tl.levels[c.Level]++
				truth := s.truth[target][metric.ID]
				if metric.Type == config.Negative {
					truth = 1 - truth
				}
				if *c.Low <= truth && truth <= *c.High {
					tl.covered++
				}
				tl.width += *c.High - *c.Low
				o := obs[ti][metric.ID]
				tl.obsWidth += o.Hi - o.Lo
				halves[k] = append(halves[k], (*c.High-*c.Low)/2)
			}
		}
		for k, metric := range s.metrics {
			mp, _ := plan.Metrics.Get(metric.ID)
			if mp.HalfWidthNow != nil && len(halves[k]) == len(targets) {
				per[k].planned++
				per[k].planHW += *mp.HalfWidthNow
				per[k].realHW += median(halves[k])
			}
		}
	}
	fmt.Fprintf(log, "%d labels per target and judge verdict (%d per metric), %d studies:\n", cfg.perVerdict, 2*len(targets)*cfg.perVerdict, cfg.studies)
	for k, j := range judges {
		tl := per[k]
		var lv []string
		for l, n := range tl.levels {
			lv = append(lv, fmt.Sprintf("%s %d", l, n))
		}
		sort.Strings(lv)
		fmt.Fprintf(log, "  Se/Sp %.2f/%.2f: corrected %d of %d", j.se, j.sp, tl.produced, tl.n)
		if tl.produced > 0 {
			fmt.Fprintf(log, ", covered %.1f%%, mean width %.3f (observed %.3f) [%s]", 100*float64(tl.covered)/float64(tl.produced),
				tl.width/float64(tl.produced), tl.obsWidth/float64(tl.produced), strings.Join(lv, ", "))
		}
		if tl.planned > 0 {
			fmt.Fprintf(log, "; plan's expected half-width %.3f, realised median %.3f", tl.planHW/float64(tl.planned), tl.realHW/float64(tl.planned))
		}
		log.WriteString("\n")
		if !cfg.assert {
			continue
		}
		informative := j.se+j.sp > 1.5
		switch {
		case informative && float64(tl.produced) < 0.95*float64(tl.n):
			t.Errorf("Se/Sp %.2f/%.2f: corrected %d of %d target×study rates, want at least 95 %%", j.se, j.sp, tl.produced, tl.n)
		case informative && float64(tl.covered) < 0.93*float64(tl.produced):
			t.Errorf("Se/Sp %.2f/%.2f: coverage %.3f < 0.93", j.se, j.sp, float64(tl.covered)/float64(tl.produced))
		case informative:
			if r := tl.realHW / tl.planHW; r < 0.75 || r > 1.33 {
				t.Errorf("Se/Sp %.2f/%.2f: the plan expected half-width %.3f, the studies got %.3f", j.se, j.sp, tl.planHW/float64(tl.planned), tl.realHW/float64(tl.planned))
			}
		case float64(tl.produced) > 0.05*float64(tl.n):
			t.Errorf("guessing judge: a number in %d of %d, want a warning in at least 95 %%", tl.produced, tl.n)
		}
	}
}
