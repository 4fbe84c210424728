package cli

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/impactbench/impactbench/internal/artifacts"
	"github.com/impactbench/impactbench/internal/results"
)

// calibrationProject is an offline project with 6 scenarios per metric (48
// conversations per metric and target), run to the end, and every
// conversation labelled by "ana" — her verdict is the judge's except on
// every ninth row — and every fifth by "bo", who agrees with the judge.
func calibrationProject(t *testing.T) (dir string, run func(args ...string) (string, string, int)) {
	t.Helper()
	dir = t.TempDir()
	run = func(args ...string) (string, string, int) {
		var out, errb bytes.Buffer
		code := Main(append([]string{"--config", filepath.Join(dir, "config.yaml")}, args...), strings.NewReader(""), &out, &errb)
		return out.String(), errb.String(), code
	}
	if _, e, code := run("init", dir); code != 0 {
		t.Fatal(e)
	}
	cfgPath := filepath.Join(dir, "config.yaml")
	cfg, _ := os.ReadFile(cfgPath)
	cfg = bytes.Replace(cfg, []byte("scenarios_per_metric: 2"), []byte("scenarios_per_metric: 6"), 1)
	if err := os.WriteFile(cfgPath, cfg, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, e, code := run("run", "example", "-q", "--no-report"); code != 0 {
		t.Fatal(e)
	}
	bench := filepath.Join(dir, "benchmarks", "example")
	var lines []string
	for _, target := range []string{"offline-careful", "offline-careless"} {
		i := 0
		err := artifacts.EachScore(filepath.Join(bench, "runs", target, "scores.json"), func(_ int, s artifacts.Score) error {
			p := *s.Present
			if i%9 == 4 {
				p = !p
			}
			lines = append(lines, fmt.Sprintf(`{"conv_id": %q, "metric_id": %q, "present": %v, "labeler": "ana", "note": "", "at": "2025-05-01T12:00:00Z"}`, s.ConvID, s.MetricID, p))
			if i%5 == 0 {
				lines = append(lines, fmt.Sprintf(`{"conv_id": %q, "metric_id": %q, "present": %v, "labeler": "bo", "at": "2025-05-01T13:00:00Z"}`, s.ConvID, s.MetricID, *s.Present))
			}
			i++
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(bench, "labels.jsonl"), []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir, run
}

var updateGolden = flag.Bool("update-golden", false, "rewrite internal/cli/testdata golden files")

func TestCalibrateGolden(t *testing.T) {
	dir, run := calibrationProject(t)
	if _, e, code := run("evaluate", "example", "--repeats", "2", "-q"); code != 0 {
		t.Fatalf("evaluate --repeats: exit %d: %s", code, e)
	}
	out, e, code := run("calibrate", "example", "-q")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, e)
	}
	got := strings.ReplaceAll(out, dir, "<project>")
	golden := filepath.Join("testdata", "calibrate.golden")
	if *updateGolden {
		if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if got != string(want) {
		t.Errorf("calibrate output differs from %s (rerun with -update-golden to accept):\n%s", golden, got)
	}

	// --json carries the same numbers, and results.json holds them.
	js, e, code := run("calibrate", "example", "--json", "-q")
	if code != 0 {
		t.Fatalf("--json: exit %d: %s", code, e)
	}
	var entries []calibrationEntry
	if err := json.Unmarshal([]byte(js), &entries); err != nil || len(entries) != 2 {
		t.Fatalf("--json: %v, %d entries:\n%s", err, len(entries), js)
	}
	if entries[0].JudgeCalibration == nil || entries[0].JudgeConsistency == nil || entries[0].PositiveCorrected == nil {
		t.Errorf("--json entry = %+v", entries[0])
	}
	res, _ := os.ReadFile(filepath.Join(dir, "benchmarks", "example", "results.json"))
	for _, key := range []string{`"judge_calibration"`, `"positive_corrected"`, `"judge_consistency"`, `"corrected"`} {
		if !bytes.Contains(res, []byte(key)) {
			t.Errorf("results.json lacks %s", key)
		}
	}
}

func TestCalibrateBadLabelExits2AndChangesNothing(t *testing.T) {
	dir, run := calibrationProject(t)
	if _, e, code := run("aggregate", "example", "-q"); code != 0 {
		t.Fatal(e)
	}
	labels := filepath.Join(dir, "benchmarks", "example", "labels.jsonl")
	good, _ := os.ReadFile(labels)
	nGood := bytes.Count(good, []byte("\n"))
	tests := []struct {
		name, line, want string
	}{
		{"unknown conv_id", `{"conv_id": "m01_s099_v01__offline-careful__s0", "metric_id": "m01", "present": true, "labeler": "x", "at": "2025-01-01T00:00:00Z"}`, `field "conv_id": unknown conversation`},
		{"wrong type", `{"conv_id": "m01_s001_v01__offline-careful__s0", "metric_id": "m01", "present": "yes", "labeler": "x", "at": "2025-01-01T00:00:00Z"}`, `field "present": want true or false`},
		{"non-JSON", `m01_s001_v01__offline-careful__s0,m01,yes,x`, `not a JSON object`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := os.WriteFile(labels, append(append([]byte{}, good...), tt.line+"\n"...), 0o644); err != nil {
				t.Fatal(err)
			}
			before := snapshot(t, dir)
			for _, cmd := range []string{"calibrate", "aggregate"} {
				_, e, code := run(cmd, "example", "-q")
				if code != ExitUsage || !strings.Contains(e, fmt.Sprintf("line %d", nGood+1)) || !strings.Contains(e, tt.want) {
					t.Errorf("%s: exit %d, stderr %q; want 2 naming line %d and %q", cmd, code, e, nGood+1, tt.want)
				}
			}
			if after := snapshot(t, dir); !sameFiles(before, after) {
				t.Error("a bad labels line changed files")
			}
		})
	}
	if err := os.WriteFile(labels, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, e, code := run("calibrate", "example", "-q"); code != ExitUsage || !strings.Contains(e, "no labels") {
		t.Errorf("empty labels: exit %d, %q", code, e)
	}
}

func sameFiles(a, b map[string][]byte) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if !bytes.Equal(v, b[k]) {
			return false
		}
	}
	return true
}

// TestCalibratePlan: before any label the plan asks for the minimum of
// each verdict per metric and target (assuming a decent judge); with every row
// labelled it asks for nothing more on a metric that is in reach, and
// --json carries the same plan. It writes nothing.
func TestCalibratePlan(t *testing.T) {
	dir, run := calibrationProject(t)
	bench := filepath.Join(dir, "benchmarks", "example")
	labels := filepath.Join(bench, "labels.jsonl")
	all, _ := os.ReadFile(labels)
	if err := os.Remove(labels); err != nil {
		t.Fatal(err)
	}
	before := snapshot(t, dir)
	out, e, code := run("calibrate", "example", "--plan", "--half-width", "0.3", "-q")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, e)
	}
	for _, want := range []string{"labelling plan for a corrected rate within ±30 points", "m01", "m02", "more label(s) in all", "assumed"} {
		if !strings.Contains(out, want) {
			t.Errorf("plan lacks %q:\n%s", want, out)
		}
	}
	if after := snapshot(t, dir); !sameFiles(before, after) {
		t.Error("--plan changed files")
	}
	js, _, code := run("calibrate", "example", "--plan", "--half-width", "0.3", "--json", "-q")
	var plan struct {
		Judge     string  `json:"judge"`
		HalfWidth float64 `json:"half_width"`
		More      int     `json:"more_labels"`
		Metrics   map[string]struct {
			Targets map[string]struct {
				RowsPresent     int    `json:"rows_present"`
				RowsAbsent      int    `json:"rows_absent"`
				LabelledPresent int    `json:"labelled_present"`
				MorePresent     int    `json:"more_present"`
				MoreAbsent      int    `json:"more_absent"`
				Status          string `json:"status"`
			} `json:"targets"`
		} `json:"metrics"`
	}
	if code != 0 || json.Unmarshal([]byte(js), &plan) != nil || plan.Judge != "offline-judge" || plan.HalfWidth != 0.3 || len(plan.Metrics) != 2 {
		t.Fatalf("--plan --json: exit %d\n%s", code, js)
	}
	for m, mp := range plan.Metrics {
		if len(mp.Targets) != 2 {
			t.Errorf("%s: targets %v, want both", m, mp.Targets)
		}
		for target, tp := range mp.Targets {
			if tp.LabelledPresent != 0 || tp.MorePresent < min(5, tp.RowsPresent) || tp.MoreAbsent < min(5, tp.RowsAbsent) || tp.Status != "needs labels" {
				t.Errorf("%s on %s: no labels yet, plan %+v: want at least the minimum of each verdict", m, target, tp)
			}
		}
	}
	if plan.More < 20 {
		t.Errorf("plan asks for %d labels in all, want at least 5 per target, verdict and metric", plan.More)
	}
	if err := os.WriteFile(labels, all, 0o644); err != nil {
		t.Fatal(err)
	}
	out, _, code = run("calibrate", "example", "--plan", "--half-width", "0.9", "-q")
	if code != 0 || !strings.Contains(out, "0 more label(s) in all") {
		t.Errorf("every row labelled, a loose target: want nothing more:\n%s", out)
	}
	if _, e, code := run("calibrate", "example", "--plan", "--half-width", "2", "-q"); code != ExitUsage || !strings.Contains(e, "--half-width") {
		t.Errorf("bad --half-width: exit %d %q", code, e)
	}
}

