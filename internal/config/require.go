package config

// Role is a model block of config.yaml a command is about to call.
type Role string

// The roles a command can need. RoleGenerator is generator_model, or
// user_model when generator_model is absent (upstream has one model for both).
const (
	RoleGenerator Role = "generator"
	RoleUser      Role = "user_model"
	RoleJudge     Role = "evaluator_model"
	RoleTargets   Role = "targets"
)

// Require fails when a role a command needs has no model at all — a config
// that cannot produce a result. The loader accepts such a config on purpose
// (aggregate, report and status read finished runs and need no model); the
// command that would call the missing model asks here before any phase runs.
// The error is an *Error naming config.yaml and the field.
func (c *Config) Require(roles ...Role) error {
	ps := &problems{file: c.Path}
	seen := map[Role]bool{}
	for _, r := range roles {
		if r == RoleGenerator && c.GeneratorModel == nil {
			r = RoleUser // one block, one message
		}
		if seen[r] {
			continue
		}
		seen[r] = true
		switch r {
		case RoleGenerator:
			if c.GeneratorModel.Model == "" {
				ps.add(0, 0, "generator_model", "required to write metrics and scenarios: give it model: and source:, or remove the block to use user_model")
			}
		case RoleUser:
			if c.UserModel.Model == "" {
				ps.add(0, 0, "user_model", "required: it plays the simulated user (and writes metrics and scenarios unless generator_model is set); add a user_model: block with model: and source:")
			}
		case RoleJudge:
			if len(c.EvaluatorModels) == 0 {
				ps.add(0, 0, "evaluator_model", "required to evaluate (the judge); without it every verdict would be null: add an evaluator_model: block with model: and source:")
			}
		case RoleTargets:
			if len(c.Targets) == 0 {
				ps.add(0, 0, "targets", "no targets: nothing to simulate or evaluate; list at least one model under targets: (each with id:, model: and source:)")
			}
		}
	}
	return ps.err()
}
