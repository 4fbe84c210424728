package report

import (
	"bytes"
	"encoding/json"
	"flag"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/impactbench/impactbench/internal/artifacts"
	"github.com/impactbench/impactbench/internal/human"
	"github.com/impactbench/impactbench/internal/llm"
	"github.com/impactbench/impactbench/internal/results"
)

var update = flag.Bool("update", false, "rewrite golden files")

// golden compares got with testdata/<name>, rewriting it under -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s mismatch (run with -update after checking):\n--- got\n%s\n--- want\n%s", name, got, want)
	}
}

func TestStatusGolden(t *testing.T) {
	dir := miniBench(t)
	// A configured target that never ran must show as "not started".
	var buf bytes.Buffer
	if err := Status(&buf, dir, []string{"alpha", "beta", "gamma"}, StatusOptions{}); err != nil {
		t.Fatal(err)
	}
	// The temp dir differs per run; normalise it for the golden file.
	got := strings.ReplaceAll(buf.String(), dir, "<bench>")
	golden(t, "status_mini.golden", []byte(got))
	if strings.Contains(got, "\x1b[") {
		t.Error("colour codes without Color option")
	}
}

func TestStatusLegacyAndEmpty(t *testing.T) {
	var buf bytes.Buffer
	if err := Status(&buf, "testdata/humanebench", nil, StatusOptions{}); err != nil {
		t.Fatal(err)
	}
	golden(t, "status_humanebench.golden", buf.Bytes())

	buf.Reset()
	empty := t.TempDir()
	if err := Status(&buf, empty, nil, StatusOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"not generated yet", "No target runs yet.", "results.json not available yet."} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("empty bench status lacks %q:\n%s", want, buf.String())
		}
	}
	if err := Status(&buf, filepath.Join(empty, "missing"), nil, StatusOptions{}); err == nil {
		t.Error("missing bench dir: want error")
	}
}