// TestCalibrateAll: `calibrate all` calibrates every benchmark with labels,
// says which have none, and plans them all with --plan; a bad labels line
// in any benchmark stops it with exit 2 before a file of any is written.
func TestCalibrateAll(t *testing.T) {
	dir, run := calibrationProject(t)
	second := filepath.Join(dir, "benchmarks", "second")
	if err := os.CopyFS(second, os.DirFS(filepath.Join(dir, "benchmarks", "example"))); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(second, "labels.jsonl")); err != nil {
		t.Fatal(err)
	}
	out, e, code := run("calibrate", "all", "-q")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, e)
	}
	for _, want := range []string{"== example", "offline-careless: 48 labelled rows of its own", "== second", "no labels yet: impactbench calibrate second --plan"} {
		if !strings.Contains(out, want) {
			t.Errorf("calibrate all lacks %q:\n%s", want, out)
		}
	}
	js, _, code := run("calibrate", "all", "--plan", "--json", "-q")
	var plans []struct {
		Benchmark string `json:"benchmark"`
		Plan      *struct {
			More int `json:"more_labels"`
		} `json:"plan"`
	}
	if code != 0 || json.Unmarshal([]byte(js), &plans) != nil || len(plans) != 2 || plans[1].Plan == nil || plans[1].Plan.More == 0 {
		t.Fatalf("calibrate all --plan --json: exit %d\n%s", code, js)
	}
	bad := `{"conv_id": "m01_s001_v01__offline-careful__s0", "metric_id": "m01", "present": "yes", "labeler": "x", "at": "2025-01-01T00:00:00Z"}` + "\n"
	if err := os.WriteFile(filepath.Join(second, "labels.jsonl"), []byte(bad), 0o644); err != nil {
		t.Fatal(err)
	}
	before := snapshot(t, dir)
	if _, e, code := run("calibrate", "all", "-q"); code != ExitUsage || !strings.Contains(e, "second") || !strings.Contains(e, "line 1") {
		t.Errorf("bad line in second: exit %d, %q", code, e)
	}
	if after := snapshot(t, dir); !sameFiles(before, after) {
		t.Error("a bad labels line in one benchmark let calibrate all write another's files")
	}
}

