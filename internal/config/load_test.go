package config

import (
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// upstreamEnv are the variables upstream's shipped config references.
func upstreamEnv() []string {
	return []string{
		"ANTHROPIC_API_KEY", "sk-ant-test",
		"OPENAI_API_KEY", "sk-oai-test",
		"DEEPINFRA_TOKEN", "di-test",
		"XAI_API_KEY", "xai-test",
		"PUBLICAI_API_KEY", "pub-test",
	}
}

func TestLoadUpstreamConfig(t *testing.T) {
	// Through the real process environment, as the CLI does.
	env := upstreamEnv()
	for i := 0; i < len(env); i += 2 {
		t.Setenv(env[i], env[i+1])
	}
	cfg, err := Load("testdata/upstream-config.yaml")
	if err != nil {
		t.Fatal(err)
	}

	if diff := cmp.Diff(RunConfig{
		Verbose:     true,
		Concurrency: Concurrency{GenScenarios: 5, GenScenariosExpand: 10, Simulate: 20, Evaluate: 20},
	}, cfg.Run); diff != "" {
		t.Errorf("run (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(Generation{ScenariosPerMetric: 3, Turns: 6, NumSamples: 1}, cfg.Generation); diff != "" {
		t.Errorf("generation (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(Demographics{{Name: "age", Values: []string{"Child or teenager (6-17)", "Adult (18+)"}}}, cfg.Demographics); diff != "" {
		t.Errorf("demographics (-want +got):\n%s", diff)
	}
	if !cfg.Perfunctory || !cfg.Landmarks {
		t.Errorf("perfunctory, landmarks = %v, %v; want true, true", cfg.Perfunctory, cfg.Landmarks)
	}
	wantUser := ModelConfig{Model: "claude-sonnet-4-6", Source: "anthropic", APIKey: "sk-ant-test", MaxRetries: 4}
	if diff := cmp.Diff(wantUser, cfg.UserModel); diff != "" {
		t.Errorf("user_model (-want +got):\n%s", diff)
	}
	wantJudges := []ModelConfig{{Model: "gpt-5.4-mini", Source: "openai", APIKey: "sk-oai-test", MaxRetries: 4}}
	if diff := cmp.Diff(wantJudges, cfg.EvaluatorModels); diff != "" {
		t.Errorf("evaluator_model (-want +got):\n%s", diff)
	}
	if cfg.GeneratorModel != nil || cfg.LandmarkModel != nil {
		t.Errorf("generator/landmark model = %v/%v, want nil", cfg.GeneratorModel, cfg.LandmarkModel)
	}
	if g := cfg.Generator(); g.Model != "claude-sonnet-4-6" {
		t.Errorf("Generator() = %v, want the user model", g)
	}

	if len(cfg.Targets) != 16 {
		t.Fatalf("%d targets, want 16", len(cfg.Targets))
	}
	type row struct{ id, model, source, key, baseURL string }
	want := []row{
		{"gpt-4o", "gpt-4o", "openai", "sk-oai-test", ""},
		{"gpt-5-chat", "gpt-5-chat-latest", "openai", "sk-oai-test", ""},
		{"gpt-5.1", "gpt-5.1", "openai", "sk-oai-test", ""},
		{"claude-haiku-4-5", "claude-haiku-4-5", "anthropic", "sk-ant-test", ""},
		{"claude-sonnet-4-6", "claude-sonnet-4-6", "anthropic", "sk-ant-test", ""},
		{"claude-opus-4-6", "claude-opus-4-6", "anthropic", "sk-ant-test", ""},
		{"llama-4-maverick", "meta-llama/Llama-4-Maverick-17B-128E-Instruct-FP8", "deepinfra", "di-test", ""},
		{"mistral-small-3", "mistralai/Mistral-Small-3.2-24B-Instruct-2506", "deepinfra", "di-test", "https://api.deepinfra.com/v1/openai"},
		{"gemma-4-31b", "google/gemma-4-31B-it", "deepinfra", "di-test", ""},
		{"gemini-2.5-pro", "google/gemini-2.5-pro", "deepinfra", "di-test", ""},
		{"qwen3-80b", "Qwen/Qwen3-Next-80B-A3B-Instruct", "deepinfra", "di-test", ""},
		{"deepseek-v3", "deepseek-ai/DeepSeek-V3.2", "deepinfra", "di-test", "https://api.deepinfra.com/v1/openai"},
		{"grok-4-fast", "grok-4-1-fast-non-reasoning", "openai", "xai-test", "https://api.x.ai/v1"},
		{"grok-4-reasoning", "grok-4-1-fast-reasoning", "openai", "xai-test", "https://api.x.ai/v1"},
		{"apertus-8b", "openai/swiss-ai/apertus-8b-instruct", "openai", "pub-test", "https://api.publicai.co/v1"},
		{"apertus-70b", "openai/swiss-ai/apertus-70b-instruct", "openai", "pub-test", "https://api.publicai.co/v1"},
	}
	for i, w := range want {
		tg := cfg.Targets[i]
		got := row{tg.ID, tg.Model, tg.Source, tg.APIKey, tg.BaseURL}
		if got != w {
			t.Errorf("targets[%d] = %+v, want %+v", i, got, w)
		}
	}
	for _, id := range []string{"apertus-8b", "apertus-70b"} {
		tg, _ := cfg.Target(id)
		if diff := cmp.Diff(map[string]string{"User-Agent": "Test"}, tg.ExtraHeaders); diff != "" {
			t.Errorf("%s extra_headers (-want +got):\n%s", id, diff)
		}
	}
	if len(cfg.Warnings) != 0 || len(cfg.MissingEnv) != 0 {
		t.Errorf("warnings %q, missing %v; want none", cfg.Warnings, cfg.MissingEnv)
	}
	abs, _ := filepath.Abs("testdata")
	if cfg.Dir != abs || cfg.Path != filepath.Join(abs, "upstream-config.yaml") {
		t.Errorf("Dir, Path = %q, %q", cfg.Dir, cfg.Path)
	}
}

func TestLoadUpstreamConfigMissingEnv(t *testing.T) {
	env := upstreamEnv()
	// Everything but the xAI key.
	_, err := LoadWithOptions("testdata/upstream-config.yaml", LoadOptions{LookupEnv: envMap(env[:6]...)})
	want := []string{
		"testdata/upstream-config.yaml:96:13: targets[12].apikey: environment variable XAI_API_KEY is not set (set it in your shell or in .env)",
		"testdata/upstream-config.yaml:102:13: targets[13].apikey: environment variable XAI_API_KEY is not set (set it in your shell or in .env)",
		"testdata/upstream-config.yaml:108:13: targets[14].apikey: environment variable PUBLICAI_API_KEY is not set (set it in your shell or in .env)",
		"testdata/upstream-config.yaml:116:13: targets[15].apikey: environment variable PUBLICAI_API_KEY is not set (set it in your shell or in .env)",
	}
	if diff := cmp.Diff(want, problemLines(t, err)); diff != "" {
		t.Errorf("errors (-want +got):\n%s", diff)
	}
}

func TestAllowMissingEnv(t *testing.T) {
	env := upstreamEnv()
	cfg, err := LoadWithOptions("testdata/upstream-config.yaml", LoadOptions{
		AllowMissingEnv: true,
		LookupEnv:       envMap(append(env[:6:6], "XAI_API_KEY", "")...), // set but empty counts as missing
	})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, m := range cfg.MissingEnv {
		got = append(got, m.Var+" "+m.Field+" "+m.Pos.String())
	}
	want := []string{
		"XAI_API_KEY targets[12].apikey testdata/upstream-config.yaml:96:13",
		"XAI_API_KEY targets[13].apikey testdata/upstream-config.yaml:102:13",
		"PUBLICAI_API_KEY targets[14].apikey testdata/upstream-config.yaml:108:13",
		"PUBLICAI_API_KEY targets[15].apikey testdata/upstream-config.yaml:116:13",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("MissingEnv (-want +got):\n%s", diff)
	}
	if tg, _ := cfg.Target("grok-4-fast"); tg.APIKey != "" {
		t.Errorf("missing variable expanded to %q, want empty", tg.APIKey)
	}

	grok, ok := cfg.TargetField("grok-4-fast")
	if !ok || grok != "targets[12]" {
		t.Fatalf("TargetField = %q, %v", grok, ok)
	}
	tests := []struct {
		name   string
		fields []string
		want   []string // error lines; nil = no error
	}{
		{"models in use are fine", []string{"user_model", "evaluator_model", "targets[0]", "targets[1]"}, nil},
		{"prefix is matched on path boundaries", []string{"targets[1]"}, nil}, // not targets[12]
		{"the unusable target", []string{grok}, []string{
			"testdata/upstream-config.yaml:96:13: targets[12].apikey: environment variable XAI_API_KEY is not set (set it in your shell or in .env)",
		}},
		{"exact field", []string{"targets[15].apikey"}, []string{
			"testdata/upstream-config.yaml:116:13: targets[15].apikey: environment variable PUBLICAI_API_KEY is not set (set it in your shell or in .env)",
		}},
		{"all", nil, []string{
			"testdata/upstream-config.yaml:96:13: targets[12].apikey: environment variable XAI_API_KEY is not set (set it in your shell or in .env)",
			"testdata/upstream-config.yaml:102:13: targets[13].apikey: environment variable XAI_API_KEY is not set (set it in your shell or in .env)",
			"testdata/upstream-config.yaml:108:13: targets[14].apikey: environment variable PUBLICAI_API_KEY is not set (set it in your shell or in .env)",
			"testdata/upstream-config.yaml:116:13: targets[15].apikey: environment variable PUBLICAI_API_KEY is not set (set it in your shell or in .env)",
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := cfg.CheckEnv(tt.fields...)
			if tt.want == nil {
				if err != nil {
					t.Fatalf("CheckEnv = %v, want nil", err)
				}
				return
			}
			if diff := cmp.Diff(tt.want, problemLines(t, err)); diff != "" {
				t.Errorf("CheckEnv (-want +got):\n%s", diff)
			}
		})
	}
}

func TestLoadBadConfigs(t *testing.T) {
	tests := []struct {
		file string
		want []string // every line of the error, after "testdata/bad/<file>:"
	}{
		{"typo.yaml", []string{
			"3:5: run.concurrency.simulat: unknown key; did you mean simulate?",
			"6:3: user_model.apikye: unknown key; did you mean apikey?",
			"12:5: targets[1].bse_url: unknown key; did you mean base_url?",
			"13:1: turns: unknown top-level key; turns belongs under generation",
			"14:1: descripton: unknown key (valid keys: run, user_model, generator_model, evaluator_model, landmark_model, targets, generation, demographics, perfunctory, landmarks, pinpoint, seed, max_cost, pricing, prompts, judge, validity, store, rate_backend)",
		}},
		{"duplicate_ids.yaml", []string{
			`6:9: targets[2].id: duplicate target id "gpt-4o" (first at line 2); ids name run directories and must be unique`,
		}},
		{"unsafe_ids.yaml", []string{
			`2:9: targets[0].id: "a/b" is not safe as a directory name (it contains a path separator); use letters, digits, '-', '_' and '.'`,
			`4:9: targets[1].id: ".." is not safe as a directory name (it is . or ..); use letters, digits, '-', '_' and '.'`,
			`6:9: targets[2].id: "x\\y" is not safe as a directory name (it contains a path separator); use letters, digits, '-', '_' and '.'`,
			`8:9: targets[3].id: required: a short name for this target; it names the run directory benchmarks/<bench>/runs/<id>/`,
			`10:9: targets[4].id: "bell\a" is not safe as a directory name (it contains control characters); use letters, digits, '-', '_' and '.'`,
			`12:5: targets[5].id: required: a short name for this target; it names the run directory benchmarks/<bench>/runs/<id>/`,
			`13:9: targets[6].id: "` + strings.Repeat("x", 101) + `" is not safe as a directory name (it is longer than 100 characters); use letters, digits, '-', '_' and '.'`,
		}},
		{"zero_sizes.yaml", []string{
			"3:20: run.concurrency.gen_scenarios: must be at least 1, got 0 (it is a worker-pool size; auto lets the provider limits decide)",
			"4:15: run.concurrency.simulate: must be at least 1, got -3 (it is a worker-pool size; auto lets the provider limits decide)",
			"6:25: generation.scenarios_per_metric: must be at least 1, got 0",
			"7:10: generation.turns: must be at least 1, got 0",
			"8:16: generation.num_samples: must be at least 1, got 0",
		}},
		{"concurrency.yaml", []string{
			`3:15: run.concurrency.simulate: expected auto or a worker-pool size (an integer), got a string "fast"`,
			"4:15: run.concurrency.evaluate: expected auto or a worker-pool size (an integer), got a number (2.5)",
			"5:27: run.concurrency.gen_scenarios_expand: must be at most 10000, got 20000 (it is a worker-pool size; auto lets the provider limits decide)",
		}},
		{"adaptive.yaml", []string{
			`3:12: run.adaptive.start: expected an integer, got a string "two"`,
			"4:5: run.adaptive.maxx: unknown key; did you mean max?",
			"5:11: run.adaptive.seed: must be a non-negative integer, got -4",
			`6:14: run.adaptive.enabled: expected true or false, got a string "sometimes"`,
		}},
		{"adaptive_scalar.yaml", []string{
			`2:13: run.adaptive: expected true, false, or a mapping of enabled, start, max and seed, got a string "yes please"`,
		}},
		{"adaptive_order.yaml", []string{
			"2:13: run.adaptive: start 4 is above max 2: the first round cannot give a metric more base scenarios than the cap",
		}},
		{"concurrency_scalar.yaml", []string{
			"2:16: run.concurrency: expected auto or a mapping of phase sizes, got an integer (20)",
		}},
		{"demographics.yaml", []string{
			"2:3: demographics.age: axis has no values, which would produce zero scenarios; list at least one value or remove the axis",
			`3:24: demographics.gender[2]: duplicate value "woman" (first at line 3)`,
			`4:11: demographics.region: expected a list of values, e.g. age: [child, adult], got a string "europe"`,
			"5:3: demographics.income: axis has no values, which would produce zero scenarios; list at least one value or remove the axis",
		}},
		{"types.yaml", []string{
			`2:10: run.force: expected true or false, got a string "maybe"`,
			`4:10: generation.turns: expected an integer, got a string "six"`,
			"5:25: generation.scenarios_per_metric: expected an integer, got a number (2.5)",
			`6:25: generation.independent_openings: expected true or false, got a string "yes"`,
			"8:3: targets: expected a list of models, each starting with - id:, got a mapping",
			"9:7: seed: must be a non-negative integer, got -1",
		}},
		{"nonfinite.yaml", []string{
			"1:11: max_cost: expected a number, got NaN (.nan)",
			"3:10: generation.turns: expected an integer, got infinity (.inf)",
			"4:25: generation.scenarios_per_metric: expected an integer, got infinity (-.Inf)",
		}},
		{"sources.yaml", []string{
			`3:11: user_model.source: unknown source "antropic"; did you mean anthropic?`,
			`6:11: evaluator_model.source: unknown source "bedrock" (known: openai, anthropic, gemini, google, deepinfra, xai, openrouter, together, groq, ollama, vllm, offline, openai_compatible; any other OpenAI-style endpoint: source: openai_compatible with base_url)`,
			"10:13: targets[0].base_url: required with source: openai_compatible (the endpoint, e.g. https://host/v1)",
		}},
		{"ranges.yaml", []string{
			"3:16: user_model.temperature: must be between 0 and 2, got 2.5",
			"4:15: user_model.max_tokens: must be at least 0, got -1 (0 = the default, 2048)",
			"5:8: user_model.rpm: must not be negative, got -5 (use 0 or remove the key for no limit)",
			`6:12: user_model.timeout: invalid duration "soon": use a Go duration such as 90s, 1m30s or 500ms, or a number of seconds`,
			"7:20: user_model.pricing.input: must not be negative, got -1",
			"10:18: evaluator_model[0].temperature: must be between 0 and 2, got -0.1",
			"11:5: evaluator_model[1].model: required (the provider's model name, e.g. gpt-4o)",
			"12:11: max_cost: must not be negative, got -1",
			"16:21: targets[0].offline.care: must be between 0 and 1, got 1.5",
			"16:35: targets[0].offline.latency: must not be negative, got -1s",
		}},
		{"syntax.yaml", []string{
			"3:1: YAML syntax error: ',' or ']' must be specified",
		}},
		{"pinpoint_both.yaml", []string{
			"2:1: pinpoint: pinpoint is the old name of landmarks (line 1); keep only landmarks",
		}},
		{"evaluator_empty.yaml", []string{
			"1:18: evaluator_model: empty list; give one judge model (a mapping) or a list of them",
			`2:10: targets: expected a list of models, each starting with - id:, got a string "nope"`,
		}},
		{"validity.yaml", []string{
			"2:11: validity.reasks: must be between 0 and 5, got 9 (each one is paid for in model calls)",
			"3:10: validity.redos: must be between 0 and 5, got -1 (each one is paid for in model calls)",
			"5:3: validity.landmark_check: true asks for the audit that validity.audit: false (line 4) turns off; keep one of them",
			"6:16: validity.audit_share: must be between 0 and 1, got 1.5",
		}},
		{"not_mapping.yaml", []string{
			"1:1: config.yaml must be a mapping of keys (run:, user_model:, targets:, …), got a list",
		}},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			t.Parallel()
			path := filepath.Join("testdata", "bad", tt.file)
			cfg, err := LoadWithOptions(path, LoadOptions{LookupEnv: noEnv})
			if cfg != nil {
				t.Errorf("got a config along with the error")
			}
			want := make([]string, len(tt.want))
			for i, w := range tt.want {
				want[i] = path + ":" + w
			}
			if diff := cmp.Diff(want, problemLines(t, err)); diff != "" {
				t.Errorf("errors (-want +got):\n%s", diff)
			}
		})
	}
}

func TestLoadDefaults(t *testing.T) {
	want := &Config{
		// Concurrency unset is auto (zero) in every phase.
		Generation: Generation{ScenariosPerMetric: 3, Turns: 6, NumSamples: 1},
		Landmarks:  true,
		Validity:   ValidityConfig{Audit: true, TurnChecks: true, Reasks: DefaultReasks, Redos: DefaultRedos},
	}
	for _, file := range []string{"empty.yaml", "comments-only.yaml"} {
		t.Run(file, func(t *testing.T) {
			t.Parallel()
			cfg, err := LoadWithOptions(filepath.Join("testdata", "good", file), LoadOptions{LookupEnv: noEnv})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(want, cfg, cmpIgnorePaths()); diff != "" {
				t.Errorf("config (-want +got):\n%s", diff)
			}
		})
	}
	t.Run("nulls mean absent", func(t *testing.T) {
		t.Parallel()
		cfg, err := LoadWithOptions("testdata/good/nulls.yaml", LoadOptions{LookupEnv: noEnv})
		if err != nil {
			t.Fatal(err)
		}
		want := &Config{
			// gen_scenarios_expand follows an explicit gen_scenarios; the
			// phases not named stay auto.
			Run:        RunConfig{Concurrency: Concurrency{GenScenarios: 8, GenScenariosExpand: 16}},
			Generation: Generation{ScenariosPerMetric: 3, Turns: 6, NumSamples: 1},
			Validity:   ValidityConfig{Audit: true, TurnChecks: true, Reasks: DefaultReasks, Redos: DefaultRedos},
		}
		if diff := cmp.Diff(want, cfg, cmpIgnorePaths()); diff != "" {
			t.Errorf("config (-want +got):\n%s", diff)
		}
	})
}

// validity.landmark_check: false was the starter config's line: it no
// longer turns the check off, and a warning says how to.
func TestLoadLegacyLandmarkCheckFalse(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(path, []byte("validity:\n  landmark_check: false\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := LoadWithOptions(path, LoadOptions{LookupEnv: noEnv})
	if err != nil {
		t.Fatal(err)
	}
	if !cfg.Validity.Audit || len(cfg.Warnings) != 1 || !strings.Contains(cfg.Warnings[0], "set validity.audit: false") {
		t.Errorf("audit %v, warnings %q", cfg.Validity.Audit, cfg.Warnings)
	}
	if err := os.WriteFile(path, []byte("validity:\n  audit: false\n  landmark_check: false\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if cfg, err = LoadWithOptions(path, LoadOptions{LookupEnv: noEnv}); err != nil || cfg.Validity.Audit || len(cfg.Warnings) != 0 {
		t.Errorf("audit: false with landmark_check: false: %v %+v", err, cfg)
	}
}

func cmpIgnorePaths() cmp.Option {
	return cmp.FilterPath(func(p cmp.Path) bool {
		s := p.String()
		return s == "Path" || s == "Dir"
	}, cmp.Ignore())
}

// run.concurrency: auto for the block or per phase (0), a number is a cap,
// gen_scenarios_expand follows a numeric gen_scenarios unless given.
func TestLoadConcurrencyAuto(t *testing.T) {
	for _, tc := range []struct {
		name, yaml string
		want       Concurrency
	}{
		{"unset", "seed: 1\n", Concurrency{}},
		{"block auto", "run:\n  concurrency: auto\n", Concurrency{}},
		{"block auto, any case", "run: {concurrency: AUTO}\n", Concurrency{}},
		{"upstream numbers stay caps", "run:\n  concurrency: {gen_scenarios: 5, simulate: 10, evaluate: 20}\n",
			Concurrency{GenScenarios: 5, GenScenariosExpand: 10, Simulate: 10, Evaluate: 20}},
		{"one phase auto", "run:\n  concurrency: {gen_scenarios: 4, simulate: auto, evaluate: 30}\n",
			Concurrency{GenScenarios: 4, GenScenariosExpand: 8, Evaluate: 30}},
		{"expand auto beside a numeric gen_scenarios", "run:\n  concurrency: {gen_scenarios: 4, gen_scenarios_expand: auto}\n",
			Concurrency{GenScenarios: 4}},
		{"only simulate capped", "run:\n  concurrency:\n    simulate: 64\n", Concurrency{Simulate: 64}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			path := filepath.Join(t.TempDir(), "config.yaml")
			if err := os.WriteFile(path, []byte(tc.yaml), 0o644); err != nil {
				t.Fatal(err)
			}
			cfg, err := LoadWithOptions(path, LoadOptions{LookupEnv: noEnv})
			if err != nil {
				t.Fatal(err)
			}
			if cfg.Run.Concurrency != tc.want {
				t.Errorf("concurrency %+v, want %+v", cfg.Run.Concurrency, tc.want)
			}
		})
	}
}

// TestLoadAdaptive: run.adaptive is a boolean or a mapping, which turns
// the design on unless enabled: false.
func TestLoadAdaptive(t *testing.T) {
	for _, c := range []struct {
		yaml string
		want Adaptive
	}{
		{"run:\n  adaptive: true\n", Adaptive{Enabled: true}},
		{"run:\n  adaptive: false\n", Adaptive{}},
		{"run:\n  adaptive: {max: 3}\n", Adaptive{Enabled: true, Max: 3}},
		{"run:\n  adaptive: {enabled: false, start: 2}\n", Adaptive{Start: 2}},
		{"run:\n  adaptive:\n", Adaptive{}},
	} {
		path := filepath.Join(t.TempDir(), "config.yaml")
		if err := os.WriteFile(path, []byte(c.yaml+minimalModels), 0o644); err != nil {
			t.Fatal(err)
		}
		cfg, err := LoadWithOptions(path, LoadOptions{LookupEnv: noEnv})
		if err != nil {
			t.Fatalf("%q: %v", c.yaml, err)
		}
		if cfg.Run.Adaptive != c.want {
			t.Errorf("%q: run.adaptive = %+v, want %+v", c.yaml, cfg.Run.Adaptive, c.want)
		}
	}
}

const minimalModels = "user_model: {model: u, source: offline}\nevaluator_model: {model: j, source: offline}\ntargets:\n  - {id: t, model: t, source: offline}\n"

func TestLoadEveryKey(t *testing.T) {
	t.Parallel()
	cfg, err := LoadWithOptions("testdata/good/full.yaml", LoadOptions{LookupEnv: envMap(
		"IB_TEST_OPENAI", "oai-key",
		"IB_TEST_ANTHROPIC", "ant-key",
		"IB_TEST_REGION", "Europe",
		"IB_TEST_MODEL", "llama",
		"IB_TEST_SUFFIX", "v2",
		"IB_TEST_HOST", "gpu-box",
		"IB_TEST_PORT", "8000",
		"IB_TEST_PROMPTS", "/srv/ib",
		"NOT_EXPANDED", "must-not-appear",
	)})
	if err != nil {
		t.Fatal(err)
	}
	f := func(v float64) *float64 { return &v }
	want := &Config{
		Run: RunConfig{Force: true, Verbose: true, Adaptive: Adaptive{Enabled: true, Start: 2, Max: 5, Seed: 7}, Concurrency: Concurrency{GenScenarios: 3, GenScenariosExpand: 6, Simulate: 7, Evaluate: 9}},
		UserModel: ModelConfig{Model: "claude-sonnet-4-6", Source: "anthropic", APIKey: "ant-key",
			Timeout: 90 * time.Second, Temperature: f(0.7), MaxRetries: 4},
		GeneratorModel: &ModelConfig{Model: "gen-model", Source: "google", MaxRetries: 4},
		EvaluatorModels: []ModelConfig{
			{Model: "gpt-5.4-mini", Source: "openai", APIKey: "oai-key", MaxTokens: 1024, MaxRetries: 4},
			{Model: "claude-haiku-4-5", Source: "anthropic", APIKey: "ant-key", Timeout: 2500 * time.Millisecond, Batch: true, MaxRetries: 4},
		},
		LandmarkModel: &ModelConfig{Model: "lm", Source: "groq", MaxRetries: 4},
		Targets: []ModelConfig{
			{ID: "offline-a", Model: "offline-a", Source: "offline", MaxRetries: 4,
				Offline: &OfflineProfile{Care: f(0.8), Pressure: f(0.1), Latency: 50 * time.Millisecond}},
			{ID: "custom", Model: "$NOT_EXPANDED/llama-v2", Source: "openai_compatible",
				BaseURL:        "http://gpu-box:8000/v1",
				ExtraHeaders:   map[string]string{"User-Agent": "impactbench/v2", "Authorization": "Bearer ant-key"},
				MaxConcurrency: 4, RPM: 60, TPM: 100000, ITPM: 80000, OTPM: 20000, RatePool: "gpu-box",
				Pricing: &Price{Input: 1.5, Output: 3, CachedRead: 0.15, CacheWrite: 1.875}},
		},
		Generation: Generation{ScenariosPerMetric: 4, Turns: 8, NumSamples: 3, IndependentOpenings: true},
		Demographics: Demographics{
			{Name: "region", Values: []string{"Europe", "Asia"}},
			{Name: "age", Values: []string{"child", "adult"}},
			{Name: "gender", Values: []string{"woman", "man", "non-binary"}},
		},
		Perfunctory: true,
		Landmarks:   false, // from the deprecated pinpoint key
		Seed:        42,
		MaxCost:     12.5,
		Pricing:     map[string]Price{"gen-model": {Input: 0.5, Output: 1}},
		Prompts:     "/srv/ib/prompts",
		Judge:       JudgeConfig{ShowExamples: true},
		// landmark_check: true asks for the audit, which is on anyway.
		Validity: ValidityConfig{Audit: true, TurnChecks: false, Reasks: 3, Redos: 0, ValidOnly: true},
		Warnings: []string{"testdata/good/full.yaml:53:1: pinpoint is deprecated; rename it to landmarks"},
	}
	if diff := cmp.Diff(want, cfg, cmpIgnorePaths()); diff != "" {
		t.Errorf("config (-want +got):\n%s", diff)
	}
	if got := cfg.Demographics.Size(); got != 12 {
		t.Errorf("Demographics.Size() = %d, want 12", got)
	}
}

func TestLoadDotEnv(t *testing.T) {
	dir := t.TempDir()
	copyFile(t, "testdata/dotenv/config.yaml", dir, "config.yaml")
	copyFile(t, "testdata/dotenv/env.txt", dir, ".env")

	// The shell wins over .env; IB_DOTENV_KEY comes from .env only. The
	// Setenv+Unsetenv pair makes the test framework restore "unset" after
	// Load exports it.
	t.Setenv("IB_DOTENV_MODEL", "from-shell")
	t.Setenv("IB_DOTENV_KEY", "")
	if err := os.Unsetenv("IB_DOTENV_KEY"); err != nil {
		t.Fatal(err)
	}
	cfg, err := Load(dir) // a directory means its config.yaml
	if err != nil {
		t.Fatal(err)
	}
	if cfg.UserModel.Model != "from-shell" {
		t.Errorf("model = %q, want the shell's value (no override)", cfg.UserModel.Model)
	}
	if cfg.UserModel.APIKey != "dotenv-secret-value" {
		t.Errorf("apikey = %q, want the .env value", cfg.UserModel.APIKey)
	}
	if got := os.Getenv("IB_DOTENV_KEY"); got != "dotenv-secret-value" {
		t.Errorf("IB_DOTENV_KEY in process env = %q; .env values must be exported for SDK fallbacks", got)
	}
	if got := os.Getenv("IB_DOTENV_MODEL"); got != "from-shell" {
		t.Errorf("IB_DOTENV_MODEL in process env = %q, overridden by .env", got)
	}
}

func TestLoadDotEnvWithLookupDoesNotExport(t *testing.T) {
	dir := t.TempDir()
	copyFile(t, "testdata/dotenv/config.yaml", dir, "config.yaml")
	copyFile(t, "testdata/dotenv/env.txt", dir, ".env")
	t.Setenv("IB_DOTENV_MODEL", "")
	if err := os.Unsetenv("IB_DOTENV_MODEL"); err != nil {
		t.Fatal(err)
	}
	cfg, err := LoadWithOptions(dir, LoadOptions{LookupEnv: noEnv})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.UserModel.Model != "from-dotenv" {
		t.Errorf("model = %q, want from-dotenv", cfg.UserModel.Model)
	}
	if _, set := os.LookupEnv("IB_DOTENV_MODEL"); set {
		t.Errorf("IB_DOTENV_MODEL was exported although LookupEnv was given")
	}
}

func TestLoadMalformedDotEnv(t *testing.T) {
	dir := t.TempDir()
	copyFile(t, "testdata/dotenv/config.yaml", dir, "config.yaml")
	envPath := copyFile(t, "testdata/dotenv/env-bad.txt", dir, ".env")
	_, err := LoadWithOptions(dir, LoadOptions{LookupEnv: noEnv})
	want := []string{envPath + ":4: malformed line: expected KEY=value (quote values that contain spaces, # or quotes; close every quote)"}
	if diff := cmp.Diff(want, problemLines(t, err)); diff != "" {
		t.Errorf("error (-want +got):\n%s", diff)
	}
	if strings.Contains(err.Error(), "sk-live") {
		t.Errorf("error leaks .env content: %v", err)
	}
}

func TestDotEnvErrorLine(t *testing.T) {
	tests := []struct {
		name, src string
		want      int
	}{
		{"bad key", "A=1\nB-C=2\n", 2},
		{"after comments and blanks", "# c\n\nA=1\n\n# d\nnot valid\n", 6},
		{"unterminated quote starts the statement", "A=1\nB=\"open\nC=3\n", 2},
		{"multi-line quote before the bad line is fine", "A=\"x\ny\"\nB C\n", 3},
		{"CRLF line ends", "A=1\r\n\r\nB C\r\n", 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := parseDotEnv([]byte(tt.src))
			var de *dotEnvError
			if !errors.As(err, &de) {
				t.Fatalf("err = %v, want a *dotEnvError", err)
			}
			if de.line != tt.want {
				t.Errorf("line = %d, want %d", de.line, tt.want)
			}
		})
	}
}

func TestLoadMissingFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "config.yaml")
	_, err := Load(path)
	if !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("error %v does not wrap fs.ErrNotExist", err)
	}
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("error %T, want *Error", err)
	}
	if !strings.Contains(err.Error(), "impactbench init") || !strings.HasPrefix(err.Error(), path+": ") {
		t.Errorf("error = %q; want the path and a hint to run impactbench init", err)
	}
}

