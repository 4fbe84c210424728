package runner

import (
	"time"

	"github.com/impactbench/impactbench/internal/config"
	"github.com/impactbench/impactbench/internal/report"
)

// ReportOptionsFor describes a config's run settings for report.html.
func ReportOptionsFor(cfg *config.Config) report.Options {
	landmarks, perfunctory := cfg.Landmarks, cfg.Perfunctory
	s := report.Settings{
		Generated:          time.Now().UTC(),
		UserModel:          cfg.UserModel.Label(),
		GeneratorModel:     cfg.Generator().Label(),
		Turns:              cfg.Generation.Turns,
		Samples:            cfg.Generation.NumSamples,
		ScenariosPerMetric: cfg.Generation.ScenariosPerMetric,
		Seed:               cfg.Seed,
		Perfunctory:        &perfunctory,
		Landmarks:          &landmarks,
	}
	for _, j := range cfg.EvaluatorModels {
		s.JudgeModels = append(s.JudgeModels, j.Label())
	}
	for _, t := range cfg.Targets {
		s.Targets = append(s.Targets, report.TargetSetting{ID: t.ID, Model: t.Provider() + "/" + t.Model})
	}
	return report.Options{Settings: s}
}

// ReportOptions describes this run's settings for report.html.
func (r *Runner) ReportOptions() report.Options { return ReportOptionsFor(r.cfg) }

// Logf prints a human line through the progress tracker.
func (r *Runner) Logf(format string, args ...any) { r.logf(format, args...) }
