package runner

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/impactbench/impactbench/internal/config"
	"github.com/impactbench/impactbench/internal/fault"
	"github.com/impactbench/impactbench/internal/generate"
	"github.com/impactbench/impactbench/internal/phase"
)

// need is what an invocation will do: the phases that will run (not the
// ones that will be skipped) and the targets of simulate and evaluate.
type need struct {
	genMetrics, genScenarios bool
	simulate, evaluate       bool
	targets                  []string
}

// usedModel is a model a phase will call, with the config field it came
// from ("" when it has none, e.g. a --judge model).
type usedModel struct {
	field string
	m     config.ModelConfig
}

// Preflight checks, before stage starts, everything it will need: the
// models of every role it calls exist in config.yaml, their ${VAR}s are set
// and their clients can be built (keys present, URLs valid), the targets
// named on the command line exist, and the scenarios are not empty. Every
// failure is an input or config error (exit 2) and nothing has been
// written or paid for. Run does the same for all stages.
func (r *Runner) Preflight(stage phase.Stage, targets []string) error {
	n := need{targets: targets}
	switch stage {
	case phase.StageGenMetrics:
		n.genMetrics = generate.MetricsWillRun(r.b, r.b.Opts.Force)
	case phase.StageGenScenarios:
		n.genScenarios = generate.ScenariosWillRun(r.b, r.grow)
	case phase.StageSimulate:
		n.simulate = true
	case phase.StageEvaluate:
		n.evaluate = true
	case phase.StageAggregate:
		return nil // reads finished runs; calls no model
	}
	return r.preflight(n)
}

// PreflightRun is Preflight for `run`: every stage, generation only where
// it will actually run (a finished benchmark may lack its generator's key).
// Run calls it first; `run all` calls it for every benchmark before the
// first one runs.
func (r *Runner) PreflightRun(targets []string) error {
	return r.preflight(need{
		genMetrics:   generate.MetricsWillRun(r.b, false),
		genScenarios: generate.MetricsWillRun(r.b, false) || generate.ScenariosWillRun(r.b, r.grow),
		simulate:     true,
		evaluate:     true,
		targets:      targets,
	})
}

func (r *Runner) preflight(n need) error {
	if err := r.b.Cfg.Require(n.roles(r)...); err != nil {
		return err
	}
	if err := r.checkTargetNames(n); err != nil {
		return err
	}
	if n.simulate && !n.genScenarios {
		if err := r.checkScenariosNotEmpty(); err != nil {
			return err
		}
	}
	if r.b.Opts.DryRun || r.b.Opts.Replay {
		return nil // a plan and a replay call nothing: keys may be missing
	}
	used := r.usedModels(n)
	if err := r.checkEnvOf(used); err != nil {
		return err
	}
	return r.buildClients(used)
}

// roles are the config blocks the phases in n call.
func (n need) roles(r *Runner) []config.Role {
	var roles []config.Role
	if n.genMetrics || n.genScenarios {
		roles = append(roles, config.RoleGenerator)
	}
	if n.simulate {
		roles = append(roles, config.RoleUser)
	}
	if n.evaluate && len(r.b.Opts.Judges) == 0 {
		roles = append(roles, config.RoleJudge)
	}
	if (n.simulate || n.evaluate) && len(n.targets) == 0 {
		roles = append(roles, config.RoleTargets)
	}
	return roles
}

// checkTargetNames fails on a target named on the command line that config
// does not have. evaluate also accepts a target whose conversations exist
// (a target removed from config.yaml can still be re-judged).
func (r *Runner) checkTargetNames(n need) error {
	if !n.simulate && !n.evaluate {
		return nil
	}
	var unknown []string
	for _, t := range n.targets {
		if _, ok := r.b.Cfg.Target(t); ok {
			continue
		}
		if !n.simulate && exists(filepath.Join(r.b.Files.RunDir(t), "conversations"+r.b.Opts.Shard.Suffix()+".json")) {
			continue
		}
		unknown = append(unknown, t)
	}
	return UnknownTargets(r.b.Cfg, unknown)
}

