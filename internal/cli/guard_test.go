package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	"go.uber.org/goleak"
)

// finishedProject is one `impactbench init` project after a complete
// offline `run example`, built once and copied for every case.
// builtProject says finishedProject was built (TestMain removes it).
var builtProject bool

var finishedProject = sync.OnceValues(func() (string, error) {
	builtProject = true
	dir, err := os.MkdirTemp("", "impactbench-guard-")
	if err != nil {
		return "", err
	}
	var out, errb bytes.Buffer
	if code := Main([]string{"init", dir}, strings.NewReader(""), &out, &errb); code != 0 {
		return "", &fs.PathError{Op: "init", Path: dir, Err: fs.ErrInvalid}
	}
	if code := Main([]string{"--config", filepath.Join(dir, "config.yaml"), "run", "example"}, strings.NewReader(""), &out, &errb); code != 0 {
		return "", &fs.PathError{Op: "run example: " + errb.String(), Path: dir, Err: fs.ErrInvalid}
	}
	return dir, nil
})

// studyProject returns a fresh copy of the finished project with the
// study's inputs that init --study drafts (taxonomy, models, label).
func studyProject(t *testing.T) string {
	t.Helper()
	dir := copyProject(t)
	if code, _, errs := run(t, dir, "init", "--study", dir); code != 0 {
		t.Fatalf("init --study: exit %d\n%s", code, errs)
	}
	return dir
}

// copyProject returns a fresh copy of the finished project.
func copyProject(t *testing.T) string {
	t.Helper()
	src, err := finishedProject()
	if err != nil {
		t.Fatal(err)
	}
	dst := t.TempDir()
	err = filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, path)
		target := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(target, b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	return dst
}

