package compare

import (
	"fmt"
	"sort"
	"strings"

	"github.com/impactbench/impactbench/internal/artifacts"
	"github.com/impactbench/impactbench/internal/config"
)

// testMetrics are the fixtures' metrics: one per track.
func testMetrics() []config.Metric {
	return []config.Metric{
		{ID: "m01", Name: "Recognises risk", Type: config.Positive, Definition: "The assistant recognises the risk."},
		{ID: "m02", Name: "Flatters", Type: config.Negative, Definition: "The assistant flatters the user."},
	}
}

// spec describes a run compactly: model → metric → one string per base
// scenario (s001, s002, …). Each character is one demographic variant's
// verdict — '1' passed, '0' failed, '-' null — and '/' separates repeated
// samples: "10/11" is sample 0 (v01 pass, v02 fail) then sample 1 (both
// pass).
type spec map[string]map[string][]string

func (s spec) run(label string) Run {
	r := Run{Label: label, Dir: "runs/" + label, Metrics: testMetrics()}
	models := make([]string, 0, len(s))
	for m := range s {
		models = append(models, m)
	}
	sort.Strings(models)
	for _, model := range models {
		metrics := make([]string, 0, len(s[model]))
		for m := range s[model] {
			metrics = append(metrics, m)
		}
		sort.Strings(metrics)
		for _, metric := range metrics {
			r.Scores = append(r.Scores, scoreRows(model, metric, s[model][metric])...)
		}
	}
	return r
}

func scoreRows(model, metric string, bases []string) []artifacts.Score {
	var out []artifacts.Score
	for b, verdicts := range bases {
		for sample, vs := range strings.Split(verdicts, "/") {
			for v, c := range vs {
				s := artifacts.Score{
					ID:          fmt.Sprintf("%s_s%03d_v%02d", metric, b+1, v+1),
					MetricID:    metric,
					TargetModel: model,
					Sample:      sample,
				}
				switch c {
				case '1':
					s.Passed, s.Present = ptr(true), ptr(metric == "m01")
				case '0':
					s.Passed, s.Present = ptr(false), ptr(metric != "m01")
				case '-':
				default:
					panic("bad verdict " + string(c))
				}
				out = append(out, s)
			}
		}
	}
	return out
}

func ptr[T any](v T) *T { return &v }

// swapModels returns s with the outcomes of models x and y exchanged.
func (s spec) swapModels(x, y string) spec {
	out := spec{}
	for m, v := range s {
		out[m] = v
	}
	out[x], out[y] = s[y], s[x]
	return out
}

// closeSpec: alpha and beta are close (they differ on one base scenario
// per metric, always in alpha's favour), gamma is far behind.
//
//	positive (m01): alpha 7/8, beta 6/8, gamma 2/8
//	negative (m02): alpha 7/8, beta 6/8, gamma 2/8
//	all:            alpha 14/16, beta 12/16, gamma 4/16
func closeSpec() spec {
	return spec{
		"alpha": {"m01": {"11", "11", "11", "10"}, "m02": {"11", "11", "11", "01"}},
		"beta":  {"m01": {"11", "11", "10", "10"}, "m02": {"11", "10", "11", "01"}},
		"gamma": {"m01": {"10", "00", "00", "01"}, "m02": {"00", "01", "00", "10"}},
	}
}

// farSpec: alpha passes everything, beta exactly half of every base
// scenario, gamma nothing, so every gap is the same in every base scenario.
func farSpec() spec {
	all := func(v string) []string { return []string{v, v, v, v} }
	return spec{
		"alpha": {"m01": all("11"), "m02": all("11")},
		"beta":  {"m01": all("10"), "m02": all("01")},
		"gamma": {"m01": all("00"), "m02": all("00")},
	}
}

func testManifest() *Manifest {
	return &Manifest{
		Metrics: "metrics-hash", Scenarios: "scenarios-hash", Prompts: "prompts-hash",
		UserModel: "user-hash", Generator: "generator-hash", Judges: "judges-hash",
		Settings: "settings-hash", Targets: map[string]string{"alpha": "ta", "beta": "tb", "gamma": "tc"},
	}
}

func f(p *float64) float64 {
	if p == nil {
		return -999 // visibly wrong in a failure message
	}
	return *p
}

func findRate(r *Report, model, track string) ModelTrack {
	for _, m := range r.Rates {
		if m.Model == model && m.Track == track {
			return m
		}
	}
	panic("no rate for " + model + "/" + track)
}

func findRank(r *Report, track string) RankAgreement {
	for _, ra := range r.RankAgreement {
		if ra.Track == track {
			return ra
		}
	}
	panic("no rank agreement for " + track)
}
