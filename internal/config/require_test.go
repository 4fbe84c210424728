package config

import (
	"errors"
	"strings"
	"testing"
)

func TestRequire(t *testing.T) {
	full := func() *Config {
		return &Config{
			Path:            "/p/config.yaml",
			UserModel:       ModelConfig{Model: "u"},
			EvaluatorModels: []ModelConfig{{Model: "j"}},
			Targets:         []ModelConfig{{ID: "t", Model: "t"}},
		}
	}
	cases := []struct {
		name  string
		edit  func(*Config)
		roles []Role
		want  []string // one problem per entry: "field: fragment"
	}{
		{"complete", func(*Config) {}, []Role{RoleGenerator, RoleUser, RoleJudge, RoleTargets}, nil},
		{"no judge", func(c *Config) { c.EvaluatorModels = nil }, []Role{RoleJudge}, []string{"evaluator_model: required to evaluate"}},
		{"no judge, not needed", func(c *Config) { c.EvaluatorModels = nil }, []Role{RoleUser, RoleTargets}, nil},
		{"no targets", func(c *Config) { c.Targets = nil }, []Role{RoleTargets}, []string{"targets: no targets"}},
		{"no user", func(c *Config) { c.UserModel = ModelConfig{} }, []Role{RoleGenerator, RoleUser}, []string{"user_model: required"}},
		{"generator covers user", func(c *Config) { c.UserModel = ModelConfig{}; c.GeneratorModel = &ModelConfig{Model: "g"} }, []Role{RoleGenerator}, nil},
		{"all missing", func(c *Config) { *c = Config{Path: c.Path} }, []Role{RoleGenerator, RoleUser, RoleJudge, RoleTargets},
			[]string{"user_model: required", "evaluator_model: required", "targets: no targets"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := full()
			tc.edit(c)
			err := c.Require(tc.roles...)
			if len(tc.want) == 0 {
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				return
			}
			var ce *Error
			if !errors.As(err, &ce) {
				t.Fatalf("want *config.Error, got %T %v", err, err)
			}
			if len(ce.Problems) != len(tc.want) {
				t.Fatalf("%d problems, want %d:\n%v", len(ce.Problems), len(tc.want), err)
			}
			for i, w := range tc.want {
				if line := ce.Problems[i].format(ce.File); !strings.HasPrefix(line, "/p/config.yaml: ") || !strings.Contains(line, w) {
					t.Errorf("problem %d = %q, want the file and %q", i, line, w)
				}
			}
		})
	}
}