// snapshot maps every file under the benchmark directory to its bytes.
func snapshot(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	root := filepath.Join(dir, "benchmarks", "example")
	out := map[string][]byte{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(path)
		rel, _ := filepath.Rel(root, path)
		out[rel] = b
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func assertSameFiles(t *testing.T, before, after map[string][]byte) {
	t.Helper()
	for f, b := range before {
		a, ok := after[f]
		switch {
		case !ok:
			t.Errorf("%s was removed", f)
		case !bytes.Equal(a, b):
			t.Errorf("%s changed", f)
		}
	}
	for f := range after {
		if _, ok := before[f]; !ok {
			t.Errorf("%s was created", f)
		}
	}
}

func editFile(t *testing.T, path string, edit func(string) string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	s := edit(string(b))
	if s == string(b) {
		t.Fatalf("edit of %s changed nothing", path)
	}
	if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}

func editConfig(t *testing.T, dir string, edit func(string) string) {
	editFile(t, filepath.Join(dir, "config.yaml"), edit)
}

func benchFile(dir string, rel ...string) string {
	return filepath.Join(append([]string{dir, "benchmarks", "example"}, rel...)...)
}

// The scaffold's blocks that the cases below remove or replace.
const (
	judgeBlock   = "evaluator_model:\n  model: offline-judge\n  source: offline\n"
	targetsBlock = "targets:\n  - id: offline-careful\n"
)

func dropJudge(s string) string { return strings.Replace(s, judgeBlock, "", 1) }

// keepFirstRows rewrites a JSON array file with only its first n rows.
func keepFirstRows(t *testing.T, path string, n int) {
	t.Helper()
	var rows []json.RawMessage
	if err := json.Unmarshal(readBytes(t, path), &rows); err != nil {
		t.Fatal(err)
	}
	b, _ := json.MarshalIndent(rows[:n], "", "  ")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

func readBytes(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestBadInputNeverDestroysResults: a config or file that cannot produce a
// result, or would produce less than the files hold, stops the command with
// exit 2 naming the cause, before any phase runs, and every file of the
// finished benchmark stays byte-identical.
func TestBadInputNeverDestroysResults(t *testing.T) {
	cases := []struct {
		name  string
		setup func(t *testing.T, dir string)
		args  []string
		want  []string // regexps the output must match
	}{
		{"no judge: run", func(t *testing.T, d string) { editConfig(t, d, dropJudge) },
			[]string{"run", "example"}, []string{`config\.yaml: evaluator_model: required to evaluate`}},
		{"no judge: run --force", func(t *testing.T, d string) { editConfig(t, d, dropJudge) },
			[]string{"run", "example", "--force"}, []string{`evaluator_model: required`}},
		{"no judge: evaluate", func(t *testing.T, d string) { editConfig(t, d, dropJudge) },
			[]string{"evaluate", "example"}, []string{`config\.yaml: evaluator_model: required`}},
		{"no judge: evaluate one target", func(t *testing.T, d string) { editConfig(t, d, dropJudge) },
			[]string{"evaluate", "example", "offline-careful"}, []string{`evaluator_model: required`}},
		{"no judge: dry run", func(t *testing.T, d string) { editConfig(t, d, dropJudge) },
			[]string{"run", "example", "--dry-run"}, []string{`evaluator_model: required`}},
		{"judge list emptied", func(t *testing.T, d string) {
			editConfig(t, d, func(s string) string { return strings.Replace(s, judgeBlock, "evaluator_model: null\n", 1) })
		}, []string{"run", "example"}, []string{`evaluator_model: required`}},
		{"targets: []", func(t *testing.T, d string) {
			editConfig(t, d, func(s string) string {
				return strings.Replace(s, targetsBlock, "targets: []\nx-old:\n  - id: offline-careful\n", 1)
			})
		}, []string{"run", "example"}, []string{`config\.yaml: targets: no targets`}},
		{"no targets key", func(t *testing.T, d string) {
			editConfig(t, d, func(s string) string { return strings.Replace(s, targetsBlock, "x-old:\n  - id: offline-careful\n", 1) })
		}, []string{"run", "example"}, []string{`config\.yaml: targets: no targets`}},
		{"no targets: simulate", func(t *testing.T, d string) {
			editConfig(t, d, func(s string) string {
				return strings.Replace(s, targetsBlock, "targets: []\nx-old:\n  - id: offline-careful\n", 1)
			})
		}, []string{"simulate", "example"}, []string{`targets: no targets`}},
		{"no targets: evaluate", func(t *testing.T, d string) {
			editConfig(t, d, func(s string) string {
				return strings.Replace(s, targetsBlock, "targets: []\nx-old:\n  - id: offline-careful\n", 1)
			})
		}, []string{"evaluate", "example"}, []string{`targets: no targets`}},
		{"no user model", func(t *testing.T, d string) {
			editConfig(t, d, func(s string) string {
				return strings.Replace(s, "user_model:\n  model: offline-user\n  source: offline\n", "", 1)
			})
		}, []string{"simulate", "example"}, []string{`config\.yaml: user_model: required`}},
		{"scenarios.json emptied: run", func(t *testing.T, d string) {
			editFile(t, benchFile(d, "scenarios.json"), func(string) string { return "[]" })
		}, []string{"run", "example"}, []string{`scenarios\.json holds no scenarios`, `gen-scenarios example --force`}},
		{"scenarios.json emptied: run --force is still refused by simulate", func(t *testing.T, d string) {
			editFile(t, benchFile(d, "scenarios.json"), func(string) string { return "[]" })
		}, []string{"simulate", "example", "--force"}, []string{`scenarios\.json holds no scenarios`}},
		{"scenarios.json emptied: simulate", func(t *testing.T, d string) {
			editFile(t, benchFile(d, "scenarios.json"), func(string) string { return "[]" })
		}, []string{"simulate", "example", "offline-careful"}, []string{`scenarios\.json holds no scenarios`}},
		{"scenarios.json halved", func(t *testing.T, d string) { keepFirstRows(t, benchFile(d, "scenarios.json"), 4) },
			[]string{"run", "example"}, []string{`refusing to replace \S*runs/offline-care\w+/conversations\.json: it holds 16 rows, the new one would hold 8`, `--accept-fewer`}},
		// The simulated user's audit turned off: the conversations it found
		// invalid would be judged and counted (audited rows would be lost).
		{"audit turned off: simulate", func(t *testing.T, d string) {
			editConfig(t, d, func(s string) string { return strings.Replace(s, "\n  audit: true ", "\n  audit: false", 1) })
		}, []string{"simulate", "example", "offline-careless"}, []string{`conversations\.json: 16 of its conversations carry the audit of the simulated user, the new one would carry none`, `--accept-fewer`}},
		{"num_samples lowered", func(t *testing.T, d string) {
			editConfig(t, d, func(s string) string { return strings.Replace(s, "num_samples: 2", "num_samples: 1", 1) })
		}, []string{"simulate", "example", "offline-careless"}, []string{`conversations\.json: it holds 16 rows, the new one would hold 8 \(scenarios\.json or generation\.num_samples shrank\)`}},
		{"scenarios_per_metric lowered", func(t *testing.T, d string) {
			editConfig(t, d, func(s string) string {
				return strings.Replace(s, "scenarios_per_metric: 2", "scenarios_per_metric: 1", 1)
			})
		}, []string{"run", "example"}, []string{`refusing to replace \S*scenarios\.json: it holds 8 rows, the new one would hold 4`}},
		{"conversations.json shrunk under scores", func(t *testing.T, d string) {
			keepFirstRows(t, benchFile(d, "runs", "offline-careful", "conversations.json"), 3)
		}, []string{"evaluate", "example", "offline-careful"}, []string{`refusing to replace \S*scores\.json: it holds 16 rows, the new one would hold 3`}},
		{"a target's scores removed", func(t *testing.T, d string) {
			if err := os.Remove(benchFile(d, "runs", "offline-careless", "scores.json")); err != nil {
				t.Fatal(err)
			}
		}, []string{"aggregate", "example"}, []string{`refusing to replace \S*results\.json: it holds 2 models, the new one would hold 1, and offline-careless is missing \(had n_total 16\)`}},
		{"unknown target on the command line", func(t *testing.T, d string) {
			if err := os.Remove(benchFile(d, "scenarios.json")); err != nil {
				t.Fatal(err)
			}
		}, []string{"run", "example", "offline-careful", "nosuchtarget"}, []string{`target "nosuchtarget" is not in \S*config\.yaml \(targets: offline-careful, offline-careless\)`}},
		{"target without a key", func(t *testing.T, d string) {
			editConfig(t, d, func(s string) string {
				return strings.Replace(s, targetsBlock, "targets:\n  - {id: haiku, model: claude-haiku-4-5, source: anthropic}\n  - id: offline-careful\n", 1)
			})
		}, []string{"run", "example"}, []string{`config\.yaml: targets\[0\]: .*API key is empty`}},
		{"unset variable in the judge's key", func(t *testing.T, d string) {
			editConfig(t, d, func(s string) string {
				return strings.Replace(s, judgeBlock, "evaluator_model:\n  model: claude-haiku-4-5\n  source: anthropic\n  apikey: \"${IB_GUARD_TEST_UNSET}\"\n", 1)
			})
		}, []string{"evaluate", "example"}, []string{`config\.yaml:\d+:\d+: evaluator_model\.apikey: environment variable IB_GUARD_TEST_UNSET is not set`}},
		{"unset variable in the generator's key, scenarios to regenerate", func(t *testing.T, d string) {
			editConfig(t, d, func(s string) string {
				s = strings.Replace(s, "scenarios_per_metric: 2", "scenarios_per_metric: 3", 1)
				return strings.Replace(s, "# generator_model:\n#   model: claude-sonnet-4-6\n#   source: anthropic\n#   apikey: \"${ANTHROPIC_API_KEY}\"",
					"generator_model:\n  model: claude-sonnet-4-6\n  source: anthropic\n  apikey: \"${IB_GUARD_TEST_UNSET}\"", 1)
			})
		}, []string{"run", "example"}, []string{`generator_model\.apikey: environment variable IB_GUARD_TEST_UNSET is not set`}},
		{"audit model without a key", func(t *testing.T, d string) {
			editConfig(t, d, func(s string) string {
				return strings.Replace(s, "# landmark_model:\n#   model: gpt-5.4-mini\n#   source: openai\n#   apikey: \"${OPENAI_API_KEY}\"",
					"landmark_model:\n  model: claude-haiku-4-5\n  source: anthropic", 1)
			})
		}, []string{"simulate", "example"}, []string{`config\.yaml: landmark_model: .*API key is empty`}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := copyProject(t)
			tc.setup(t, dir)
			before := snapshot(t, dir)
			code, out, errs := run(t, dir, tc.args...)
			if code != ExitUsage {
				t.Fatalf("%v: exit %d, want %d\n%s%s", tc.args, code, ExitUsage, out, errs)
			}
			for _, w := range tc.want {
				if !regexp.MustCompile(w).MatchString(errs) {
					t.Errorf("stderr does not match %q:\n%s", w, errs)
				}
			}
			// Nothing started: no phase printed progress or a result.
			// A preflight failure comes before any phase looks at its
			// inputs; a refused overwrite after it has compared them.
			if !strings.Contains(errs, "refusing to replace") {
				if m := regexp.MustCompile(`inputs changed|\[skip\]`).FindString(errs); m != "" {
					t.Errorf("a phase started before the check (%q in stderr):\n%s", m, errs)
				}
			}
			// Nothing ran: no phase reported a result.
			if m := regexp.MustCompile(`(generated|simulated|evaluated) \d|report: `).FindString(errs); m != "" {
				t.Errorf("a phase ran before the refusal (%q in stderr):\n%s", m, errs)
			}
			assertSameFiles(t, before, snapshot(t, dir))
		})
	}
}

// TestAcceptFewerAcceptsFewerRows: the refusals above are overridable
// (with --accept-fewer; --force is a redo and is refused the same way:
// TestShrinkNeedsAcceptFewer).
func TestAcceptFewerAcceptsFewerRows(t *testing.T) {
	dir := copyProject(t)
	editConfig(t, dir, func(s string) string { return strings.Replace(s, "num_samples: 2", "num_samples: 1", 1) })
	if code, out, errs := run(t, dir, "run", "example", "--accept-fewer"); code != 0 {
		t.Fatalf("run --accept-fewer: exit %d\n%s%s", code, out, errs)
	}
	var rows []json.RawMessage
	if err := json.Unmarshal(readBytes(t, benchFile(dir, "runs", "offline-careful", "scores.json")), &rows); err != nil || len(rows) != 8 {
		t.Fatalf("scores.json after run --accept-fewer: %d rows (%v), want 8", len(rows), err)
	}
}

// TestAcceptFewerAcceptsUnauditedConversations: turning the audit off is
// refused above; --accept-fewer lets the unaudited conversations through.
func TestAcceptFewerAcceptsUnauditedConversations(t *testing.T) {
	dir := copyProject(t)
	editConfig(t, dir, func(s string) string { return strings.Replace(s, "\n  audit: true ", "\n  audit: false", 1) })
	if code, out, errs := run(t, dir, "simulate", "example", "offline-careless", "--accept-fewer"); code != 0 {
		t.Fatalf("simulate --accept-fewer: exit %d\n%s%s", code, out, errs)
	}
	if b := readBytes(t, benchFile(dir, "runs", "offline-careless", "conversations.json")); bytes.Contains(b, []byte(`"judge": "offline-judge"`)) {
		t.Errorf("conversations.json still carries audits after the audit was turned off")
	}
}

// TestAggregateNeedsNoJudge: reading finished runs needs no model.
func TestAggregateNeedsNoJudge(t *testing.T) {
	dir := copyProject(t)
	editConfig(t, dir, dropJudge)
	if code, out, errs := run(t, dir, "aggregate", "example"); code != 0 {
		t.Fatalf("aggregate without a judge: exit %d\n%s%s", code, out, errs)
	}
}

// TestKeysNeverPrinted: a preflight failure of a model with a key names the
// field, never the key.
func TestKeysNeverPrinted(t *testing.T) {
	dir := copyProject(t)
	const secret = "sk-guard-test-0123456789abcdef"
	editConfig(t, dir, func(s string) string {
		return strings.Replace(s, targetsBlock, "targets:\n  - {id: bad, model: m, source: openai_compatible, base_url: \"not a url\", apikey: \""+secret+"\"}\n  - id: offline-careful\n", 1)
	})
	code, out, errs := run(t, dir, "run", "example")
	if code != ExitUsage || !strings.Contains(errs, "targets[0]") || !strings.Contains(errs, "base_url") {
		t.Fatalf("exit %d, want 2 naming targets[0] and base_url:\n%s", code, errs)
	}
	if strings.Contains(out+errs, secret) {
		t.Fatalf("the key was printed:\n%s%s", out, errs)
	}
}

// TestRunForceKeepsMetrics: `run --force` regenerates scenarios and runs
// but never the metrics benchmark.yaml holds, and says how to replace them.
func TestRunForceKeepsMetrics(t *testing.T) {
	dir := copyProject(t)
	before := readBytes(t, benchFile(dir, "benchmark.yaml"))
	code, out, errs := run(t, dir, "run", "example", "--force")
	if code != 0 {
		t.Fatalf("run --force: exit %d\n%s%s", code, out, errs)
	}
	if !bytes.Equal(before, readBytes(t, benchFile(dir, "benchmark.yaml"))) {
		t.Error("run --force rewrote benchmark.yaml")
	}
	if !strings.Contains(errs, "already has 2 metrics; kept (`impactbench gen-metrics example --force` replaces them, keeping a backup)") {
		t.Errorf("the skip line does not say how metrics are replaced:\n%s", errs)
	}
	if !strings.Contains(errs, "generated 8 scenarios") {
		t.Errorf("run --force did not regenerate the scenarios:\n%s", errs)
	}
	if m, _ := filepath.Glob(benchFile(dir, "benchmark.yaml.bak-*")); len(m) != 0 {
		t.Errorf("run --force left backups %v", m)
	}
}

// TestGenMetricsForceKeepsBackup: gen-metrics --force replaces the metrics
// and keeps the previous file byte for byte; a second one keeps both.
func TestGenMetricsForceKeepsBackup(t *testing.T) {
	dir := copyProject(t)
	before := readBytes(t, benchFile(dir, "benchmark.yaml"))
	for i := 1; i <= 2; i++ {
		code, out, errs := run(t, dir, "gen-metrics", "example", "--force")
		if code != 0 {
			t.Fatalf("gen-metrics --force: exit %d\n%s%s", code, out, errs)
		}
		baks, _ := filepath.Glob(benchFile(dir, "benchmark.yaml.bak-*"))
		if len(baks) != i {
			t.Fatalf("after %d gen-metrics --force: backups %v, want %d", i, baks, i)
		}
		if i == 1 {
			if !bytes.Equal(readBytes(t, baks[0]), before) {
				t.Error("the backup is not the previous benchmark.yaml")
			}
			if !strings.Contains(errs, "the previous file is saved as "+baks[0]) {
				t.Errorf("the backup is not announced:\n%s", errs)
			}
		}
	}
	if bytes.Equal(before, readBytes(t, benchFile(dir, "benchmark.yaml"))) {
		t.Error("gen-metrics --force did not replace the metrics")
	}
}

func TestMain(m *testing.M) {
	code := m.Run()
	// The commands start goroutines (progress, fan-outs over targets): each
	// must end with the command that started it.
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "goleak:", err)
			code = 1
		}
	}
	if builtProject {
		if dir, err := finishedProject(); err == nil {
			os.RemoveAll(dir)
		}
	}
	os.Exit(code)
}

