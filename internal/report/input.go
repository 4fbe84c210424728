package report

import (
	"bytes"
	"encoding/json"
	"fmt"
	"time"

	"github.com/impactbench/impactbench/internal/artifacts"
	"github.com/impactbench/impactbench/internal/config"
	"github.com/impactbench/impactbench/internal/human"
	"github.com/impactbench/impactbench/internal/results"
)

// Input is everything a report is built from. Nil/empty parts render as
// "not available yet" sections; Build never requires a complete run.
type Input struct {
	Benchmark Benchmark
	// Results are the results.json entries (nil when not computed yet).
	Results []results.ModelResult
	// Scenarios are the scenarios.json rows (nil when not generated yet).
	Scenarios []Scenario
	// Runs holds one entry per target run directory, in display order.
	Runs []Run
	// Costs are cost.json entries of the benchmark root (Scope "") and of
	// each run directory (Scope = target id).
	Costs    []CostEntry
	Settings Settings
	// Notes are load problems worth showing (a file that failed to parse is
	// reported instead of aborting the whole report).
	Notes []string

	// scenarioFile is set when Load kept Scenarios without their bulk
	// (personas, goals' latent side, landmarks, system prompts): the
	// scenario chunks stream it again.
	scenarioFile string
	// scenarioEnd is the offset just past the last scenario row when Load
	// read the file: streaming it again reads no further.
	scenarioEnd int64
}

// Benchmark is what the report needs from benchmark.yaml.
type Benchmark struct {
	Name        string   `yaml:"name"`
	Description string   `yaml:"description"`
	Metrics     []Metric `yaml:"metrics"`
}

// LoadBenchmark reads benchmark.yaml through config's bounded, checked
// reading and returns the part of it the report shows (the viewer reads it
// here too: a plain YAML decode expands aliases without bound).
func LoadBenchmark(path string) (Benchmark, error) {
	b, err := config.LoadBenchmark(path)
	if err != nil {
		return Benchmark{}, err
	}
	return benchmarkOf(b), nil
}

// benchmarkOf is the part of a loaded benchmark.yaml the report shows.
// It is taken from config's bounded, checked reading rather than a second
// parse of the file, which could differ from it (or change in between).
func benchmarkOf(b *config.Benchmark) Benchmark {
	out := Benchmark{Name: b.Name, Description: b.Description}
	for _, m := range b.Metrics {
		out.Metrics = append(out.Metrics, Metric{ID: m.ID, Name: m.Name, Type: string(m.Type), Definition: m.Definition,
			Examples: m.Examples, MattersBecause: extraString(m.Extra, "mattersBecause"), Contributor: extraString(m.Extra, "contributor")})
	}
	return out
}

// extraString is the string value of an unknown metric key, "" when it is
// absent or not a string.
func extraString(kv []config.KV, key string) string {
	for _, p := range kv {
		if p.Key == key {
			s, _ := p.Value.(string)
			return s
		}
	}
	return ""
}

// Metric is one benchmark.yaml metric. MattersBecause and Contributor are
// upstream's optional keys (the website shows them).
type Metric struct {
	ID             string   `yaml:"id"`
	Name           string   `yaml:"name"`
	Type           string   `yaml:"type"`
	Definition     string   `yaml:"definition"`
	Examples       []string `yaml:"examples"`
	MattersBecause string   `yaml:"mattersBecause"`
	Contributor    string   `yaml:"contributor"`
}

// Scenario is one scenarios.json row. It is the report's own view type
// (not artifacts.Scenario) so decoding does not depend on the artifacts
// package's ordered-demographic codec, which is still being written.
type Scenario struct {
	ID                    string               `json:"id"`
	MetricID              string               `json:"metric_id"`
	Persona               string               `json:"persona"`
	UserPersona           string               `json:"user_persona"`
	UserGoal              string               `json:"user_goal"`
	LatentAdversarialGoal string               `json:"latent_adversarial_goal"`
	Landmarks             []artifacts.Landmark `json:"landmarks"`
	Demographic           Demographic          `json:"demographic"`
	TargetSystemPrompt    string               `json:"target_system_prompt"`
}

// AxisValue is one demographic axis and the scenario's value on it.
type AxisValue struct {
	Axis  string
	Value string
}

// Demographic keeps axes in file order: the order defines variant ids and
// the order the viewer lists them in.
type Demographic []AxisValue

// UnmarshalJSON decodes a JSON object preserving key order. Non-string
// values are kept as their JSON text so odd legacy data still displays.
func (d *Demographic) UnmarshalJSON(b []byte) error {
	if bytes.Equal(bytes.TrimSpace(b), []byte("null")) {
		*d = nil
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	if tok != json.Delim('{') {
		return fmt.Errorf("demographic: want object, got %v", tok)
	}
	var out Demographic
	for dec.More() {
		kt, err := dec.Token()
		if err != nil {
			return err
		}
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return err
		}
		var s string
		if json.Unmarshal(raw, &s) != nil {
			s = string(raw)
		}
		out = append(out, AxisValue{Axis: kt.(string), Value: s})
	}
	*d = out
	return nil
}

// Run is one target's run directory.
type Run struct {
	Target        string
	Conversations []artifacts.Conversation // nil: conversations.json absent
	Scores        []artifacts.Score        // nil: scores.json absent
	HasConvs      bool                     // conversations.json was present
	HasScores     bool                     // scores.json was present
	// Human and HumanScores are the conversations people played against
	// the target on the viewer's Play page (runs/<target>/human/), drafts
	// included, and their verdicts: shown in the transcript viewer, never
	// counted in the target's rates.
	Human       []human.Conversation
	HumanScores []human.Score

	// Set by Load, which keeps rows without their bulk (transcripts; score
	// justifications, null reasons and panel verdicts) so a 100,000-row run
	// fits in a few dozen MB: the transcript store reads the bulk back from
	// the files, row by row, as it writes each chunk.
	convSrc  *rowSource
	scoreSrc *rowSource
}

// rowSource locates each row of a JSON array file.
type rowSource struct {
	path  string
	spans []span
}

// span is one row's bytes in its file; n is the row's transcript length
// (conversations only: the index shows it without reading the transcript).
type span struct {
	off, end int64
	n        int32
}

// CostEntry is one cost.json phase entry. Scope is "" for the benchmark
// root (generation phases) and the target id for a run directory.
type CostEntry struct {
	Scope string
	Key   string // the cost.json key (usually equal to Cost.Phase)
	Cost  artifacts.PhaseCost
}

// Settings describe how the run was made. The CLI fills them from
// config.yaml; anything left empty is inferred from conversations' `run`
// records where possible.
type Settings struct {
	Generated          time.Time
	UserModel          string
	GeneratorModel     string
	JudgeModels        []string
	Targets            []TargetSetting
	Turns              int
	Samples            int
	ScenariosPerMetric int
	Seed               uint64
	Perfunctory        *bool
	Landmarks          *bool
	// Extra rows are shown verbatim after the known ones (label, value).
	Extra [][2]string
}

// TargetSetting is a target id and the provider model string behind it.
type TargetSetting struct {
	ID    string
	Model string
}
