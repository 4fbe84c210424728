package study_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/impactbench/impactbench/internal/artifacts"
	"github.com/impactbench/impactbench/internal/config"
	"github.com/impactbench/impactbench/internal/layout"
	"github.com/impactbench/impactbench/internal/results"
	"github.com/impactbench/impactbench/internal/study"
	"github.com/impactbench/impactbench/internal/study/studytest"
)

// stopped is one score row of a benchmark's results.json: its target,
// metric and the transcript indices its provider stopped for safety.
type stopped struct {
	model, metric string
	refused       []int
}

// writeStops writes benchmark slug's results.json from one judged row per
// entry (rows numbered per metric), as aggregate would.
func writeStops(t *testing.T, bench, slug string, rows []stopped) {
	t.Helper()
	var scores []artifacts.Score
	for i, r := range rows {
		id := fmt.Sprintf("%s_s%03d_v01", r.metric, i+1)
		present, passed := false, true
		scores = append(scores, artifacts.Score{ID: id, MetricID: r.metric, TargetModel: r.model, ConvID: artifacts.ConvID(id, r.model, 0),
			Present: &present, Passed: &passed, Refused: r.refused})
	}
	ms := []config.Metric{{ID: "m01", Type: config.Positive}, {ID: "m02", Type: config.Negative}, {ID: "m03", Type: config.Negative}}
	res, err := results.Aggregate(results.Input{Metrics: ms, Scores: scores}, results.Options{Seed: 1, BootstrapReps: 20})
	if err != nil {
		t.Fatal(err)
	}
	if err := results.WriteResults(layout.Bench{Dir: filepath.Join(bench, slug)}.Results(), res); err != nil {
		t.Fatal(err)
	}
}

// oldModels is study.json's "models" as it was before models carried
// refused: what a study without safety stops must still write.
func oldModels(t *testing.T, ms []study.ModelInfo) string {
	t.Helper()
	type old struct {
		ID       string   `json:"id"`
		Name     string   `json:"name"`
		Provider string   `json:"provider"`
		RunDir   string   `json:"run_dir"`
		Surfaces []string `json:"surfaces"`
	}
	var o []old
	for _, m := range ms {
		o = append(o, old{m.ID, m.Name, m.Provider, m.RunDir, m.Surfaces})
	}
	b, err := json.MarshalIndent(o, "  ", "  ")
	if err != nil {
		t.Fatal(err)
	}
	return `  "models": ` + string(b) + ",\n"
}

