package work

import (
	"strings"

	"github.com/impactbench/impactbench/internal/config"
	"github.com/impactbench/impactbench/internal/fault"
)

// ResolveJudges turns `--judge NAME` values into full model configs. NAME
// may be a target id, the model name of any configured model, or
// "source/model"; in the last case the API key, base URL and headers come
// from a configured model of the same provider, so no key is ever typed on
// the command line.
func ResolveJudges(cfg *config.Config, judges []config.ModelConfig) ([]config.ModelConfig, error) {
	known := append([]config.ModelConfig{cfg.UserModel}, cfg.EvaluatorModels...)
	if cfg.GeneratorModel != nil {
		known = append(known, *cfg.GeneratorModel)
	}
	known = append(known, cfg.Targets...)
	out := make([]config.ModelConfig, 0, len(judges))
	for _, j := range judges {
		name := strings.TrimPrefix(j.ID, "judge:")
		if t, ok := cfg.Target(name); ok {
			t.ID = "judge-" + t.ID
			out = append(out, t)
			continue
		}
		var match *config.ModelConfig
		for i := range known {
			if known[i].Model == name || known[i].Provider()+"/"+known[i].Model == name {
				match = &known[i]
				break
			}
		}
		if match != nil {
			m := *match
			m.ID = ""
			out = append(out, m)
			continue
		}
		if j.Source == "" {
			return nil, fault.Inputf("--judge %q: not a target id or configured model; write it as source/model (e.g. openai/gpt-5-mini)", name)
		}
		m := config.ModelConfig{Source: j.Source, Model: j.Model, MaxRetries: 4}
		for _, k := range known {
			if k.Provider() == m.Provider() {
				m.APIKey, m.BaseURL, m.ExtraHeaders = k.APIKey, k.BaseURL, k.ExtraHeaders
				break
			}
		}
		out = append(out, m)
	}
	return out, nil
}
