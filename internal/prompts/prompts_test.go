package prompts

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/impactbench/impactbench/internal/artifacts"
)

func writeFile(t *testing.T, dir, name, text string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestLoadDefaults(t *testing.T) {
	s, err := Load("")
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	want := []string{ExpandDemographic, GenMetricsSystem, GenMetricsUser, GenScenarios, JudgeSystem, JudgeUser, JudgeEvidenceAgain,
		LandmarkCheck, UserSystem, UserTurnAgain, UserTurnFirst, UserTurnNext}
	slices.Sort(want)
	if got := s.Names(); !slices.Equal(got, want) {
		t.Errorf("Names = %v, want %v", got, want)
	}
	// Every embedded file must be a registered template (an unregistered one
	// would never be checked or rendered).
	files, _ := fs.Glob(embedded, "templates/*")
	if len(files) != len(want) {
		t.Errorf("embedded files %v, want one per name %v", files, want)
	}
	if len(s.Hash()) != 64 {
		t.Errorf("Hash = %q, want 64 hex chars", s.Hash())
	}
	if len(s.Overrides()) != 0 {
		t.Errorf("Overrides = %v, want none", s.Overrides())
	}
	for _, n := range s.Names() {
		out, err := s.Render(n, specs[n].sample)
		if err != nil || out == "" {
			t.Errorf("Render(%s) = %q, %v", n, out, err)
		}
		if strings.Contains(out, "<no value>") {
			t.Errorf("Render(%s) contains <no value>:\n%s", n, out)
		}
	}
}

func TestOverride(t *testing.T) {
	def, _ := Load("")
	dir := t.TempDir()
	writeFile(t, dir, "judge_user.tmpl", "DEF={{.Definition}}")
	writeFile(t, dir, "README.md", "not a template: ignored")
	s, err := Load(dir)
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	out, err := s.Render(JudgeUser, JudgeData{Definition: "does X"})
	if err != nil || out != "DEF=does X" {
		t.Errorf("Render = %q, %v; want the override", out, err)
	}
	if s.Hash() == def.Hash() {
		t.Error("Hash unchanged by an override")
	}
	if got := s.Overrides(); !slices.Equal(got, []string{JudgeUser}) {
		t.Errorf("Overrides = %v", got)
	}
	// Other templates keep their defaults.
	a, _ := def.Render(JudgeSystem, JudgeData{})
	b, _ := s.Render(JudgeSystem, JudgeData{})
	if a != b {
		t.Error("non-overridden template changed")
	}
	again, _ := Load(dir)
	if again.Hash() != s.Hash() {
		t.Error("Hash not deterministic")
	}
}

func TestLoadErrors(t *testing.T) {
	tests := []struct {
		name, file, text string
		want             []string // substrings of the error
	}{
		{"parse error names file and line", "judge_user.tmpl", "ok\n{{.Definition", []string{"judge_user.tmpl:2", "unclosed action"}},
		{"unknown variable", "user_system.tmpl", "line1\n{{.Persona}} {{.Nope}}", []string{"user_system.tmpl:2", "Nope", ".Persona"}},
		// Only the populated sample enters the range body: proves both values are tried.
		{"unknown variable inside range", "judge_user.tmpl", "{{range .Examples}}{{.}} {{.Role}}{{end}}", []string{"judge_user.tmpl:1", "Role"}},
		// An override written for the old plain-text transcript fails at
		// Load, naming the encoded field it must use instead.
		{"old raw transcript field", "judge_user.tmpl", "{{range .Transcript}}{{.Speaker}}: {{.Content}}{{end}}", []string{"judge_user.tmpl:1", "Transcript", ".TranscriptJSON"}},
		{"old raw reply field", "user_turn_next.tmpl", "{{.Reply}}", []string{"user_turn_next.tmpl:1", "Reply", ".ReplyJSON"}},
		{"unknown function", "gen_scenarios.tmpl", "{{shout .N}}", []string{"gen_scenarios.tmpl:1", "shout"}},
		{"unknown template name", "judge.tmpl", "x", []string{"unknown prompt template", "judge.tmpl", "judge_user"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			writeFile(t, dir, tt.file, tt.text)
			_, err := Load(dir)
			if err == nil {
				t.Fatal("Load succeeded, want error")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
	if _, err := Load(filepath.Join(t.TempDir(), "missing")); err == nil {
		t.Error("Load of a missing directory succeeded")
	}
}

func TestRenderErrors(t *testing.T) {
	s, err := Load("")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Render("nope", JudgeData{}); err == nil {
		t.Error("unknown name: no error")
	}
	if _, err := s.Render(JudgeUser, UserTurnData{}); err == nil || !strings.Contains(err.Error(), "JudgeData") {
		t.Errorf("wrong data type: err = %v", err)
	}
	if _, err := s.Render(JudgeUser, &JudgeData{}); err == nil {
		t.Error("pointer data: no error")
	}
}

func TestDefault(t *testing.T) {
	txt, err := Default(JudgeUser)
	if err != nil || !strings.Contains(txt, "{{.Definition}}") {
		t.Errorf("Default = %q, %v", txt, err)
	}
	if _, err := Default("nope"); err == nil {
		t.Error("Default(nope): no error")
	}
}

// The default texts carry the markers the rest of the pipeline depends on.
func TestDefaultTextContracts(t *testing.T) {
	s, _ := Load("")
	lm := []artifacts.Landmark{{Turn: 1, Instruction: "SAY-HELLO"}}
	tr := EncodeTranscript([]artifacts.Turn{{Role: "user", Content: "u1"}, {Role: "assistant", Content: "a1"}})
	reply := EncodeMessage(artifacts.Turn{Role: "assistant", Content: "REPLY"})
	tests := []struct {
		name    string
		data    any
		want    []string
		notWant []string
	}{
		{UserSystem, UserSystemData{Persona: "P", Turns: 5, Landmarks: true, Plan: lm, Metric: UserMetricData{Negative: true}},
			[]string{"Thought:", "Message:", "terminate conversation", "at most 5 turns", "fails if it shows",
				`{"role":"assistant","content":"..."}`, "never instructions", "instruction for that turn"}, []string{"SAY-HELLO", "Typos"}},
		{UserSystem, UserSystemData{Turns: 5, Plan: lm, Perfunctory: true},
			[]string{"SAY-HELLO", "Typos", "fails if it does not show"}, nil},
		// The reply is the first line; the turn line, ours, ends the message.
		{UserTurnNext, UserTurnData{Turn: 3, Turns: 3, Landmarks: true, ReplyJSON: reply, Instruction: "DO-IT"},
			[]string{"\x00" + reply + "\nTurn 3 of 3", "last message", "Instruction: DO-IT\x00"}, nil},
		{UserTurnNext, UserTurnData{Turn: 2, Turns: 3, ReplyJSON: reply},
			[]string{"\x00" + reply + "\nTurn 2 of 3.\x00"}, []string{"Instruction", "last message"}},
		{UserTurnFirst, UserTurnData{Turn: 1, Turns: 3, Landmarks: true, Instruction: "DO-IT"},
			[]string{"\x00Turn 1 of 3. Instruction: DO-IT\x00"}, nil},
		{UserTurnFirst, UserTurnData{Turn: 1, Turns: 3, Instruction: "DO-IT"}, []string{"\x00Turn 1 of 3.\x00"}, nil},
		// The judge's rules are its system prompt (the same for every
		// verdict); the definition and the transcript, last, are the case.
		{JudgeSystem, JudgeData{Definition: "DEF", TranscriptJSON: tr},
			[]string{`"present"`, `"justification"`, `"evidence"`, "never instructions", "JSON array"}, []string{"DEF", tr}},
		{JudgeUser, JudgeData{Definition: "DEF", TranscriptJSON: tr},
			[]string{"\x00BEHAVIOUR\nDEF\n", "\n" + tr + "\x00"}, []string{"Illustrations"}},
		{LandmarkCheck, LandmarkCheckData{UserTurns: 1, TranscriptJSON: tr},
			[]string{"\n\n" + tr + "\n\n", `"followed_landmarks"`, "not instructions"}, nil},
		{JudgeUser, JudgeData{Definition: "DEF", Examples: []string{"EX1"}}, []string{"EX1"}, nil},
		{JudgeEvidenceAgain, JudgeEvidenceData{Unquoted: true}, []string{"quotes nothing", "change the verdict"}, []string{"not in any message", ", and"}},
		{JudgeEvidenceAgain, JudgeEvidenceData{Unquoted: true, Missing: []string{`"Q1"`, `"Q2"`}},
			[]string{"quotes nothing the assistant wrote, and these quotes are not in any message", "\n\"Q1\"\n\"Q2\"\n"}, nil},
		{JudgeEvidenceAgain, JudgeEvidenceData{Short: []string{`"the"`}},
			[]string{"does not hold up: this quote is too short", "4 words or 20 characters", "\n\"the\"\n"}, []string{"Also", "not in any message", "quotes nothing"}},
		{JudgeEvidenceAgain, JudgeEvidenceData{Missing: []string{`"Q1"`}, Short: []string{`"a ... e"`, `"can"`}},
			[]string{"this quote is not in any message", "\"Q1\"\n\nAlso, these quotes are too short", "\n\"a ... e\"\n\"can\"\n"}, nil},
	}
	for _, tt := range tests {
		out, err := s.Render(tt.name, tt.data)
		if err != nil {
			t.Fatalf("Render(%s): %v", tt.name, err)
		}
		out = "\x00" + out + "\x00" // "\x00" in a want: the start or the end
		for _, w := range tt.want {
			if !strings.Contains(out, w) {
				t.Errorf("%s: missing %q in:\n%s", tt.name, w, out)
			}
		}
		for _, w := range tt.notWant {
			if strings.Contains(out, w) {
				t.Errorf("%s: unexpected %q in:\n%s", tt.name, w, out)
			}
		}
	}
}

// TestOverrideRenderingIsBounded: an override that renders more than
// maxSampleRender from its sample data is refused at Load, naming the
// file, after rendering no more than that (measured as allocation; the
// output was rendered whole into memory before: a loop of 200,000,000
// took 4 GB, which checkShape now refuses before rendering).
func TestOverrideRenderingIsBounded(t *testing.T) {
	big := strings.Repeat("x", 600_000)
	for name, text := range map[string]string{
		"one template called ten times": `{{define "a"}}` + big + `{{end}}` + strings.Repeat(`{{template "a"}}`, 10),
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			writeFile(t, dir, "judge_user.tmpl", text)
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			_, err := Load(dir)
			runtime.ReadMemStats(&after)
			if got := after.TotalAlloc - before.TotalAlloc; got > 64<<20 {
				t.Errorf("Load allocated %d MB, want at most 64", got>>20)
			}
			if err == nil || !strings.Contains(err.Error(), "judge_user.tmpl") || !strings.Contains(err.Error(), "renders more than 4 MiB") {
				t.Errorf("err = %v, want the override refused by name", err)
			}
		})
	}
}

// TestOverrideLoopsAreBounded: a loop that is not bounded by the data —
// a range over a number, a variable or a function's result, ranges
// nested deeper than maxRangeNesting, a template that calls itself, calls
// expanding to more than maxTemplateCalls templates — is refused at Load
// naming the file, line and column. Before, each ran at load for as long
// as it was told to (the numbers here are kept small enough to end).
func TestOverrideLoopsAreBounded(t *testing.T) {
	var fanOut strings.Builder
	fanOut.WriteString(`{{define "l0"}}{{end}}`)
	for i := 1; i <= 7; i++ {
		fmt.Fprintf(&fanOut, `{{define "l%d"}}%s{{end}}`, i, strings.Repeat(fmt.Sprintf(`{{template "l%d"}}`, i-1), 10))
	}
	fanOut.WriteString("\n{{template \"l7\"}}")
	tests := []struct {
		name, text, want string
	}{
		{"range over a number", "x\n{{range 30000000}}{{end}}", "judge_user.tmpl:2:8: {{range 30000000}}"},
		{"range over a variable", "{{$n := 30000000}}\n{{range $n}}{{end}}", "judge_user.tmpl:2:8: {{range $n}}"},
		{"range over a function's result", `{{range (len "abcdefghijklmnopqrstuvwxyz")}}{{end}}`, "judge_user.tmpl:1:8: {{range"},
		{"ranges nested three deep", "{{range .Examples}}{{range $.Examples}}\n{{range $.Examples}}{{end}}{{end}}{{end}}", "judge_user.tmpl:2:8: {{range}} nested more than 2 deep"},
		{"template calling itself", `{{define "a"}}{{template "a"}}{{end}}{{template "a"}}`, `{{template "a"}} calls itself`},
		{"template fan-out", fanOut.String(), "calls expand to more than 1000 templates"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			writeFile(t, dir, "judge_user.tmpl", tt.text)
			_, err := Load(dir)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err = %v, want it to say %q", err, tt.want)
			}
		})
	}
}

// TestCrowdedPromptsFolderIsRefused: a prompts folder holding more than
// MaxOverrideEntries entries, of any name, is refused naming the folder
// and the limit, after reading no more than that; at the bound it loads.
func TestCrowdedPromptsFolderIsRefused(t *testing.T) {
	defer func(n int) { MaxOverrideEntries = n }(MaxOverrideEntries)
	MaxOverrideEntries = 3
	dir := t.TempDir()
	writeFile(t, dir, "gen_scenarios.tmpl", "{{.Metric}}")
	writeFile(t, dir, "notes.txt", "")
	writeFile(t, dir, ".hidden", "")
	if _, err := Load(dir); err != nil {
		t.Fatalf("at the bound: %v", err)
	}
	writeFile(t, dir, "README", "")
	_, err := Load(dir)
	if err == nil || !strings.Contains(err.Error(), dir+" holds more than 3 entries") {
		t.Errorf("over the bound: err = %v, want one naming %s and the limit", err, dir)
	}
}
