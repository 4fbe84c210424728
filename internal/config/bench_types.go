package config

// Benchmark is a loaded benchmark.yaml.
type Benchmark struct {
	// Dir is the benchmark directory (holds benchmark.yaml, scenarios.json, runs/…);
	// Slug its base name; Path the benchmark.yaml path.
	Dir  string `yaml:"-"`
	Slug string `yaml:"-"`
	Path string `yaml:"-"`

	Name        string        `yaml:"name"`
	Description string        `yaml:"description"`
	Scenario    BenchScenario `yaml:"scenario"`
	Metrics     []Metric      `yaml:"metrics"`

	// Extra holds unknown top-level keys in file order (kept, unused).
	Extra []KV `yaml:"-"`
	// Warnings are non-fatal findings ("file:line:col: message"), e.g.
	// unknown keys.
	Warnings []string `yaml:"-"`
}

// BenchScenario is benchmark.yaml's scenario: block.
type BenchScenario struct {
	UserContext     string `yaml:"user_context"`
	ImplicitContext string `yaml:"implicit_context"`
	// TargetSystemPrompt (our addition) is the target's system prompt for every
	// scenario of this benchmark, so user_context can stay generator-only context.
	TargetSystemPrompt string `yaml:"target_system_prompt"`
}

// MetricType is positive (behaviour should be present) or negative (should be absent).
type MetricType string

const (
	Positive MetricType = "positive"
	Negative MetricType = "negative"
)

// Metric is one behaviour. Extra holds unknown keys (mattersBecause,
// contributor, source, …) in file order so they survive a rewrite.
type Metric struct {
	ID         string     `yaml:"id" json:"id"`
	Name       string     `yaml:"name" json:"name"`
	Type       MetricType `yaml:"type" json:"type"`
	Definition string     `yaml:"definition" json:"definition"`
	Examples   []string   `yaml:"examples" json:"examples"`
	Extra      []KV       `yaml:"-" json:"-"`
}

// KV is one preserved key/value (value as decoded YAML/JSON: string, number, bool, map, slice).
type KV struct {
	Key   string
	Value any
}

// MetricByID returns the metric with that id.
func (b *Benchmark) MetricByID(id string) (Metric, bool) {
	for _, m := range b.Metrics {
		if m.ID == id {
			return m, true
		}
	}
	return Metric{}, false
}
