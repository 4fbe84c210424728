package report

import (
	"time"

	"github.com/impactbench/impactbench/internal/config"
)

// OptionsFor describes a config's run settings for report.html.
func OptionsFor(cfg *config.Config) Options {
	landmarks, perfunctory := cfg.Landmarks, cfg.Perfunctory
	s := Settings{
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
		s.Targets = append(s.Targets, TargetSetting{ID: t.ID, Model: t.Provider() + "/" + t.Model})
	}
	return Options{Settings: s}
}
