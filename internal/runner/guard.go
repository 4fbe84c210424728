package runner

import (
	"errors"
	"path/filepath"

	"github.com/impactbench/impactbench/internal/artifacts"
	"github.com/impactbench/impactbench/internal/phase"
)

// guardRows refuses to replace path (a JSON array) with newRows rows when
// it holds more (phase.GuardRows), unless forced.
func (r *Runner) guardRows(path string, newRows int, why string) error {
	return phase.GuardRows(r.opts.Force, path, newRows, why)
}

// guardTargets applies simulate's row-count rule to every target before any
// of them starts: targets run concurrently, and one target's refusal must
// not come after the others have paid for their conversations.
func (r *Runner) guardTargets(targets []string) error {
	if r.opts.DryRun || r.opts.Force {
		return nil
	}
	rows := 0
	if err := r.scanScenarios(func(sc artifacts.Scenario) {
		if r.inShard(sc.ID) {
			rows += r.cfg.Generation.NumSamples
		}
	}); err != nil {
		return err
	}
	scSHA, _ := fileSHA(filepath.Join(r.outDir, "scenarios.json"))
	var errs []error
	for _, id := range targets {
		t, err := r.targetConfig(id)
		if err != nil {
			return err
		}
		out := filepath.Join(r.runDir(id), "conversations"+r.shardSuffix()+".json")
		if upToDate, _ := r.upToDate(phase.StageSimulate.String()+"/"+id+r.shardSuffix(), out, r.simInputs(t, scSHA)); upToDate {
			continue
		}
		why := "scenarios.json or generation.num_samples shrank"
		if err := r.guardRows(out, rows, why); err != nil {
			errs = append(errs, err)
		} else if err := r.guardRows(r.scoresPath(id), rows, why); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
