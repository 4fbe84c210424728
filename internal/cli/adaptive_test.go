package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/impactbench/impactbench/internal/adaptive"
	"github.com/impactbench/impactbench/internal/adaptrun"
	"github.com/impactbench/impactbench/internal/config"
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
	before := projectTree(t, dir)
	code, out, errs := run(t, dir, "run", "all", "--adaptive", "--dry-run")
	if code != 0 {
		t.Fatalf("--adaptive --dry-run: exit %d\n%s", code, errs)
	}
	for _, want := range []string{"adaptive study bill:", "every metric stops after round 1:", "expected:", "95th percentile:", "worst case (every metric at Max):",
		"expected from: 200 replays of July 2026 (the published July 2026 study", "no model was called"} {
		if !strings.Contains(out+errs, want) {
			t.Errorf("--adaptive --dry-run does not print %q:\n%s", want, out)
		}
	}
	// 2 metrics × 2 variants × 2 samples × 2 targets: 16 per round-1 base scenario, 6 at most.
	// July's metrics went 99.8 % of the way to the cap: 16 + 0.998 × 80.
	flat := strings.Join(strings.Fields(out), " ")
	if !strings.Contains(flat, "every metric stops after round 1: 16 conversations") || !strings.Contains(flat, "expected: 96 conversations") ||
		!strings.Contains(flat, "worst case (every metric at Max): 96 conversations") || strings.Contains(flat, "this study so far") {
		t.Errorf("--adaptive --dry-run bill:\n%s", out)
	}
	if after := projectTree(t, dir); !maps.Equal(before, after) {
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
	// The dry run of a study with rows adds the bill from its own rounds.
	before = projectTree(t, dir)
	code, out, errs = run(t, dir, "run", "all", "--adaptive", "--dry-run")
	if flat := strings.Join(strings.Fields(out), " "); code != 0 || !strings.Contains(flat, "this study so far: look 6 of 6,") || !strings.Contains(flat, "stopped: nothing more to run") {
		t.Errorf("--adaptive --dry-run of a finished study: exit %d\n%s%s", code, out, errs)
	}
	if after := projectTree(t, dir); !maps.Equal(before, after) {
		t.Error("--adaptive --dry-run of a finished study changed the project's files")
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
	before := projectTree(t, dir)
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
	if after := projectTree(t, dir); !maps.Equal(before, after) {
		t.Error("a refused --adaptive changed the project's files")
	}
}

// TestAdaptiveFlagsOverrideConfig: each design flag and its run.adaptive
// key, both ways: a typed flag wins (also --adaptive=false over
// run.adaptive: true), an untyped one takes config's value, and a number
// config leaves unset keeps the flag's default; afterwards both agree.
func TestAdaptiveFlagsOverrideConfig(t *testing.T) {
	values := map[string][2]string{"adaptive": {"false", "true"}, "adaptive-start": {"2", "3"}, "adaptive-max": {"4", "5"}, "adaptive-seed": {"7", "9"}}
	defaults := map[string]string{"adaptive": "false", "adaptive-start": "1", "adaptive-max": "0", "adaptive-seed": "0"}
	for _, s := range (&adaptiveFlags{}).configured(&config.Config{}) {
		vs, ok := values[s.flag]
		if !ok {
			t.Fatalf("--%s (%s): add its two values to this test", s.flag, s.key)
		}
		for _, cfgV := range []string{"", vs[0], vs[1]} {
			for _, flagV := range []string{"", vs[0], vs[1]} {
				want := defaults[s.flag]
				if cfgV != "" {
					want = cfgV
				}
				if flagV != "" {
					want = flagV
				}
				t.Run(fmt.Sprintf("%s=%s/--%s=%s", s.key, cfgV, s.flag, flagV), func(t *testing.T) {
					cfg := &config.Config{}
					a := &adaptiveFlags{}
					for _, c := range a.configured(cfg) {
						if c.key == s.key && cfgV != "" {
							if _, err := fmt.Sscan(cfgV, c.cfgVal); err != nil {
								t.Fatal(err)
							}
						}
					}
					cmd := &cobra.Command{Use: "x"}
					a.add(cmd)
					var args []string
					if flagV != "" {
						args = []string{"--" + s.flag + "=" + flagV}
					}
					if err := cmd.ParseFlags(args); err != nil {
						t.Fatal(err)
					}
					a.resolve(cfg)
					a.resolve(cfg) // idempotent
					for _, c := range a.configured(cfg) {
						if c.key != s.key {
							continue
						}
						if got, gotCfg := fmt.Sprint(reflect.ValueOf(c.flagVal).Elem()), fmt.Sprint(reflect.ValueOf(c.cfgVal).Elem()); got != want || gotCfg != want {
							t.Errorf("after resolve: --%s = %s, %s = %s; want %s", s.flag, got, s.key, gotCfg, want)
						}
					}
				})
			}
		}
	}
}

// TestRunAdaptiveFromConfig: run.adaptive in config.yaml asks `run all`
// for the adaptive design (the dry run prints its bill), --adaptive=false
// turns it off for one run, and a single benchmark under run.adaptive:
// true is exit 2 naming the key and the way out.
func TestRunAdaptiveFromConfig(t *testing.T) {
	dir := adaptiveProject(t)
	cfgPath := filepath.Join(dir, "config.yaml")
	b, _ := os.ReadFile(cfgPath)
	b = bytes.Replace(b, []byte("  concurrency: auto\n"), []byte("  concurrency: auto\n  adaptive: {max: 4}\n"), 1)
	if err := os.WriteFile(cfgPath, b, 0o644); err != nil {
		t.Fatal(err)
	}
	before := projectTree(t, dir)
	code, out, errs := run(t, dir, "run", "all", "--dry-run")
	// 2 metrics × 2 variants × 2 samples × 2 targets × 4 base scenarios.
	if code != 0 || !strings.Contains(out, "adaptive study bill:") || !strings.Contains(strings.Join(strings.Fields(out), " "), "worst case (every metric at Max): 64 conversations") {
		t.Errorf("run all --dry-run under run.adaptive {max: 4}: exit %d\n%s%s", code, out, errs)
	}
	if code, out, _ := run(t, dir, "run", "all", "--dry-run", "--adaptive-max", "5"); code != 0 || !strings.Contains(strings.Join(strings.Fields(out), " "), "worst case (every metric at Max): 80 conversations") {
		t.Errorf("--adaptive-max 5 over run.adaptive.max 4: exit %d\n%s", code, out)
	}
	if code, out, errs := run(t, dir, "run", "all", "--dry-run", "--adaptive=false"); code != 0 || strings.Contains(out, "adaptive study bill") {
		t.Errorf("--adaptive=false over run.adaptive: exit %d\n%s%s", code, out, errs)
	}
	if code, _, errs := run(t, dir, "run", "example", "--dry-run"); code != ExitUsage || !strings.Contains(errs, "run.adaptive in config.yaml (--adaptive=false turns it off") {
		t.Errorf("run example under run.adaptive: exit %d\n%s", code, errs)
	}
	if after := projectTree(t, dir); !maps.Equal(before, after) {
		t.Error("dry runs changed the project's files")
	}
	b = bytes.Replace(b, []byte("adaptive: {max: 4}"), []byte("adaptive: {max: four}"), 1)
	if err := os.WriteFile(cfgPath, b, 0o644); err != nil {
		t.Fatal(err)
	}
	if code, _, errs := run(t, dir, "run", "all", "--dry-run"); code != ExitUsage || !strings.Contains(errs, "config.yaml:") || !strings.Contains(errs, "run.adaptive.max: expected an integer") {
		t.Errorf("run.adaptive.max: four: exit %d\n%s", code, errs)
	}
}

// TestRunAdaptiveJSON: `run all --adaptive --json` and its dry run write
// one object of docs/json.md's "run --adaptive" shape: the study's run
// object and the adaptive study's rounds, each metric's base scenarios and
// stop reason, and (dry run) the bill.
func TestRunAdaptiveJSON(t *testing.T) {
	doc := jsonDoc(t)
	dir := adaptiveProject(t)
	code, out, errs := run(t, dir, "run", "all", "--adaptive", "--dry-run", "--json")
	if code != 0 {
		t.Fatalf("--dry-run --json: exit %d\n%s", code, errs)
	}
	obj := checkShape(t, "dry run", doc, "run --adaptive", decodeJSON(t, "dry run", out))
	ad := checkShape(t, "dry run", doc, "run --adaptive.adaptive", obj["adaptive"])
	bill := checkShape(t, "dry run", doc, "run --adaptive.adaptive.bill", ad["bill"])
	if bill["first"] != 16.0 || bill["worst"] != 96.0 || bill["expected"].(float64) < 90 || !strings.Contains(bill["expected_from"].(string), "July 2026") || ad["stopped"] != nil {
		t.Errorf("dry run's adaptive object: %v", ad)
	}

	code, out, errs = run(t, dir, "run", "all", "--adaptive", "--no-report", "--json")
	if code != 0 {
		t.Fatalf("--adaptive --json: exit %d\n%s", code, errs)
	}
	obj = checkShape(t, "run", doc, "run --adaptive", decodeJSON(t, "run", out))
	ad = checkShape(t, "run", doc, "run --adaptive.adaptive", obj["adaptive"])
	rounds, _ := ad["rounds"].([]any)
	metrics, _ := ad["metrics"].([]any)
	if len(rounds) < 2 || len(metrics) != 2 || ad["bill"] != nil || ad["stopped"] == nil || !strings.HasPrefix(ad["message"].(string), "adaptive study: stopped after") {
		t.Fatalf("--adaptive --json: %v", ad)
	}
	for i, r := range rounds {
		round := checkShape(t, "run", doc, "run --adaptive.adaptive.rounds[]", r)
		if round["round"] != float64(i+1) {
			t.Errorf("round %d is numbered %v", i+1, round["round"])
		}
	}
	careful := basesByMetric(t, filepath.Join(dir, "benchmarks", "example", "runs", "offline-careful", "scores.json"))
	for _, m := range metrics {
		metric := checkShape(t, "run", doc, "run --adaptive.adaptive.metrics[]", m)
		id := metric["metric"].(string)
		if metric["base_scenarios"] != float64(len(careful[id])) || !slices.Contains([]string{"decided", "max", "out of reach"}, metric["reason"].(string)) {
			t.Errorf("metric %s: %v; scores.json has %d base scenarios", id, metric, len(careful[id]))
		}
	}
}

// TestAdaptiveFlagOverrideDocumented: docs/config.md says, on each
// run.adaptive key's row, that its flag overrides it either way, and
// docs/commands.md names every pair under "both directions".
func TestAdaptiveFlagOverrideDocumented(t *testing.T) {
	cfgDoc, cmdDoc := readDoc(t, "config.md"), readDoc(t, "commands.md")
	before, both, ok := strings.Cut(cmdDoc, "in both directions")
	if !ok {
		t.Fatal("docs/commands.md no longer says flags override config in both directions")
	}
	promise := before[max(0, len(before)-400):] + both[:min(len(both), 300)]
	for _, s := range (&adaptiveFlags{}).configured(&config.Config{}) {
		row := ""
		for line := range strings.Lines(cfgDoc) {
			if strings.HasPrefix(line, "| `"+s.key+"` |") {
				row = line
			}
		}
		if !strings.Contains(row, "`--"+s.flag+"`") || !strings.Contains(row, "overrides it either way") {
			t.Errorf("docs/config.md's row for %s does not say --%s overrides it either way: %q", s.key, s.flag, row)
		}
		key := strings.TrimPrefix(s.key, "run.adaptive.")
		if !strings.Contains(promise, "`--"+s.flag+"`") || !strings.Contains(promise, "`"+key+"`") {
			t.Errorf("docs/commands.md's override sentence does not name --%s and %s", s.flag, s.key)
		}
	}
}

// TestAdaptiveCostMessage: at the cost ceiling the message says which
// round stopped, that the rounds before it are complete, and how to go
// on; the JSON object carries it with the stop.
func TestAdaptiveCostMessage(t *testing.T) {
	last := &adaptive.Round{Look: 2, Looks: 6, Conversations: 32, Targets: []adaptive.Target{{Bench: "b", Metric: "m", Have: 2, Want: 3}}}
	res := &adaptrun.Result{Rounds: 3, Stopped: adaptrun.StoppedCost, Last: last}
	msg := adaptiveMessage(res)
	for _, want := range []string{"the cost ceiling (--max-cost) was reached during round 3 of this run", "the rounds before it are complete (look 2 of 6",
		"round 3 is saved as far as it got: rerun with a higher --max-cost (or none) to finish it and go on"} {
		if !strings.Contains(msg, want) {
			t.Errorf("message lacks %q: %s", want, msg)
		}
	}
	if msg := adaptiveMessage(&adaptrun.Result{Rounds: 1, Stopped: adaptrun.StoppedCost}); !strings.Contains(msg, "no round was complete") {
		t.Errorf("cut in round 1: %s", msg)
	}
	a := newAdaptiveJSON(adaptive.Options{Start: 1, Max: 6})
	a.setResult(res, 6)
	if a.Stopped == nil || *a.Stopped != "cost ceiling" || len(a.Metrics) != 1 || a.Metrics[0].Reason != "cost ceiling" || a.Metrics[0].Next != 3 {
		t.Errorf("JSON at the ceiling: %+v", a)
	}
}