func TestStatusColor(t *testing.T) {
	dir := miniBench(t)
	var plain, color bytes.Buffer
	if err := Status(&plain, dir, nil, StatusOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := Status(&color, dir, nil, StatusOptions{Color: true}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(color.String(), "\x1b[31m1\x1b[0m") {
		t.Errorf("failed count not red:\n%q", color.String())
	}
	// Stripping the codes must give the plain output: colour never shifts columns.
	stripped := ansi.ReplaceAllString(color.String(), "")
	if stripped != plain.String() {
		t.Errorf("colour changed layout:\n%s\nvs\n%s", stripped, plain.String())
	}
}

var ansi = regexp.MustCompile("\x1b\\[[0-9;]*m")

// TestStatusStatistics: a results.json from Aggregate gives the
// leaderboard in score order (the file is in positive-rate order) with
// score and rank intervals, ties, the few-clusters warnings and the
// model-vs-model differences.
func TestStatusStatistics(t *testing.T) {
	dir := statsBench(t)
	var buf bytes.Buffer
	if err := Status(&buf, dir, nil, StatusOptions{}); err != nil {
		t.Fatal(err)
	}
	got := strings.ReplaceAll(buf.String(), dir, "<bench>")
	golden(t, "status_stats.golden", []byte(got))
	board := got[strings.Index(got, "Leaderboard"):]
	var order []string
	for _, m := range []string{"steady", "middling", "lopsided", "wobbly"} {
		order = append(order, strconv.Itoa(strings.Index(board, "  "+m+"  ")))
	}
	for i := 1; i < len(order); i++ {
		a, _ := strconv.Atoi(order[i-1])
		b, _ := strconv.Atoi(order[i])
		if a < 0 || b < 0 || a > b {
			t.Fatalf("leaderboard not in score order:\n%s", board)
		}
	}
	for _, want := range []string{"Statistical ties: steady = middling; middling = lopsided", "Differences beyond chance: steady > lopsided; steady > wobbly",
		"! only 4 base scenarios: the interval is wide", "Intervals: cluster-score, stratified-cluster-score.", "Holm-adjusted within the 6 pairs of models (family pairwise:leaderboard)"} {
		if !strings.Contains(got, want) {
			t.Errorf("status lacks %q", want)
		}
	}
}

// TestStatusCorrected: with leaderboard.corrected, status prints one line
// per model: its corrected score and tracks, or the warning instead.
func TestStatusCorrected(t *testing.T) {
	dir := calibBench(t)
	var buf bytes.Buffer
	if err := Status(&buf, dir, nil, StatusOptions{}); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, l := range strings.Split(buf.String(), "\n") {
		if strings.HasPrefix(l, "corrected for judge error: ") {
			got = append(got, l)
		}
	}
	want := []string{
		"corrected for judge error: careful 67.1% [16.2, 88.1] (Rogan–Gladen, judge panel; positive 73.9% [27.7, 91.0], negative 60.4% [4.7, 85.1])",
		"corrected for judge error: opaque not corrected: no corrected rate for the positive and negative tracks",
		"corrected for judge error: sloppy 49.5% [24.1, 73.6] (Rogan–Gladen, judge panel; positive 51.0% [27.7, 72.0], negative 47.9% [20.6, 75.3])",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("corrected lines:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	// A model without a corrected score: what says why, and what to label.
	b := filepath.Base(dir)
	if hint := "  1 model(s) without a corrected score: `impactbench calibrate " + b + "` says why, per metric; `impactbench calibrate " + b + " --plan` which labels would give one"; !strings.Contains(buf.String(), hint) {
		t.Errorf("status does not say what to do about opaque's missing correction (%q):\n%s", hint, buf.String())
	}
	// Without labels, no such line.
	buf.Reset()
	if err := Status(&buf, statsBench(t), nil, StatusOptions{}); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(buf.String(), "corrected for judge error") || strings.Contains(buf.String(), "without a corrected score") {
		t.Error("a corrected line without judge calibration")
	}
}

// TestStatusShowsTheCorrectedRatesThatExist: a model whose score cannot be
// corrected still shows each metric's corrected rate that exists (a
// clipped one with its unclipped value), and status --json carries them.
func TestStatusShowsTheCorrectedRatesThatExist(t *testing.T) {
	one, lo, hi, raw := 1.0, 0.8, 1.0, 1.116
	half := 0.5
	row := boardRow{model: "m", corr: &correctedScore{Warn: "not corrected: no corrected rate for the negative track"},
		metrics: results.Keyed[*results.Corrected]{
			{Key: "m01", Value: &results.Corrected{Estimate: &one, Low: &lo, High: &hi, Unclipped: &raw, ClipNote: "clipped"}},
			{Key: "m02", Value: &results.Corrected{Estimate: &half, Low: &lo, High: &hi}},
			{Key: "m03", Value: &results.Corrected{Warning: "thinly labelled"}},
		}}
	var buf bytes.Buffer
	writeCorrectedLines(&buf, colors(false), []boardRow{row})
	want := "corrected for judge error: m not corrected: no corrected rate for the negative track\n  by metric: m01 100.0% [80.0, 100.0] (clipped from 1.116); m02 50.0% [80.0, 100.0]; m03 —\n"
	if buf.String() != want {
		t.Errorf("got:\n%s\nwant:\n%s", buf.String(), want)
	}
	var js bytes.Buffer
	if err := WriteStatusJSON(&js, calibBench(t), nil, StatusOptions{}); err != nil {
		t.Fatal(err)
	}
	var st StatusJSON
	if err := json.Unmarshal(js.Bytes(), &st); err != nil {
		t.Fatal(err)
	}
	for _, l := range st.Leaderboard {
		if l.Corrected == nil || len(l.Corrected.ByMetric) != 3 || l.Corrected.Positive == nil {
			t.Errorf("%s: corrected %+v", l.Model, l.Corrected)
		}
		if m, ok := l.Corrected.ByMetric["m01"]; l.Model == "careful" && (!ok || m.Estimate == nil) {
			t.Errorf("careful m01 corrected %+v", m)
		}
	}
}

// TestStatusCountsPeoplesConversations: status and status --json count the
// conversations people played against each target, drafts included.
func TestStatusCountsPeoplesConversations(t *testing.T) {
	dir := statsBench(t)
	st := human.Open(dir)
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	target := "steady"
	sc := artifacts.Scenario{ID: "m01_s001_v01", MetricID: "m01"}
	run := artifacts.RunInfo{TargetModel: target, Turns: 2}
	for _, who := range []string{"ana", "bo"} {
		c, err := st.Start(target, sc, who, run, now)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := st.Reply(target, c.ConvID, 0, artifacts.Turn{Role: "user", Content: "hi"}, artifacts.Turn{Role: "assistant", Content: "ok"}, false, llm.Usage{}, 2, now); err != nil {
			t.Fatal(err)
		}
		if who == "ana" {
			if _, err := st.End(target, c.ConvID, 2, now); err != nil {
				t.Fatal(err)
			}
		}
	}
	var js bytes.Buffer
	if err := WriteStatusJSON(&js, dir, nil, StatusOptions{}); err != nil {
		t.Fatal(err)
	}
	var s StatusJSON
	if err := json.Unmarshal(js.Bytes(), &s); err != nil {
		t.Fatal(err)
	}
	var h *HumanCountJSON
	for _, tg := range s.Targets {
		if tg.Target == target {
			h = tg.Human
		} else if tg.Human != nil {
			t.Errorf("%s: human %+v", tg.Target, tg.Human)
		}
	}
	if h == nil || h.Conversations != 2 || h.Drafts != 1 || h.Ended != 1 || h.Judged != 0 {
		t.Errorf("human counts %+v", h)
	}
	var buf bytes.Buffer
	if err := Status(&buf, dir, nil, StatusOptions{}); err != nil {
		t.Fatal(err)
	}
	if want := "played by people: " + target + ": 2 conversation(s), 0 judged, 1 ended without a verdict yet, 1 draft(s) still being played"; !strings.Contains(buf.String(), want) {
		t.Errorf("status lacks %q", want)
	}
}

// status reads a half-finished run and turns unreadable files into
// messages rather than errors; a benchmark.yaml that does not load was
// left out silently (only the title fell back to the folder name), so a
// broken edit showed nowhere until the next run.
func TestStatusSaysBenchmarkYAMLIsUnreadable(t *testing.T) {
	tests := []struct {
		name, yaml, want string
	}{
		{"syntax", "name: [\n", "benchmark.yaml unreadable"},
		{"bad type", "name: x\ndescription: y\nmetrics:\n- {id: m01, name: a, type: postive, definition: d}\n", "postive"},
		{"fine", "name: x\ndescription: y\n", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, "benchmark.yaml"), []byte(tt.yaml), 0o644); err != nil {
				t.Fatal(err)
			}
			var buf bytes.Buffer
			if err := Status(&buf, dir, nil, StatusOptions{}); err != nil {
				t.Fatal(err)
			}
			got := buf.String()
			if tt.want == "" && strings.Contains(got, "unreadable") {
				t.Errorf("a good benchmark.yaml is reported:\n%s", got)
			}
			if tt.want != "" && !strings.Contains(got, tt.want) {
				t.Errorf("status lacks %q:\n%s", tt.want, got)
			}
		})
	}
}

// TestStatusCountsRefusedReplies: status and status --json say, per
// target, how many target replies its provider stopped for safety (and in
// how many conversations); a target without one gets no line and no key.
func TestStatusCountsRefusedReplies(t *testing.T) {
	dir := miniBench(t)
	setConvField(t, dir, "alpha", 0, "refused", []int{1, 3})
	setConvField(t, dir, "alpha", 1, "refused", []int{1})
	var buf bytes.Buffer
	if err := Status(&buf, dir, nil, StatusOptions{}); err != nil {
		t.Fatal(err)
	}
	if want := "provider safety stops: alpha: 3 target replies in 2 conversation(s), the target's answers (judged and counted)\n"; !strings.Contains(buf.String(), want) {
		t.Errorf("status lacks %q:\n%s", want, buf.String())
	}
	if strings.Contains(buf.String(), "provider safety stops: beta") {
		t.Errorf("a line for beta, which had no refused reply:\n%s", buf.String())
	}
	var js bytes.Buffer
	if err := WriteStatusJSON(&js, dir, nil, StatusOptions{}); err != nil {
		t.Fatal(err)
	}
	var s struct {
		Targets []map[string]json.RawMessage `json:"targets"`
	}
	if err := json.Unmarshal(js.Bytes(), &s); err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, tg := range s.Targets {
		got[strings.Trim(string(tg["target"]), `"`)] = string(tg["refused"])
	}
	if want := map[string]string{"alpha": `{
        "replies": 3,
        "conversations": 2
      }`, "beta": ""}; !maps.Equal(got, want) {
		t.Errorf("status --json refused per target = %q, want %q", got, want)
	}
}

// setConvField sets key of row i of target's conversations.json.
func setConvField(t *testing.T, dir, target string, i int, key string, v any) {
	t.Helper()
	editConvs(t, dir, target, func(convs []map[string]any) { convs[i][key] = v })
}

// editConvs rewrites target's conversations.json after edit.
func editConvs(t *testing.T, dir, target string, edit func(convs []map[string]any)) {
	t.Helper()
	path := filepath.Join(dir, "runs", target, "conversations.json")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var convs []map[string]any
	if err := json.Unmarshal(b, &convs); err != nil {
		t.Fatal(err)
	}
	edit(convs)
	writeJSON(t, path, convs)
}

// TestStatusSaysWhenLabelsAreStale: label lines left out because their
// conversation was run again since are named, with what to do.
func TestStatusSaysWhenLabelsAreStale(t *testing.T) {
	res := []results.ModelResult{{TargetModel: "m", JudgeCalibration: &results.JudgeCalibration{AllTargets: &results.LabelSummary{NLines: 9, NStale: 3}}}}
	for _, stale := range []int{3, 0} {
		res[0].JudgeCalibration.AllTargets.NStale = stale
		var buf bytes.Buffer
		writeCalibrationHints(&buf, colorizer(false), "b", res, nil)
		if got := strings.Contains(buf.String(), "! 3 label line(s) were given on a conversation run again since: left out; label those rows again"); got != (stale > 0) {
			t.Errorf("%d stale: %q", stale, buf.String())
		}
	}
}