func TestExpandEnv(t *testing.T) {
	tests := []struct {
		in, want string
		missing  []string
	}{
		{"plain", "plain", nil},
		{"${A}", "a", nil},
		{"x-${A}-${B}-${A}", "x-a-b-a", nil},
		{"$A and $B stay", "$A and $B stay", nil},
		{"${A}${B}", "ab", nil},
		{"${NOPE}-${A}-${ALSO_NOPE}", "-a-", []string{"NOPE", "ALSO_NOPE"}},
		{"${EMPTY}", "", []string{"EMPTY"}},
		{"${bad-name} ${}", "${bad-name} ${}", nil},
		{"${A", "${A", nil},
		{"${NESTED}", "${A}", nil}, // values are not expanded again
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			d := &cfgDecoder{
				tree:          &tree{ps: &problems{file: "c.yaml"}, bad: map[string]bool{}},
				ps:            &problems{file: "c.yaml"},
				lookup:        envMap("A", "a", "B", "b", "EMPTY", "", "NESTED", "${A}"),
				allowMissing:  true,
				missingFields: map[string]bool{},
			}
			if got := d.expand(tt.in, nil, "f"); got != tt.want {
				t.Errorf("expand = %q, want %q", got, tt.want)
			}
			var missing []string
			for _, m := range d.missing {
				missing = append(missing, m.Var)
			}
			if diff := cmp.Diff(tt.missing, missing); diff != "" {
				t.Errorf("missing (-want +got):\n%s", diff)
			}
		})
	}
}

