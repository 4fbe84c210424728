package validation

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/impactbench/impactbench/internal/config"
	"github.com/impactbench/impactbench/internal/fault"
	"github.com/impactbench/impactbench/internal/fsx"
	"github.com/impactbench/impactbench/internal/layout"
	"github.com/impactbench/impactbench/internal/work"
)

// Swap is one validation run's role swap: generator, user or judge.
type Swap struct {
	Role  string // "generator" | "user" | "judge"
	Model string // a target id, a configured model name, or source/model
}

// ParseSwap reads "role=MODEL".
func ParseSwap(s string) (Swap, error) {
	role, model, ok := strings.Cut(s, "=")
	role = strings.TrimSpace(role)
	if !ok || model == "" {
		return Swap{}, fault.Inputf("--swap %q: want ROLE=MODEL, e.g. --swap user=anthropic/claude-haiku-4-5", s)
	}
	switch role {
	case "generator", "user", "judge":
	default:
		return Swap{}, fault.Inputf("--swap %q: role must be generator, user or judge", s)
	}
	return Swap{Role: role, Model: strings.TrimSpace(model)}, nil
}

// AllowedDiffs names the fingerprint components a swap is meant to change.
func (s Swap) AllowedDiffs() []string {
	switch s.Role {
	case "generator":
		return []string{"generator", "scenarios"}
	case "user":
		return []string{"user_model"}
	default:
		return []string{"judges"}
	}
}

// ValidationDir is where a swap's run is written: never over the main run.
func ValidationDir(benchDir string, s Swap) string {
	return layout.Bench{Dir: benchDir}.Validation(s.Role, s.Model)
}

// PrepareValidation returns the swapped config and the output directory for
// a validation run, seeded with the main run's files the swap keeps fixed:
// the metrics always; the scenarios for a user or judge swap; the
// conversations for a judge swap. The main run is never written to.
func PrepareValidation(cfg *config.Config, benchDir string, s Swap) (*config.Config, string, error) {
	m, err := resolveModel(cfg, s.Model)
	if err != nil {
		return nil, "", err
	}
	c := *cfg
	if c.GeneratorModel == nil {
		// The generator defaults to user_model; pin it so a user swap does
		// not silently change who (would have) written the scenarios.
		g := cfg.UserModel
		c.GeneratorModel = &g
	}
	switch s.Role {
	case "generator":
		c.GeneratorModel = &m
	case "user":
		c.UserModel = m
	case "judge":
		c.EvaluatorModels = []config.ModelConfig{m}
	}
	main := layout.Bench{Dir: benchDir}
	if _, err := os.Stat(main.Results()); err != nil {
		return nil, "", fault.Inputf("%s has no %s: run `impactbench run %s` first — a validation run is compared against the main run", benchDir, layout.ResultsFile, filepath.Base(benchDir))
	}
	out := ValidationDir(benchDir, s)
	if err := os.MkdirAll(out, 0o755); err != nil {
		return nil, "", err
	}
	swap := layout.Bench{Dir: out}
	copies := [][2]string{{layout.BenchmarkPath(benchDir), layout.BenchmarkPath(out)}}
	if s.Role != "generator" {
		copies = append(copies, [2]string{main.Scenarios(), swap.Scenarios()})
	}
	if s.Role == "judge" {
		for _, t := range cfg.Targets {
			copies = append(copies, [2]string{main.Run(t.ID).Conversations(), swap.Run(t.ID).Conversations()},
				[2]string{main.RunCost(t.ID), swap.RunCost(t.ID)})
		}
	}
	for _, c := range copies {
		src, dst := c[0], c[1]
		if _, err := os.Stat(dst); err == nil {
			continue // an earlier validation run already has it: keep its state
		}
		if err := copyFile(src, dst); err != nil && !errors.Is(err, os.ErrNotExist) {
			return nil, "", fmt.Errorf("prepare %s: %w", out, err)
		}
	}
	return &c, out, nil
}

// resolveModel finds a model by target id, configured model name, or source/model.
func resolveModel(cfg *config.Config, name string) (config.ModelConfig, error) {
	j := config.ModelConfig{ID: "judge:" + name, Model: name}
	if i := strings.Index(name, "/"); i > 0 {
		j.Source, j.Model = name[:i], name[i+1:]
	}
	ms, err := work.ResolveJudges(cfg, []config.ModelConfig{j})
	if err != nil {
		return config.ModelConfig{}, err
	}
	m := ms[0]
	m.ID = ""
	return m, nil
}

// copyFile copies src to dst atomically (see package fsx).
func copyFile(src, dst string) error {
	in, err := fsx.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := fsx.Create(dst, fsx.Shared)
	if err != nil {
		return err
	}
	defer out.Abort()
	if _, err := io.Copy(out, in); err != nil {
		return err
	}
	return out.Commit()
}
