// Package prompts holds the prompt templates of every model role (Go
// text/template files embedded in the binary) and lets a project replace any
// of them with a file of the same name in its prompts directory.
//
// Each template has a fixed data struct (see data.go). Load checks every
// effective template by executing it against that struct — once zero-valued
// and once fully populated — so a typo in an override fails at startup with
// the file and line, instead of after the run has spent money.
package prompts

import (
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"text/template"

	"github.com/impactbench/impactbench/internal/artifacts"
	"github.com/impactbench/impactbench/internal/fsx"
)

//go:embed templates/*.tmpl
var embedded embed.FS

// Template names (file names without ".tmpl").
const (
	GenMetricsSystem  = "gen_metrics_system"
	GenMetricsUser    = "gen_metrics_user"
	GenScenarios      = "gen_scenarios"
	ExpandDemographic = "expand_demographic"
	UserSystem        = "user_system"
	UserTurnFirst     = "user_turn_first"
	UserTurnNext      = "user_turn_next"
	// UserTurnAgain follows the turn prompt when the simulated user's reply
	// failed a turn check: it is asked again, told what was wrong.
	UserTurnAgain = "user_turn_again"
	JudgeSystem   = "judge_system"
	JudgeUser     = "judge_user"
	// JudgeEvidenceAgain follows a verdict whose quotes were not found in
	// the assistant's messages: the judge is asked once more.
	JudgeEvidenceAgain = "judge_evidence_again"
	LandmarkCheck      = "landmark_check"
)

const ext = ".tmpl"

// spec ties a template to its data type and to the two values it is checked with.
type spec struct {
	zero   any
	sample any
}

var landmarksSample = []artifacts.Landmark{{Turn: 1, Instruction: "Describe the problem."}, {Turn: 3, Instruction: "Push back."}}

var transcriptSample = EncodeTranscript([]artifacts.Turn{{Role: "user", Content: "hi"}, {Role: "assistant", Content: "hello"}})

var metricSample = MetricData{ID: "m01", Name: "Avoid X", Type: "negative", Negative: true, Definition: "The assistant does X.", Examples: []string{"x"}}

var specs = map[string]spec{
	GenMetricsSystem: {GenMetricsData{}, GenMetricsData{BenchmarkName: "b", Description: "d", UserContext: "u", ImplicitContext: "i", Count: 10}},
	GenMetricsUser:   {GenMetricsData{}, GenMetricsData{BenchmarkName: "b", Description: "d", UserContext: "u", ImplicitContext: "i", Count: 10}},
	GenScenarios: {GenScenariosData{}, GenScenariosData{BenchmarkName: "b", BenchmarkDescription: "d", UserContext: "u",
		ImplicitContext: "i", Metric: metricSample, N: 3, Turns: 6, MaxLandmarks: 5, Existing: []string{"g"}}},
	ExpandDemographic: {ExpandData{}, ExpandData{Persona: "p", UserGoal: "g", LatentGoal: "l", Landmarks: landmarksSample,
		Demographic: []Attr{{Axis: "age", Value: "Adult"}}, DemographicText: "age: Adult", Turns: 6, MaxLandmarks: 5}},
	UserSystem: {UserSystemData{}, UserSystemData{Persona: "p", UserGoal: "g", LatentGoal: "l",
		Metric: UserMetricData{Name: "n", Checks: "c.", Negative: true}, Turns: 6, Landmarks: true, Plan: landmarksSample, Perfunctory: true}},
	UserTurnFirst: {UserTurnData{}, UserTurnData{Turn: 1, Turns: 6, Landmarks: true, Instruction: "i"}},
	UserTurnNext:  {UserTurnData{}, UserTurnData{Turn: 2, Turns: 6, Landmarks: true, ReplyJSON: EncodeMessage(artifacts.Turn{Role: "assistant", Content: "r"}), Instruction: "i"}},
	UserTurnAgain: {UserAgainData{}, UserAgainData{Turn: 2, Problem: "the reply has no Message: line",
		ReplyJSON: EncodeMessage(artifacts.Turn{Role: "user", Content: `{"metrics": []}`})}},
	JudgeSystem:        {JudgeData{}, JudgeData{Definition: "d", Examples: []string{"e"}, TranscriptJSON: transcriptSample}},
	JudgeUser:          {JudgeData{}, JudgeData{Definition: "d", Examples: []string{"e"}, TranscriptJSON: transcriptSample}},
	JudgeEvidenceAgain: {JudgeEvidenceData{}, JudgeEvidenceData{Missing: []string{`"q"`}, Short: []string{`"s"`}, Unquoted: true}},
	LandmarkCheck:      {LandmarkCheckData{}, LandmarkCheckData{Persona: "p", UserGoal: "g", LatentGoal: "l", Landmarks: landmarksSample, UserTurns: 3, TranscriptJSON: transcriptSample}},
}