// The audit's random share: the key when set, else everything for the free
// built-in model and DefaultAuditShare for any other.
func TestEffectiveAuditShare(t *testing.T) {
	tests := []struct {
		name   string
		yaml   string
		source string
		want   float64
	}{
		{"default, priced model", "", "openai", DefaultAuditShare},
		{"default, offline model", "", "offline", 1},
		{"set, offline model", "validity:\n  audit_share: 0.25\n", "offline", 0.25},
		{"audit everything", "validity:\n  audit_share: 1\n", "anthropic", 1},
		{"flagged only", "validity:\n  audit_share: 0\n", "openai", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "config.yaml")
			if err := os.WriteFile(path, []byte(tt.yaml), 0o644); err != nil {
				t.Fatal(err)
			}
			cfg, err := LoadWithOptions(path, LoadOptions{LookupEnv: noEnv})
			if err != nil {
				t.Fatal(err)
			}
			if got := cfg.Validity.EffectiveAuditShare(ModelConfig{Source: tt.source}); got != tt.want {
				t.Errorf("share %v, want %v", got, tt.want)
			}
		})
	}
}

// The head of each target reply the audit reads: the key when set (0 reads
// whole replies), else whole replies for the free built-in model and
// DefaultAuditReplyChars for any other; out of range is an error naming
// the field.
func TestEffectiveAuditReplyChars(t *testing.T) {
	tests := []struct {
		name, yaml, source string
		want               int
		err                string
	}{
		{"default, priced model", "", "openai", DefaultAuditReplyChars, ""},
		{"default, offline model", "", "offline", 0, ""},
		{"set, offline model", "validity:\n  audit_reply_chars: 300\n", "offline", 300, ""},
		{"whole replies", "validity:\n  audit_reply_chars: 0\n", "anthropic", 0, ""},
		{"negative", "validity:\n  audit_reply_chars: -1\n", "openai", 0, "validity.audit_reply_chars: must be between 0 and"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "config.yaml")
			if err := os.WriteFile(path, []byte(tt.yaml), 0o644); err != nil {
				t.Fatal(err)
			}
			cfg, err := LoadWithOptions(path, LoadOptions{LookupEnv: noEnv})
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("error %v, want %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := cfg.Validity.EffectiveAuditReplyChars(ModelConfig{Source: tt.source}); got != tt.want {
				t.Errorf("head %v, want %v", got, tt.want)
			}
		})
	}
}

// The README states the audit's default random share; it must be the one
// the code uses.
func TestReadmeStatesTheDefaultAuditShare(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("a seeded %d %% of the others", int(math.Round(DefaultAuditShare*100)))
	if !strings.Contains(strings.Join(strings.Fields(string(b)), " "), want) {
		t.Errorf("README.md does not say %q", want)
	}
}