// UnknownTargets is the input error (exit 2) for targets named on the
// command line that config.yaml does not have, naming them and config's
// targets, with "did you mean X?" when one unknown target is a likely
// typo of a known one; nil when unknown is empty.
func UnknownTargets(cfg *config.Config, unknown []string) error {
	if len(unknown) == 0 {
		return nil
	}
	ids := make([]string, len(cfg.Targets))
	for i, t := range cfg.Targets {
		ids[i] = t.ID
	}
	quoted := make([]string, len(unknown))
	for i, t := range unknown {
		quoted[i] = fmt.Sprintf("%q", t)
	}
	hint := ""
	if len(unknown) == 1 {
		if s := config.Suggest(unknown[0], ids); s != "" {
			hint = "; did you mean " + s + "?"
		}
	}
	what := "target %s is not in %s (targets: %s)%s"
	if len(unknown) > 1 {
		what = "targets %s are not in %s (targets: %s)%s"
	}
	return fault.Inputf(what, strings.Join(quoted, ", "), cfg.Path, strings.Join(ids, ", "), hint)
}

// checkScenariosNotEmpty refuses a scenarios.json with no rows: simulate
// would write empty conversations and scores over every target's results.
// A missing file is left to simulate, which says to run gen-scenarios.
func (r *Runner) checkScenariosNotEmpty() error {
	path := filepath.Join(r.b.Files.Dir, "scenarios.json")
	n, err := phase.CountRows(path)
	if err != nil || n > 0 {
		return nil
	}
	return emptyScenariosError(path, r.b.Spec.Slug)
}

func emptyScenariosError(path, slug string) error {
	return fault.Inputf("%s holds no scenarios (an empty list): there is nothing to simulate, and simulating it would empty every target's conversations and scores; restore the file or regenerate it with `impactbench gen-scenarios %s --force`", path, slug)
}

// usedModels lists every model the phases in n will call, with its field.
func (r *Runner) usedModels(n need) []usedModel {
	var used []usedModel
	if n.genMetrics || n.genScenarios {
		used = append(used, usedModel{r.b.GeneratorField(), r.b.Cfg.Generator()})
	}
	if n.simulate {
		used = append(used, usedModel{"user_model", r.b.Cfg.UserModel})
		for _, id := range n.targetsOr(r) {
			if t, ok := r.b.Cfg.Target(id); ok {
				f, _ := r.b.Cfg.TargetField(id)
				used = append(used, usedModel{f, t})
			}
		}
	}
	if n.evaluate {
		field := "evaluator_model"
		if len(r.b.Opts.Judges) > 0 {
			field = ""
		}
		judges := r.b.Judges()
		for i, j := range judges {
			f := field
			if f != "" && len(judges) > 1 {
				f = fmt.Sprintf("%s[%d]", field, i)
			}
			used = append(used, usedModel{f, j})
		}
	}
	if m, field, ok := r.b.AuditModel(); ok && n.simulate {
		used = append(used, usedModel{field, m})
	}
	return used
}

func (n need) targetsOr(r *Runner) []string {
	if len(n.targets) > 0 {
		return n.targets
	}
	return r.Targets()
}

// checkEnvOf reports every unset ${VAR} the used models refer to, at once.
func (r *Runner) checkEnvOf(used []usedModel) error {
	var fields []string
	for _, u := range used {
		if u.field != "" {
			fields = append(fields, u.field)
		}
	}
	if len(fields) == 0 {
		return nil
	}
	return r.b.Cfg.CheckEnv(fields...)
}

// buildClients constructs every used model's client now, so a missing key
// or a malformed base_url stops the command before the first call instead
// of after the other targets have paid for theirs. The clients are kept
// and reused by the phases.
func (r *Runner) buildClients(used []usedModel) error {
	var errs []error
	for _, u := range used {
		if err := r.b.Models.Build(u.field, u.m); err != nil {
			if u.field != "" {
				err = fmt.Errorf("%s: %s: %w", r.b.Cfg.Path, u.field, err)
			}
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}