// TestCalibrateIncludeAfterReveal: labels given after the verdict was
// shown are left out of calibration and counted by default;
// --include-after-reveal counts them in (and results.json then reports
// none left out).
func TestCalibrateIncludeAfterReveal(t *testing.T) {
	dir, run := calibrationProject(t)
	path := filepath.Join(dir, "benchmarks", "example", "labels.jsonl")
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(raw)), "\n")
	late := 0
	for i, l := range lines {
		if i%7 == 0 {
			lines[i] = strings.TrimSuffix(l, "}") + `, "after_reveal": true}`
			late++
		}
	}
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	counts := func(args ...string) (left, lines int) {
		t.Helper()
		out, e, code := run(append([]string{"calibrate", "example", "-q"}, args...)...)
		if code != 0 {
			t.Fatalf("calibrate %v: exit %d: %s", args, code, e)
		}
		res, err := results.ReadResults(filepath.Join(dir, "benchmarks", "example", "results.json"))
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range res {
			if c := m.JudgeCalibration; c != nil {
				left, lines = left+c.Labels.NAfterReveal, lines+c.Labels.NLines
			}
		}
		if len(args) == 0 && !strings.Contains(out, "given after the judges' verdict was shown left out (--include-after-reveal counts them)") {
			t.Errorf("calibrate does not say labels were left out, and how to count them:\n%s", out)
		}
		return left, lines
	}
	if left, n := counts(); left != late || n != len(lines) {
		t.Errorf("by default: %d left out of %d lines, want %d of %d", left, n, late, len(lines))
	}
	if left, n := counts("--include-after-reveal"); left != 0 || n != len(lines) {
		t.Errorf("--include-after-reveal: %d left out of %d lines, want 0 of %d", left, n, len(lines))
	}
}