// TestSafetyStopsInStudy: a model's provider safety stops, as each
// benchmark's results.json counts them (refused), are carried per
// benchmark in study.json's models[].refused, on the metrics the study
// publishes; the summary (study's and status --study's text and --json)
// says per model how many replies in how many conversations across how
// many benchmarks. A study without any writes study.json exactly as
// before: no key, the same bytes as without a results.json.
func TestSafetyStopsInStudy(t *testing.T) {
	_, plainBench := small(t)
	s, err := study.Load(plainBench)
	if err != nil {
		t.Fatal(err)
	}
	var plain bytes.Buffer
	if err := s.Compute().Encode(&plain); err != nil {
		t.Fatal(err)
	}

	cases := []struct {
		name  string
		stops map[string][]stopped // by benchmark
		want  map[string][]study.BenchRefused
		lines []string // the summary's safety-stop lines
	}{
		{name: "results.json without a stop", stops: map[string][]stopped{
			"alpha": {{"model-a", "m01", nil}, {"model-b", "m02", nil}}}},
		{name: "one benchmark", stops: map[string][]stopped{
			"alpha": {{"model-a", "m01", []int{1, 3}}, {"model-a", "m01", []int{1}}, {"model-a", "m02", nil}, {"model-b", "m01", nil}}},
			want:  map[string][]study.BenchRefused{"model-a": {{Benchmark: "alpha", Conversations: 2, Replies: 3}}},
			lines: []string{"provider safety stops: model-a: 3 target replies in 2 conversation(s) across 1 benchmark(s), the target's answers (judged and counted)\n"}},
		{name: "two benchmarks, an unpublished metric and a model outside the study", stops: map[string][]stopped{
			"alpha": {{"model-a", "m01", []int{1}}, {"model-b", "m02", []int{3}}},
			"gamma": {{"model-a", "m02", []int{1}}, {"model-a", "m03", []int{1, 3}}, {"model-x", "m01", []int{1}}}},
			want: map[string][]study.BenchRefused{
				"model-a": {{Benchmark: "alpha", Conversations: 1, Replies: 1}, {Benchmark: "gamma", Conversations: 1, Replies: 1}},
				"model-b": {{Benchmark: "alpha", Conversations: 1, Replies: 1}}},
			lines: []string{
				"provider safety stops: model-a: 2 target replies in 2 conversation(s) across 2 benchmark(s), the target's answers (judged and counted)\n",
				"provider safety stops: model-b: 1 target reply in 1 conversation(s) across 1 benchmark(s), the target's answers (judged and counted)\n"}},
		{name: "stops only on an unpublished metric", stops: map[string][]stopped{
			"beta": {{"model-c", "m03", []int{1}}, {"model-c", "m01", nil}}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			bench := plainBench // one small study: each case writes its own results.json files
			for _, slug := range studytest.SmallBenchmarks {
				if err := os.Remove(layout.Bench{Dir: filepath.Join(bench, slug)}.Results()); err != nil && !errors.Is(err, fs.ErrNotExist) {
					t.Fatal(err)
				}
			}
			for slug, rows := range tc.stops {
				writeStops(t, bench, slug, rows)
			}
			s, err := study.Load(bench)
			if err != nil {
				t.Fatal(err)
			}
			res := s.Compute()
			got := map[string][]study.BenchRefused{}
			for _, m := range res.Models {
				if m.Refused != nil {
					got[m.ID] = m.Refused
				}
			}
			if tc.want == nil {
				tc.want = map[string][]study.BenchRefused{}
			}
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("models' refused (-want +got):\n%s", d)
			}

			var file bytes.Buffer
			if err := res.Encode(&file); err != nil {
				t.Fatal(err)
			}
			if len(tc.lines) == 0 {
				if !bytes.Equal(file.Bytes(), plain.Bytes()) || !strings.Contains(file.String(), oldModels(t, res.Models)) {
					t.Errorf("a study without safety stops wrote another study.json:\n%s", file.String())
				}
			} else if !strings.Contains(file.String(), `"refused": [`) {
				t.Errorf("study.json lacks the models' refused:\n%s", file.String())
			}
			path := filepath.Join(bench, study.ResultFile)
			if err := res.WriteFile(path); err != nil {
				t.Fatal(err)
			}
			back, err := study.ReadResult(path) // status --study and compare --study read it back
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(res.Models, back.Models); d != "" {
				t.Errorf("study.json's models read back (-wrote +read):\n%s", d)
			}

			sum := study.Summarize(back, path)
			var text strings.Builder
			if err := sum.WriteText(&text); err != nil {
				t.Fatal(err)
			}
			if n := strings.Count(text.String(), "provider safety stops"); n != len(tc.lines) {
				t.Errorf("%d safety-stop lines, want %d:\n%s", n, len(tc.lines), text.String())
			}
			for _, l := range tc.lines {
				if !strings.Contains(text.String(), l) {
					t.Errorf("summary lacks %q:\n%s", l, text.String())
				}
			}
			js, err := json.Marshal(sum)
			if err != nil {
				t.Fatal(err)
			}
			var shape struct {
				SafetyStops json.RawMessage `json:"safety_stops"`
			}
			_ = json.Unmarshal(js, &shape)
			wantJS := "[]"
			if len(tc.lines) == 2 {
				wantJS = `[{"model":"model-a","n_conversations":2,"n_replies":2,"n_benchmarks":2},{"model":"model-b","n_conversations":1,"n_replies":1,"n_benchmarks":1}]`
			} else if len(tc.lines) == 1 {
				wantJS = `[{"model":"model-a","n_conversations":2,"n_replies":3,"n_benchmarks":1}]`
			}
			if string(shape.SafetyStops) != wantJS {
				t.Errorf("summary --json safety_stops = %s, want %s", shape.SafetyStops, wantJS)
			}
		})
	}
}