// TestRunAllChecksEveryBenchmarkFirst: `run all` checks every benchmark
// before the first one runs, so a mistake in the last one (here: an emptied
// scenarios.json) stops it before anything is written or paid.
func TestRunAllChecksEveryBenchmarkFirst(t *testing.T) {
	dir := copyProject(t)
	zz := filepath.Join(dir, "benchmarks", "zz")
	if err := os.MkdirAll(zz, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(zz, "benchmark.yaml"), readBytes(t, benchFile(dir, "benchmark.yaml")), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(zz, "scenarios.json"), []byte("[]"), 0o644); err != nil {
		t.Fatal(err)
	}
	before := snapshot(t, dir)
	code, out, errs := run(t, dir, "run", "all")
	if code != ExitUsage || !strings.Contains(errs, filepath.Join(zz, "scenarios.json")+" holds no scenarios") {
		t.Fatalf("run all: exit %d, want 2 naming zz/scenarios.json\n%s%s", code, out, errs)
	}
	if m := regexp.MustCompile(`\[skip\]|(generated|simulated|evaluated) \d|report: `).FindString(errs); m != "" {
		t.Errorf("a benchmark ran before the check (%q in stderr):\n%s", m, errs)
	}
	assertSameFiles(t, before, snapshot(t, dir))
	if m, _ := filepath.Glob(filepath.Join(zz, "*")); len(m) != 2 {
		t.Errorf("files written for the unchecked benchmark: %v", m)
	}
}
