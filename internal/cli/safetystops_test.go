package cli

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/impactbench/impactbench/internal/layout"
)

// TestSafetyStopsShownWhereRatesAre: when a target's provider stopped some
// of its replies for safety, the summary aggregate prints, the report's
// leaderboard and compare say so for that target; a project without any
// shows nothing of it.
func TestSafetyStopsShownWhereRatesAre(t *testing.T) {
	plain := copyProject(t)
	dir := copyProject(t)
	bench := layout.Bench{Dir: filepath.Join(dir, "benchmarks", "example")}
	plainBench := filepath.Join(plain, "benchmarks", "example")

	// Without a stop: nothing anywhere.
	code, out, errs := run(t, plain, "aggregate", "example")
	if code != 0 {
		t.Fatalf("aggregate: exit %d\n%s", code, errs)
	}
	if strings.Contains(out+errs, "safety stop") {
		t.Errorf("aggregate without a stop mentions one:\n%s%s", out, errs)
	}

	// Two of offline-careful's conversations had replies stopped.
	editFile(t, bench.Run("offline-careful").Scores(), func(s string) string {
		for conv, refused := range map[string]string{"m01_s001_v01__offline-careful__s0": "[1, 3]", "m01_s001_v01__offline-careful__s1": "[1]"} {
			at := `"conv_id": "` + conv + `",`
			if !strings.Contains(s, at) {
				t.Fatalf("no row %s", conv)
			}
			s = strings.Replace(s, at, at+` "refused": `+refused+`,`, 1)
		}
		return s
	})
	code, out, errs = run(t, dir, "aggregate", "example")
	if code != 0 {
		t.Fatalf("aggregate: exit %d\n%s", code, errs)
	}
	want := "  offline-careful: pos=" // the line follows this target's own lines
	line := "    provider safety stops: 3 target replies in 2 of 16 conversations, the target's answers (judged and counted in the rates above)\n"
	all := out + errs
	i, j := strings.Index(all, want), strings.Index(all, line)
	if j < 0 || i < 0 || j < i || strings.Contains(all[i:j], "offline-careless") {
		t.Errorf("aggregate's summary lacks, under offline-careful, %q:\n%s", line, all)
	}
	if strings.Count(all, "provider safety stops") != 1 {
		t.Errorf("offline-careless has no stop, yet:\n%s", all)
	}

	code, out, errs = run(t, dir, "report", "example", "--json")
	if code != 0 {
		t.Fatalf("report: exit %d\n%s", code, errs)
	}
	// --json's results (run.results[]) carry the counts for that target only.
	var rep struct {
		Results []struct {
			Model   string          `json:"target_model"`
			Refused json.RawMessage `json:"refused"`
		} `json:"results"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("report --json: %v\n%s", err, out)
	}
	if len(rep.Results) != 2 {
		t.Errorf("report --json results: %+v", rep.Results)
	}
	for _, r := range rep.Results {
		want := ""
		if r.Model == "offline-careful" {
			want = `{"n_conversations":2,"n_replies":3}`
		}
		var got bytes.Buffer
		if len(r.Refused) > 0 {
			_ = json.Compact(&got, r.Refused)
		}
		if got.String() != want {
			t.Errorf("report --json results %s: refused %s, want %q", r.Model, got.String(), want)
		}
	}
	html, err := os.ReadFile(bench.Report())
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{
		`<li data-testid="safety-stops-row"><b>offline-careful</b>: safety stops in 2 of 16 conversations (3 target replies)</li>`,
		"It is the model’s answer",
	} {
		if !strings.Contains(string(html), w) {
			t.Errorf("report.html lacks %q", w)
		}
	}
	if strings.Contains(string(html), "<b>offline-careless</b>") {
		t.Error("report.html lists offline-careless, which has no stop")
	}
	if code, _, errs := run(t, plain, "report", "example"); code != 0 {
		t.Fatalf("report: exit %d\n%s", code, errs)
	} else if b, _ := os.ReadFile(filepath.Join(plainBench, layout.ReportFile)); strings.Contains(string(b), "safety-stops") {
		t.Error("report.html without a stop has the note")
	}

	code, out, errs = run(t, dir, "compare", plainBench, bench.Dir)
	if code != 0 {
		t.Fatalf("compare: exit %d\n%s", code, errs)
	}
	if w := "  offline-careful  0 of 16 conversations  2 of 16 conversations (3 replies)\n"; !strings.Contains(out, w) {
		t.Errorf("compare lacks %q:\n%s", w, out)
	}

	// The study of each project: study and status --study print the
	// stops per model, compare --study lists them; the plain one says
	// nothing of them.
	for _, p := range []string{plain, dir} {
		if code, _, errs := run(t, p, "init", "--study", p); code != 0 {
			t.Fatalf("init --study: exit %d\n%s", code, errs)
		}
		if code, _, errs := run(t, p, "study"); code != 0 {
			t.Fatalf("study: exit %d\n%s", code, errs)
		}
	}
	studyLine := "provider safety stops: offline-careful: 3 target replies in 2 conversation(s) across 1 benchmark(s), the target's answers (judged and counted)\n"
	for _, args := range [][]string{{"study"}, {"status", "--study"}} {
		code, out, errs = run(t, dir, args...)
		if code != 0 || !strings.Contains(out, studyLine) || strings.Count(out, "provider safety stops") != 1 {
			t.Errorf("%v: exit %d, want the line %q once:\n%s%s", args, code, studyLine, out, errs)
		}
		if code, out, errs = run(t, plain, args...); code != 0 || strings.Contains(out+errs, "safety stop") {
			t.Errorf("%v without a stop: exit %d, mentions one:\n%s%s", args, code, out, errs)
		}
	}
	code, out, errs = run(t, dir, "compare", "--study", plain, dir)
	if w := "  offline-careful  none  3 replies in 2 conversations across 1 benchmark\n"; code != 0 || !strings.Contains(out, w) {
		t.Errorf("compare --study: exit %d, lacks %q:\n%s%s", code, w, out, errs)
	}
}
