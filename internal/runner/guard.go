package runner

import (
	"errors"
	"path/filepath"

	"github.com/impactbench/impactbench/internal/artifacts"
	"github.com/impactbench/impactbench/internal/phase"
	"github.com/impactbench/impactbench/internal/simulate"
)

// guardTargets applies simulate's row-count rule to every target before any
// of them starts: targets run concurrently, and one target's refusal must
// not come after the others have paid for their conversations.
func (r *Runner) guardTargets(targets []string) error {
	if r.b.Opts.DryRun || r.b.Opts.AcceptFewer {
		return nil
	}
	rows := 0
	if err := r.b.ScanScenarios(func(sc artifacts.Scenario) {
		if r.b.InShard(sc.ID) {
			rows += r.b.Cfg.Generation.NumSamples
		}
	}); err != nil {
		return err
	}
	scSHA, _ := phase.FileSHA(filepath.Join(r.b.Files.Dir, "scenarios.json"))
	var errs []error
	for _, id := range targets {
		t, err := r.b.TargetConfig(id)
		if err != nil {
			return err
		}
		out := filepath.Join(r.b.Files.RunDir(id), "conversations"+r.b.Opts.Shard.Suffix()+".json")
		if upToDate, _ := r.b.UpToDate(phase.StageSimulate.String()+"/"+id+r.b.Opts.Shard.Suffix(), out, simulate.Inputs(r.b, t, scSHA)); upToDate {
			continue
		}
		why := "scenarios.json or generation.num_samples shrank"
		if err := r.b.GuardRows(out, rows, why); err != nil {
			errs = append(errs, err)
		} else if err := r.b.GuardRows(r.b.Scores(id), rows, why); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