// TestCalibrateLeavesOutLabelsOfARerunConversation: a label carries the
// digest of the transcript its labeller read; on a conversation run again
// since (another transcript under the same conv_id) it is stale — left out
// of calibration with the same person's earlier lines on the row, counted,
// and named with what to do — so calibrate gives exactly what it gives
// without those lines. Before, such labels were silently applied to
// transcripts nobody had read.
func TestCalibrateLeavesOutLabelsOfARerunConversation(t *testing.T) {
	dir, run := calibrationProject(t)
	bench := filepath.Join(dir, "benchmarks", "example")
	digest := map[string]string{}
	for _, target := range []string{"offline-careful", "offline-careless"} {
		err := artifacts.EachConversation(filepath.Join(bench, "runs", target, "conversations.json"), func(_ int, c artifacts.Conversation) error {
			digest[c.ConvID] = artifacts.TranscriptDigest(c.Transcript)
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	path := filepath.Join(bench, "labels.jsonl")
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var withStale, without []string
	stale := 0
	for i, l := range strings.Split(strings.TrimSpace(string(raw)), "\n") {
		var v struct {
			ConvID  string `json:"conv_id"`
			Labeler string `json:"labeler"`
			Present bool   `json:"present"`
		}
		if err := json.Unmarshal([]byte(l), &v); err != nil {
			t.Fatal(err)
		}
		switch {
		case i%6 == 0:
			// An earlier line of the same person, then their label on a
			// transcript that is gone: both are left out.
			earlier := strings.Replace(l, fmt.Sprintf(`"present": %v`, v.Present), fmt.Sprintf(`"present": %v`, !v.Present), 1)
			withStale = append(withStale, earlier, strings.TrimSuffix(l, "}")+`, "transcript_sha256": "`+strings.Repeat("0", 64)+`"}`)
			stale += 2
		case i%2 == 0:
			l = strings.TrimSuffix(l, "}") + `, "transcript_sha256": "` + digest[v.ConvID] + `"}`
			withStale, without = append(withStale, l), append(without, l)
		default:
			withStale, without = append(withStale, l), append(without, l)
		}
	}
	calib := func(lines []string) (string, []results.ModelResult) {
		t.Helper()
		if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		out, e, code := run("calibrate", "example")
		if code != 0 {
			t.Fatalf("calibrate: exit %d: %s", code, e)
		}
		res, err := results.ReadResults(filepath.Join(bench, "results.json"))
		if err != nil {
			t.Fatal(err)
		}
		return out, res
	}
	out, got := calib(withStale)
	_, want := calib(without)
	if !strings.Contains(out, fmt.Sprintf("%d label line(s) were given on a conversation that has been run again since", stale)) ||
		!strings.Contains(out, "label those rows again") {
		t.Errorf("calibrate does not say %d labels are stale and what to do:\n%s", stale, out)
	}
	n := 0
	for i, m := range got {
		jc := m.JudgeCalibration
		if jc == nil {
			t.Fatalf("%s: no calibration", m.TargetModel)
		}
		n += jc.Labels.NStale
		if jc.AllTargets.NStale != stale {
			t.Errorf("labels_all_targets.n_stale %d, want %d", jc.AllTargets.NStale, stale)
		}
		g, _ := json.Marshal(jc.Judges)
		w, _ := json.Marshal(want[i].JudgeCalibration.Judges)
		if !bytes.Equal(g, w) {
			t.Errorf("%s: the calibration counts stale labels:\n%s\nwant\n%s", m.TargetModel, g, w)
		}
		g, _ = json.Marshal(m.Leaderboard)
		w, _ = json.Marshal(want[i].Leaderboard)
		if !bytes.Equal(g, w) {
			t.Errorf("%s: the corrected rates count stale labels", m.TargetModel)
		}
	}
	if n != stale {
		t.Errorf("n_stale over the targets %d, want %d", n, stale)
	}
}
