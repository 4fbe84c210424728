package site

import (
	"errors"
	"io/fs"

	"github.com/impactbench/impactbench/internal/layout"
	"github.com/impactbench/impactbench/internal/results"
	"github.com/impactbench/impactbench/internal/study"
)

// calibChunk is site/data/calib.js: what judge calibration corrected, from
// each benchmark's results.json (`impactbench calibrate` writes the
// fields; a model without human labels has none).
type calibChunk struct {
	Models []calibModel `json:"models"`
}

// calibModel is one model's calibration on one benchmark.
type calibModel struct {
	Bench  string               `json:"bench"`
	Model  int                  `json:"model"`
	Labels results.LabelSummary `json:"labels"`
	// Score is the benchmark leaderboard's score beside its corrected one.
	Score     *float64     `json:"score"`
	Corrected *corrected   `json:"corrected"`
	Rates     []calibRate  `json:"rates"`  // the tracks, then each metric
	Judges    []calibJudge `json:"judges"` // each judge on each metric against the humans
}

// calibRate is an observed pass rate beside the rate corrected for the
// judge's errors.
type calibRate struct {
	Key      string     `json:"key"` // "positive", "negative" or a metric id
	Track    bool       `json:"track,omitempty"`
	Metric   int        `json:"metric"` // index in core's metrics, -1 when not published
	Observed *float64   `json:"obs"`
	Corr     *corrected `json:"corr"`
}

// corrected is results.Corrected (or the leaderboard's): Rate is nil and
// Warning says why when the judge is not calibrated well enough.
type corrected struct {
	Rate    *float64 `json:"rate"`
	Lo      *float64 `json:"lo"`
	Hi      *float64 `json:"hi"`
	Method  string   `json:"method"`
	Judge   string   `json:"judge"`
	Se      *float64 `json:"se,omitempty"`
	Sp      *float64 `json:"sp,omitempty"`
	NLabels int      `json:"n_labels"`
	Warning string   `json:"warn,omitempty"`
}

type calibJudge struct {
	Judge       string   `json:"judge"`
	Role        string   `json:"role"`
	Metric      string   `json:"metric"`
	N           int      `json:"n"`
	Se          stat     `json:"se"`
	Sp          stat     `json:"sp"`
	Kappa       stat     `json:"kappa"`
	Informative *bool    `json:"informative"`
	Agreement   *float64 `json:"agree"`
	Warning     string   `json:"warn,omitempty"`
}

type stat struct {
	Est *float64 `json:"est"`
	Lo  *float64 `json:"lo"`
	Hi  *float64 `json:"hi"`
}

// readCalibration reads the calibration fields of every study benchmark's
// results.json, for the study's models (by run directory). A benchmark
// without results.json has none; a damaged one is an error naming it.
func readCalibration(s *study.Study, model map[string]int) ([]calibModel, error) {
	metricIx := map[string]int{}
	k := 0
	for _, m := range s.Metrics {
		if m.Type != "" {
			metricIx[m.Key] = k
			k++
		}
	}
	var out []calibModel
	for _, b := range s.Benchmarks {
		path := layout.Bench{Dir: b.Dir}.Results()
		rs, err := results.ReadResults(path)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, err
		}
		runs := map[string]int{}
		for _, r := range b.Runs {
			if mi, ok := model[s.Models[r.Model].ID]; ok {
				runs[r.RunDir] = mi
			}
		}
		for i := range rs {
			r := &rs[i]
			mi, ok := runs[r.TargetModel]
			if !ok || r.JudgeCalibration == nil {
				continue
			}
			out = append(out, calibOf(s, b, mi, r, metricIx))
		}
	}
	return out, nil
}

func calibOf(s *study.Study, b *study.Bench, mi int, r *results.ModelResult, metricIx map[string]int) calibModel {
	c := calibModel{Bench: b.Slug, Model: mi, Labels: r.JudgeCalibration.Labels, Rates: []calibRate{}, Judges: []calibJudge{}}
	if lb := r.Leaderboard; lb != nil {
		c.Score = lb.Score
		if lc := lb.Corrected; lc != nil {
			c.Corrected = &corrected{Rate: lc.Score, Lo: lc.CILow, Hi: lc.CIHigh, Method: lc.Method, Judge: lc.Judge, Warning: lc.Warning}
		}
	}
	track := func(key string, obs *float64, rc *results.Corrected) {
		if rc != nil {
			c.Rates = append(c.Rates, calibRate{Key: key, Track: true, Metric: -1, Observed: obs, Corr: corrOf(rc)})
		}
	}
	track("positive", r.PositivePassRate, r.PositiveCorrected)
	track("negative", r.NegativePassRate, r.NegativeCorrected)
	for _, e := range r.ByMetric {
		if e.Value.Corrected == nil {
			continue
		}
		c.Rates = append(c.Rates, calibRate{Key: e.Key, Metric: publishedMetric(s, b.Slug, e.Key, metricIx), Observed: e.Value.PassRate, Corr: corrOf(e.Value.Corrected)})
	}
	for _, j := range r.JudgeCalibration.Judges {
		for _, e := range j.Value.ByMetric {
			mc := e.Value
			c.Judges = append(c.Judges, calibJudge{Judge: j.Key, Role: j.Value.Role, Metric: e.Key, N: mc.N,
				Se: statOf(mc.Sensitivity), Sp: statOf(mc.Specificity), Kappa: statOf(mc.Kappa),
				Informative: mc.Informative, Agreement: mc.Agreement, Warning: mc.Warning})
		}
	}
	return c
}

// publishedMetric is the index of benchmark slug's metric id among the
// published metrics (a label benchmark's copy counts as its source), or -1.
func publishedMetric(s *study.Study, slug, id string, metricIx map[string]int) int {
	if i, ok := metricIx[study.Key(slug, id)]; ok {
		return i
	}
	if slug == study.LabelBenchmark {
		for _, m := range s.Metrics {
			if m.LabelID == id {
				if i, ok := metricIx[m.Key]; ok {
					return i
				}
			}
		}
	}
	return -1
}

func corrOf(c *results.Corrected) *corrected {
	return &corrected{Rate: c.Estimate, Lo: c.Low, Hi: c.High, Method: c.Method, Judge: c.Judge, Se: c.Se, Sp: c.Sp, NLabels: c.NLabels, Warning: c.Warning}
}

func statOf(s results.Statistic) stat { return stat{Est: s.Estimate, Lo: s.Low, Hi: s.High} }