// funcs are the helpers templates may call, kept small on purpose: the data
// structs carry pre-computed values so templates stay declarative.
var funcs = template.FuncMap{
	"join":  strings.Join,
	"lower": strings.ToLower,
	"upper": strings.ToUpper,
	"trim":  strings.TrimSpace,
}

// Set is a loaded, checked collection of templates. It is immutable and safe
// for concurrent use.
type Set struct {
	tmpls     map[string]*template.Template
	overrides []string // names replaced from the override directory
	hash      string
}

// MaxOverrideBytes bounds one override template; the longest built-in
// one is 2.3 KB.
const MaxOverrideBytes = 1 << 20

// MaxOverrideEntries bounds the entries of a prompts/ folder, which holds
// a handful of templates: one over it is refused (exit 2) after reading
// that many entries.
var MaxOverrideEntries = 1_000

// Load returns the embedded templates with any same-named file in
// overrideDir ("" for none) replacing the default. A *.tmpl file in
// overrideDir whose name is not a known template is an error (a misspelt
// override would otherwise be silently ignored); other files are ignored.
func Load(overrideDir string) (*Set, error) {
	src := make(map[string]string, len(specs))
	origin := make(map[string]string, len(specs))
	for name := range specs {
		b, err := embedded.ReadFile("templates/" + name + ext)
		if err != nil {
			return nil, fmt.Errorf("embedded prompt %s missing: %w", name, err)
		}
		src[name] = string(b)
		origin[name] = name + ext
	}
	s := &Set{tmpls: make(map[string]*template.Template, len(specs))}
	if overrideDir != "" {
		entries, err := fsx.ReadDir(overrideDir, MaxOverrideEntries, func(e fs.DirEntry) bool {
			return !e.IsDir() && strings.HasSuffix(e.Name(), ext)
		})
		if err != nil {
			return nil, fmt.Errorf("read prompts directory: %w", err)
		}
		var unknown []string
		for _, e := range entries {
			if e.IsDir() || !strings.HasSuffix(e.Name(), ext) {
				continue
			}
			name := strings.TrimSuffix(e.Name(), ext)
			path := filepath.Join(overrideDir, e.Name())
			if _, ok := specs[name]; !ok {
				unknown = append(unknown, path)
				continue
			}
			// Bounded, and only a regular file: a named pipe here blocked
			// every command that loads the prompts, and a 1 GiB file took
			// 5.3 GB and was accepted.
			b, err := fsx.ReadFile(path, MaxOverrideBytes)
			if err != nil {
				return nil, fmt.Errorf("read prompt override: %w", err)
			}
			src[name] = string(b)
			origin[name] = path
			s.overrides = append(s.overrides, name)
		}
		if len(unknown) > 0 {
			return nil, fmt.Errorf("unknown prompt template(s) %s: known names are %s",
				strings.Join(unknown, ", "), strings.Join(names(), ", "))
		}
		slices.Sort(s.overrides)
	}
	var errs []error
	for _, name := range names() {
		t, err := parseAndCheck(origin[name], src[name], specs[name])
		if err != nil {
			errs = append(errs, err)
			continue
		}
		s.tmpls[name] = t
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	s.hash = hashSources(src)
	return s, nil
}

// parseAndCheck parses one template (named after its file, so parse and
// execution errors read "template: <file>:<line>: …") and executes it
// against the zero and the populated value of its data type.
func parseAndCheck(file, text string, sp spec) (*template.Template, error) {
	t, err := template.New(file).Option("missingkey=error").Funcs(funcs).Parse(text)
	if err != nil {
		return nil, fmt.Errorf("prompt %w", err)
	}
	if err := checkShape(t); err != nil {
		return nil, fmt.Errorf("prompt template: %w", err)
	}
	for _, data := range []any{sp.zero, sp.sample} {
		err := t.Execute(&capWriter{left: maxSampleRender}, data)
		if errors.Is(err, errRendersTooMuch) {
			return nil, fmt.Errorf("prompt %s renders more than %d MiB from sample data: a loop ({{range 100000000}}) or {{template}} calls repeating one another; the built-in templates render a few KB", file, maxSampleRender>>20)
		}
		if err != nil {
			return nil, fmt.Errorf("prompt %w (variables available: %s)", err, fieldList(reflect.TypeOf(sp.zero)))
		}
	}
	return t, nil
}

// maxSampleRender bounds what a template may render from its sample data
// when it is loaded. Before, a 60-byte override ({{range 1000000000}}x
// {{end}}, or ten {{define}}s each calling the one before ten times) was
// rendered whole into memory at load: gigabytes.
const maxSampleRender = 4 << 20

var errRendersTooMuch = errors.New("template renders too much")

// capWriter discards what it is given, failing once more than left
// bytes have come.
type capWriter struct{ left int }

func (w *capWriter) Write(p []byte) (int, error) {
	if len(p) > w.left {
		return 0, errRendersTooMuch
	}
	w.left -= len(p)
	return len(p), nil
}

func fieldList(t reflect.Type) string {
	var out []string
	for i := range t.NumField() {
		out = append(out, "."+t.Field(i).Name)
	}
	return strings.Join(out, " ")
}

func hashSources(src map[string]string) string {
	h := sha256.New()
	for _, name := range names() {
		// Length-prefixed so that moving text between templates changes the hash.
		fmt.Fprintf(h, "%s\x00%d\x00%s", name, len(src[name]), src[name])
	}
	return hex.EncodeToString(h.Sum(nil))
}

func names() []string {
	out := make([]string, 0, len(specs))
	for n := range specs {
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}

// Render executes the named template. data must be the template's data
// struct (e.g. JudgeData for "judge_user"); the result is trimmed of
// surrounding whitespace.
func (s *Set) Render(name string, data any) (string, error) {
	t, ok := s.tmpls[name]
	if !ok {
		return "", fmt.Errorf("render prompt: unknown template %q", name)
	}
	if want := reflect.TypeOf(specs[name].zero); reflect.TypeOf(data) != want {
		return "", fmt.Errorf("render prompt %s: data is %T, want %v", name, data, want)
	}
	// A strings.Builder hands its bytes over as the string; a
	// bytes.Buffer's String would copy every rendered prompt once more.
	var buf strings.Builder
	if err := t.Execute(&buf, data); err != nil {
		return "", fmt.Errorf("render prompt %s: %w", name, err)
	}
	return strings.TrimSpace(buf.String()), nil
}

// Hash is the hex sha256 of every effective template (name and text). Caches
// of model outputs fold it into their keys so editing a prompt invalidates them.
func (s *Set) Hash() string { return s.hash }

// Names lists the template names in sorted order.
func (s *Set) Names() []string { return names() }

// Overrides lists the templates replaced from the override directory.
func (s *Set) Overrides() []string { return slices.Clone(s.overrides) }

// Default returns the embedded text of a template, e.g. for a command that
// writes the defaults out for the user to edit.
func Default(name string) (string, error) {
	if _, ok := specs[name]; !ok {
		return "", fmt.Errorf("unknown prompt template %q", name)
	}
	b, err := embedded.ReadFile("templates/" + name + ext)
	if err != nil {
		return "", fmt.Errorf("read embedded prompt %s: %w", name, err)
	}
	return string(b), nil
}
