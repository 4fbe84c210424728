package runner

import (
	"errors"
	"path/filepath"

	"github.com/impactbench/impactbench/internal/artifacts"
	"github.com/impactbench/impactbench/internal/generate"
	"github.com/impactbench/impactbench/internal/phase"
	"github.com/impactbench/impactbench/internal/simulate"
)

// guardBeforeScenarios applies guardTargets before gen_scenarios when the
// new scenarios.json will hold no more rows than the current one: then the
// current file's rows are what simulate will see (fewer means the scenario
// guard refuses anyway), and a run that would shrink a target's outputs —
// say `run --force` after num_samples was lowered — is refused before it
// pays to regenerate, and rewrites, scenarios.json. A set that grows is
// checked after it is written (guardTargets in run).
func (r *Runner) guardBeforeScenarios(targets []string) error {
	if r.b.Opts.DryRun || r.b.Opts.AcceptFewer {
		return nil
	}
	have, err := phase.CountRows(r.b.Files.Scenarios())
	if err != nil {
		return nil // no (readable) scenarios.json: nothing simulated from it to protect
	}
	planned, err := generate.PlannedScenarios(r.b, r.grow)
	if err != nil || planned > have {
		return err
	}
	rows, err := r.simulateRows()
	if err != nil {
		return nil // a damaged file is gen_scenarios' to report (or replace)
	}
	return r.guardRows(targets, rows)
}

// guardTargets applies simulate's row-count rule to every target before any
// of them starts: targets run concurrently, and one target's refusal must
// not come after the others have paid for their conversations.
func (r *Runner) guardTargets(targets []string) error {
	if r.b.Opts.DryRun || r.b.Opts.AcceptFewer {
		return nil
	}
	rows, err := r.simulateRows()
	if err != nil {
		return err
	}
	return r.guardRows(targets, rows)
}

// simulateRows is how many conversations simulate makes per target from
// the current scenarios.json (this shard's).
func (r *Runner) simulateRows() (int, error) {
	rows := 0
	err := r.b.ScanScenarios(func(sc artifacts.Scenario) {
		if r.b.InShard(sc.ID) {
			rows += r.b.Cfg.Generation.NumSamples
		}
	})
	return rows, err
}

// guardRows refuses when a target whose simulate would run holds more
// conversations or scores than rows.
func (r *Runner) guardRows(targets []string, rows int) error {
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
