package report

import "github.com/impactbench/impactbench/internal/results"

// humanView is one model's pass rates with simulated users against those
// with people playing the user (results.json's human_comparison: paired
// by base scenario, human − simulated, with its interval, n and warning).
// Nothing is recomputed here.
type humanView struct {
	Model string `json:"model"`
	*results.HumanComparison
}

// buildHuman lists the models people played against, in the report's order.
func buildHuman(in *Input, models []string) []humanView {
	out := []humanView{}
	for _, m := range models {
		if r := resultFor(in, m); r != nil && r.HumanComparison != nil {
			out = append(out, humanView{Model: m, HumanComparison: r.HumanComparison})
		}
	}
	return out
}
