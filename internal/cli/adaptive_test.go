package cli

import (
	"bytes"
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// adaptiveProject is a fresh offline project with a study's inputs and
// scenarios_per_metric 6: --adaptive's cap (--adaptive-max) is 6.
func adaptiveProject(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if code, _, errs := run(t, dir, "init", dir); code != 0 {
		t.Fatalf("init: %s", errs)
	}
	if code, _, errs := run(t, dir, "init", "--study", dir); code != 0 {
		t.Fatalf("init --study: %s", errs)
	}
	cfgPath := filepath.Join(dir, "config.yaml")
	cfg, _ := os.ReadFile(cfgPath)
	cfg = bytes.Replace(cfg, []byte("scenarios_per_metric: 2"), []byte("scenarios_per_metric: 6"), 1)
	if err := os.WriteFile(cfgPath, cfg, 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// projectFiles is every file under dir and its bytes.
func projectFiles(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		out[p] = string(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// projectTree is every path under dir, directories included (a lock or
// presence file, or an empty directory, shows), with a file's bytes.
func projectTree(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			out[p+"/"] = ""
			return nil
		}
		b, err := os.ReadFile(p)
		out[p] = string(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestRunAdaptiveRefusesShardedJob: in a scheduler's sharded job (a SLURM
// array task, a Kubernetes Indexed Job's pod with a shard count)
// --adaptive is exit 2 before anything is opened: the project tree is
// byte-identical, no lock or presence file, no new directory.
func TestRunAdaptiveRefusesShardedJob(t *testing.T) {
	dir := adaptiveProject(t)
	before := projectTree(t, dir)
	for _, env := range []map[string]string{
		{"SLURM_ARRAY_TASK_ID": "1", "SLURM_ARRAY_TASK_COUNT": "2", "SLURM_ARRAY_TASK_MIN": "0", "SLURM_ARRAY_TASK_MAX": "1"},
		{"JOB_COMPLETION_INDEX": "0", "IMPACTBENCH_SHARDS": "3"},
	} {
		for k, v := range env {
			t.Setenv(k, v)
		}
		for _, args := range [][]string{{"run", "all", "--adaptive"}, {"run", "all", "--adaptive", "--dry-run"}} {
			code, _, errs := run(t, dir, args...)
			if code != ExitUsage || !strings.Contains(errs, "sharded job") {
				t.Errorf("%v under %v: exit %d, want %d naming the sharded job\n%s", args, env, code, ExitUsage, errs)
			}
			after := projectTree(t, dir)
			for p := range after {
				if _, ok := before[p]; !ok {
					t.Errorf("%v under %v created %s", args, env, p)
				}
			}
			if !maps.Equal(before, after) {
				t.Errorf("%v under %v changed the project tree", args, env)
			}
		}
		for k := range env {
			os.Unsetenv(k)
		}
	}
}

// basesByMetric reads a target's scores.json: each metric's base
// scenario ids, sorted.
func basesByMetric(t *testing.T, file string) map[string][]string {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var rows []struct {
		ID     string `json:"id"`
		Metric string `json:"metric_id"`
	}
	if err := json.Unmarshal(b, &rows); err != nil {
		t.Fatal(err)
	}
	out := map[string][]string{}
	for _, r := range rows {
		base := r.ID[:strings.LastIndex(r.ID, "_v")]
		if !slices.Contains(out[r.Metric], base) {
			out[r.Metric] = append(out[r.Metric], base)
		}
	}
	for m := range out {
		slices.Sort(out[m])
	}
	return out
}

// TestRunAdaptive: `run all --adaptive --dry-run` prints the design's
// expected and worst-case bill and writes nothing; `run all --adaptive`
// runs rounds that stop before every metric reaches the cap, every target
// sees the same base scenarios of each metric, and a rerun — also after
// every target's outputs of the last round are lost, as a kill before
// they were written leaves them —
// pays no call.
func TestRunAdaptive(t *testing.T) {
	dir := adaptiveProject(t)
	before := projectFiles(t, dir)
	code, out, errs := run(t, dir, "run", "all", "--adaptive", "--dry-run")
	if code != 0 {
		t.Fatalf("--adaptive --dry-run: exit %d\n%s", code, errs)
	}
	for _, want := range []string{"adaptive study bill:", "every metric stops after round 1:", "expected:", "worst case (every metric at Max):", "no model was called"} {
		if !strings.Contains(out+errs, want) {
			t.Errorf("--adaptive --dry-run does not print %q:\n%s", want, out)
		}
	}
	// 2 metrics × 2 variants × 2 samples × 2 targets: 16 per round-1 base scenario, 6 at most.
	if !strings.Contains(out, "every metric stops after round 1:         16 conversations") || !strings.Contains(out, "worst case (every metric at Max):         96 conversations") {
		t.Errorf("--adaptive --dry-run bill:\n%s", out)
	}
	if after := projectFiles(t, dir); !maps.Equal(before, after) {
		t.Fatal("--adaptive --dry-run changed the project's files")
	}

	code, _, errs = run(t, dir, "run", "all", "--adaptive", "--no-report")
	if code != 0 || !strings.Contains(errs, "adaptive study: stopped after") {
		t.Fatalf("--adaptive: exit %d\n%s", code, errs)
	}
	runs := filepath.Join(dir, "benchmarks", "example", "runs")
	careful := basesByMetric(t, filepath.Join(runs, "offline-careful", "scores.json"))
	careless := basesByMetric(t, filepath.Join(runs, "offline-careless", "scores.json"))
	if !reflect.DeepEqual(careful, careless) {
		t.Errorf("the targets saw different base scenarios: %v and %v", careful, careless)
	}
	total := 0
	for m, ids := range careful {
		if len(ids) < 1 || len(ids) > 6 {
			t.Errorf("metric %s has %d base scenarios, want 1 to 6", m, len(ids))
		}
		total += len(ids)
	}
	if len(careful) != 2 || total >= 12 {
		t.Errorf("the adaptive run did not stop early: %v (12 base scenarios is every metric at the cap)", careful)
	}

	set := filepath.Join(dir, "benchmarks", "example", "scenarios.json")
	grown, _ := os.ReadFile(set)
	code, _, errs = run(t, dir, "run", "all", "--adaptive", "--no-report")
	if code != 0 || !strings.Contains(errs, "spent now: $0.0000 (0 calls,") {
		t.Errorf("a rerun of a finished adaptive study paid calls: exit %d\n%s", code, errs)
	}
	// A kill after the last round grew the set, before any target's
	// conversations were written: the set is the grown one, no output is.
	for _, target := range []string{"offline-careful", "offline-careless"} {
		for _, f := range []string{"conversations.json", "scores.json"} {
			if err := os.Remove(filepath.Join(runs, target, f)); err != nil {
				t.Fatal(err)
			}
		}
	}
	code, _, errs = run(t, dir, "run", "all", "--adaptive", "--no-report")
	if code != 0 || !strings.Contains(errs, "spent now: $0.0000 (0 calls,") {
		t.Errorf("resuming an adaptive study whose outputs were lost paid calls again: exit %d\n%s", code, errs)
	}
	if again, _ := os.ReadFile(set); !bytes.Equal(grown, again) {
		t.Error("resuming changed the scenario set")
	}
	for _, target := range []string{"offline-careful", "offline-careless"} {
		if got := basesByMetric(t, filepath.Join(runs, target, "scores.json")); !reflect.DeepEqual(got, careful) {
			t.Errorf("resumed %s's base scenarios %v, want %v", target, got, careful)
		}
	}
}

// TestRunAdaptiveRefuses: --adaptive with what it cannot do is exit 2
// naming the flag or argument, and writes nothing.
func TestRunAdaptiveRefuses(t *testing.T) {
	dir := adaptiveProject(t)
	before := projectFiles(t, dir)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"run", "all", "--adaptive", "--shard", "0/2"}, "--shard"},
		{[]string{"run", "all", "--adaptive", "--until", "0.05"}, "--until"},
		{[]string{"run", "example", "--adaptive"}, "run all --adaptive"},
		{[]string{"run", "all", "offline-careful", "--adaptive"}, "target arguments"},
		{[]string{"run", "all", "--adaptive", "--adaptive-start", "3", "--adaptive-max", "2"}, "Max"},
	} {
		code, _, errs := run(t, dir, c.args...)
		if code != ExitUsage || !strings.Contains(errs, c.want) {
			t.Errorf("%v: exit %d, want %d naming %q\n%s", c.args, code, ExitUsage, c.want, errs)
		}
	}
	if err := os.Remove(filepath.Join(dir, "benchmarks", "taxonomy.json")); err != nil {
		t.Fatal(err)
	}
	delete(before, filepath.Join(dir, "benchmarks", "taxonomy.json"))
	if code, _, errs := run(t, dir, "run", "all", "--adaptive"); code != ExitUsage || !strings.Contains(errs, "init --study") {
		t.Errorf("--adaptive without a study: exit %d\n%s", code, errs)
	}
	if after := projectFiles(t, dir); !maps.Equal(before, after) {
		t.Error("a refused --adaptive changed the project's files")
	}
}
