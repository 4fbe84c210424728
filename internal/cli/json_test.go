package cli

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/impactbench/impactbench/internal/adaptive"
	"github.com/impactbench/impactbench/internal/adaptrun"
	"github.com/impactbench/impactbench/internal/benchharness"
	"github.com/impactbench/impactbench/internal/compare"
	"github.com/impactbench/impactbench/internal/plan"
	"github.com/impactbench/impactbench/internal/report"
	"github.com/impactbench/impactbench/internal/results"
	"github.com/impactbench/impactbench/internal/study"
)

// docField is one row of a docs/json.md table.
type docField struct {
	name    string
	omitted bool // the row says the field is omitted in some case
}

var docRow = regexp.MustCompile("^\\| `([a-z0-9_]+)` \\|")

// jsonDoc reads docs/json.md: section heading → its table's fields.
func jsonDoc(t *testing.T) map[string][]docField {
	t.Helper()
	f, err := os.Open(filepath.Join("..", "..", "docs", "json.md"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := map[string][]docField{}
	section := ""
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if h, ok := strings.CutPrefix(line, "## "); ok {
			section = h
			continue
		}
		if m := docRow.FindStringSubmatch(line); m != nil && section != "" {
			out[section] = append(out[section], docField{m[1], strings.Contains(line, "omitted")})
		}
	}
	return out
}

// codeFields lists a struct type's JSON fields and which are omitempty.
func codeFields(typ reflect.Type) (names []string, omitempty map[string]bool) {
	omitempty = map[string]bool{}
	for i := range typ.NumField() {
		f := typ.Field(i)
		tag := f.Tag.Get("json")
		name, opts, _ := strings.Cut(tag, ",")
		if name == "-" || !f.IsExported() {
			continue
		}
		if name == "" && f.Anonymous {
			n, o := codeFields(f.Type)
			names = append(names, n...)
			for k, v := range o {
				omitempty[k] = v
			}
			continue
		}
		names = append(names, name)
		omitempty[name] = strings.Contains(opts, "omitempty")
	}
	return names, omitempty
}

// docShapes ties each section of docs/json.md to the type that writes it
// (nil: a shape without a named type, checked only against output).
var docShapes = map[string]reflect.Type{
	"error":                             reflect.TypeFor[errorJSON](),
	"error.error":                       reflect.TypeFor[errorBody](),
	"run":                               reflect.TypeFor[runJSON](),
	"run.results[]":                     reflect.TypeFor[modelJSON](),
	"run (study)":                       reflect.TypeFor[runStudyJSON](),
	"run --adaptive":                    reflect.TypeFor[runAdaptiveJSON](),
	"run --adaptive.adaptive":           reflect.TypeFor[adaptiveJSON](),
	"run --adaptive.adaptive.rounds[]":  reflect.TypeFor[adaptrun.LookLog](),
	"run --adaptive.adaptive.metrics[]": reflect.TypeFor[adaptiveMetricJSON](),
	"run --adaptive.adaptive.bill":      reflect.TypeFor[adaptive.Bill](),
	"validate":                          reflect.TypeFor[validateJSON](),
	"compare":                           reflect.TypeFor[compare.Report](),
	"report":                            reflect.TypeFor[reportJSON](),
	"export":                            nil,
	"init":                              reflect.TypeFor[initJSON](),
	"version":                           reflect.TypeFor[versionInfo](),
	"exit-codes[]":                      reflect.TypeFor[exitCodeJSON](),
	"bench":                             reflect.TypeFor[benchharness.Result](),
	"bench --caching":                   reflect.TypeFor[benchharness.CachingResult](),
	"bench --preset cost":               reflect.TypeFor[benchharness.CostResult](),
	"bench --preset adaptive-replay":    reflect.TypeFor[adaptive.Report](),
	"status":                            reflect.TypeFor[report.StatusJSON](),
	"status.targets[]":                  reflect.TypeFor[report.TargetStatusJSON](),
	"status.leaderboard[]":              reflect.TypeFor[report.LeaderboardJSON](),
	"status.simulated_users[]":          reflect.TypeFor[report.ScorecardRow](),
	"status all":                        reflect.TypeFor[report.StudyStatusJSON](),
	"status all.totals":                 reflect.TypeFor[report.StudyTotalsJSON](),
	"plan":                              reflect.TypeFor[plan.PrecisionPlan](),
	"items":                             reflect.TypeFor[itemsJSON](),
	"items.items[]":                     reflect.TypeFor[results.Item](),
	"calibrate[]":                       reflect.TypeFor[calibrationEntry](),
	"calibrate --plan":                  reflect.TypeFor[results.LabelPlan](),
	"calibrate --plan.metrics{}":        reflect.TypeFor[results.MetricPlan](),
	"view":                              reflect.TypeFor[viewJSON](),
	"study":                             reflect.TypeFor[studyJSON](),
	"study.leaderboard[]":               reflect.TypeFor[study.LeaderRow](),
	"publish":                           reflect.TypeFor[publishJSON](),
	"compare --study":                   reflect.TypeFor[compare.StudyReport](),
	"compare --study.rows[]":            reflect.TypeFor[compare.StudyRow](),
}

// TestJSONDocMatchesCode: docs/json.md lists exactly the fields the code
// writes, in the code's order, and says which are omitted.
func TestJSONDocMatchesCode(t *testing.T) {
	doc := jsonDoc(t)
	for section := range doc {
		if _, ok := docShapes[section]; !ok {
			t.Errorf("docs/json.md section %q is not tied to a type in docShapes", section)
		}
	}
	for section, typ := range docShapes {
		fields, ok := doc[section]
		if !ok {
			t.Errorf("docs/json.md has no section %q", section)
			continue
		}
		if typ == nil {
			continue
		}
		names, omit := codeFields(typ)
		var docNames []string
		for _, f := range fields {
			docNames = append(docNames, f.name)
			if f.omitted != omit[f.name] {
				t.Errorf("%s.%s: the doc says omitted=%v, the code's omitempty=%v", section, f.name, f.omitted, omit[f.name])
			}
		}
		if !slices.Equal(docNames, names) {
			t.Errorf("%s: docs/json.md lists %v, the code writes %v", section, docNames, names)
		}
	}
}

// checkShape checks that v (a decoded JSON object) has every field the
// section documents (those that may be omitted, if present) and no other.
func checkShape(t *testing.T, label string, doc map[string][]docField, section string, v any) map[string]any {
	t.Helper()
	obj, ok := v.(map[string]any)
	if !ok {
		t.Fatalf("%s: output is %T, want a JSON object matching %q", label, v, section)
	}
	want := map[string]bool{}
	for _, f := range doc[section] {
		want[f.name] = true
		if _, ok := obj[f.name]; !ok && !f.omitted {
			t.Errorf("%s: field %q (docs/json.md %s) missing", label, f.name, section)
		}
	}
	for k := range obj {
		if !want[k] {
			t.Errorf("%s: field %q is not documented in docs/json.md %s", label, k, section)
		}
	}
	return obj
}

func decodeJSON(t *testing.T, label, s string) any {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		t.Fatalf("%s: output does not parse as JSON: %v\n%s", label, err, s)
	}
	return v
}

// TestJSONEveryCommand runs every command with --json on a finished
// project and checks its output against docs/json.md.
func TestJSONEveryCommand(t *testing.T) {
	doc := jsonDoc(t)
	dir := copyProject(t)
	bench := filepath.Join(dir, "benchmarks", "example")
	cases := []struct {
		name    string
		args    []string
		section string
		check   func(t *testing.T, obj map[string]any)
	}{
		{"run", []string{"run", "example"}, "run", func(t *testing.T, obj map[string]any) { checkRunResults(t, dir, obj) }},
		{"gen-metrics", []string{"gen-metrics", "example"}, "run", nil},
		{"gen-scenarios", []string{"gen-scenarios", "example"}, "run", nil},
		{"simulate", []string{"simulate", "example"}, "run", nil},
		{"evaluate", []string{"evaluate", "example"}, "run", nil},
		{"aggregate", []string{"aggregate", "example"}, "run", func(t *testing.T, obj map[string]any) { checkRunResults(t, dir, obj) }},
		{"dry run", []string{"run", "example", "--dry-run"}, "run", func(t *testing.T, obj map[string]any) {
			if obj["dry_run"] != true || obj["results"] != nil {
				t.Errorf("dry run: dry_run %v, results %v", obj["dry_run"], obj["results"])
			}
		}},
		{"report", []string{"report", "example"}, "report", func(t *testing.T, obj map[string]any) {
			if p, _ := obj["report"].(string); !strings.HasSuffix(p, "report.html") || obj["bytes"].(float64) < 1000 {
				t.Errorf("report: %v", obj)
			}
			res, _ := obj["results"].([]any)
			if len(res) != 2 {
				t.Fatalf("report results: %v", obj["results"])
			}
			checkShape(t, "report results[0]", doc, "run.results[]", res[0])
		}},
		{"compare without -o", []string{"compare", bench, bench}, "compare", func(t *testing.T, obj map[string]any) {
			if m, _ := obj["models"].([]any); len(m) != 2 {
				t.Errorf("compare models: %v", obj["models"])
			}
		}},
		{"export", []string{"export", "example", "-o", filepath.Join(dir, "x.csv")}, "export", nil},
		{"init", []string{"init", filepath.Join(dir, "fresh")}, "init", func(t *testing.T, obj map[string]any) {
			if n, _ := obj["next"].([]any); len(n) == 0 {
				t.Errorf("init next: %v", obj["next"])
			}
		}},
		{"version", []string{"version"}, "version", nil},
		{"status", []string{"status", "example"}, "status", func(t *testing.T, obj map[string]any) {
			ts, _ := obj["targets"].([]any)
			lb, _ := obj["leaderboard"].([]any)
			if len(ts) != 2 || len(lb) != 2 {
				t.Fatalf("status: targets %v, leaderboard %v", obj["targets"], obj["leaderboard"])
			}
			checkShape(t, "status targets[0]", doc, "status.targets[]", ts[0])
			row := checkShape(t, "status leaderboard[0]", doc, "status.leaderboard[]", lb[0])
			if ci, _ := row["positive_ci"].(map[string]any); ci == nil || ci["low"] == nil || ci["method"] == "" {
				t.Errorf("status leaderboard without an interval: %v", row)
			}
		}},
		{"status all", []string{"status", "all"}, "status all", func(t *testing.T, obj map[string]any) {
			bs, _ := obj["benchmarks"].([]any)
			if len(bs) != 1 {
				t.Fatalf("status all: benchmarks %v", obj["benchmarks"])
			}
			checkShape(t, "status all benchmarks[0]", doc, "status", bs[0])
			tot := checkShape(t, "status all totals", doc, "status all.totals", obj["totals"])
			if tot["conversations"] != float64(32) || tot["expected_conversations"] != float64(32) || tot["scores"] != float64(32) {
				t.Errorf("status all totals %v, want 32 of 32 conversations and scores", tot)
			}
		}},
		{"plan", []string{"plan", "example"}, "plan", func(t *testing.T, obj map[string]any) {
			if sc, _ := obj["scopes"].([]any); len(sc) == 0 {
				t.Errorf("plan scopes: %v", obj["scopes"])
			}
		}},
		{"items", []string{"items", "example", "--all"}, "items", func(t *testing.T, obj map[string]any) {
			items, _ := obj["items"].([]any)
			if len(items) == 0 {
				t.Fatalf("items: %v", obj["items"])
			}
			checkShape(t, "items items[0]", doc, "items.items[]", items[0])
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, out, errs := run(t, dir, append(c.args, "--json")...)
			if code != 0 {
				t.Fatalf("%v: exit %d\n%s", c.args, code, errs)
			}
			obj := checkShape(t, c.name, doc, c.section, decodeJSON(t, c.name, out))
			if c.section == "run" {
				if obj["command"] != c.args[0] || obj["benchmark"] != "example" || obj["exit_code"] != 0.0 || obj["error"] != nil {
					t.Errorf("%s: command %v benchmark %v exit_code %v error %v", c.name, obj["command"], obj["benchmark"], obj["exit_code"], obj["error"])
				}
			}
			if c.check != nil {
				c.check(t, obj)
			}
		})
	}

	t.Run("run all", func(t *testing.T) {
		code, out, errs := run(t, dir, "run", "all", "--json")
		if code != 0 {
			t.Fatalf("exit %d\n%s", code, errs)
		}
		obj := checkShape(t, "run all", doc, "run (study)", decodeJSON(t, "run all", out))
		arr, ok := obj["benchmarks"].([]any)
		if !ok || len(arr) != 1 {
			t.Fatalf("run all --json: want a study of one benchmark, got %s", out)
		}
		checkRunResults(t, dir, checkShape(t, "run all.benchmarks[0]", doc, "run", arr[0]))
	})

	t.Run("merge", func(t *testing.T) {
		for _, shard := range []string{"0/2", "1/2"} {
			if code, _, errs := run(t, dir, "run", "example", "--shard", shard); code != 0 {
				t.Fatalf("run --shard %s: exit %d\n%s", shard, code, errs)
			}
		}
		code, out, errs := run(t, dir, "merge", "example", "--json")
		if code != 0 {
			t.Fatalf("merge: exit %d\n%s", code, errs)
		}
		obj := checkShape(t, "merge", doc, "run", decodeJSON(t, "merge", out))
		if m, _ := obj["merged"].([]any); len(m) != 2 {
			t.Errorf("merge: merged %v, want one entry per target", obj["merged"])
		}
		checkRunResults(t, dir, obj)
	})

	t.Run("validate", func(t *testing.T) {
		code, out, errs := run(t, dir, "validate", "example", "--swap", "judge=offline-careful", "--json")
		if code != 0 {
			t.Fatalf("validate: exit %d\n%s", code, errs)
		}
		obj := checkShape(t, "validate", doc, "validate", decodeJSON(t, "validate", out))
		checkShape(t, "validate run", doc, "run", obj["run"])
		checkShape(t, "validate comparison", doc, "compare", obj["comparison"])
		if p, _ := obj["validation_file"].(string); !strings.HasSuffix(p, "validation.json") {
			t.Errorf("validation_file %v", obj["validation_file"])
		}
	})

	// Errors: one JSON line on stderr with the exit code, nothing on stdout.
	errCases := []struct {
		args []string
		code int
		kind string
	}{
		{[]string{"run"}, ExitUsage, KindUsage},
		{[]string{"run", "nope"}, ExitUsage, KindInput},
		{[]string{"compare", bench, filepath.Join(dir, "nowhere")}, ExitUsage, KindInput},
		{[]string{"report", "nope"}, ExitUsage, KindInput},
		{[]string{"--config", filepath.Join(dir, "missing.yaml"), "version", "--bogus"}, ExitUsage, KindUsage},
	}
	for _, c := range errCases {
		code, out, errs := run(t, dir, append(c.args, "--json")...)
		lines := strings.Split(strings.TrimSpace(errs), "\n")
		last := lines[len(lines)-1]
		v := checkShape(t, strings.Join(c.args, " "), doc, "error", decodeJSON(t, "error", last))
		body := checkShape(t, "error body", doc, "error.error", v["error"])
		if code != c.code || body["code"] != float64(c.code) || body["kind"] != c.kind || body["message"] == "" {
			t.Errorf("%v: exit %d, error %v; want code %d kind %s", c.args, code, body, c.code, c.kind)
		}
		if out != "" {
			t.Errorf("%v: a failed command wrote stdout %q", c.args, out)
		}
	}
}

// checkRunResults: a run that aggregated reports every model's pass rates
// with their intervals and leaderboard block, as results.json has them.
func checkRunResults(t *testing.T, dir string, obj map[string]any) {
	t.Helper()
	res, _ := obj["results"].([]any)
	if len(res) != 2 {
		t.Fatalf("results: %v, want the two example targets", obj["results"])
	}
	// The headline comes from the aggregate just run, not from the file:
	// it must say what the file says, in the file's order.
	fromFile, err := readModels(filepath.Join(dir, "benchmarks", "example", "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	want, _ := json.Marshal(fromFile)
	got, _ := json.Marshal(res)
	if !bytes.Equal(normJSON(t, got), normJSON(t, want)) {
		t.Errorf("--json results differ from results.json:\n got %s\nwant %s", got, want)
	}
	var models []string
	for _, r := range res {
		m := r.(map[string]any)
		models = append(models, m["target_model"].(string))
		for _, k := range []string{"positive_ci", "negative_ci", "leaderboard"} {
			if _, ok := m[k].(map[string]any); !ok {
				t.Errorf("results %s: %s is %v, want an object", m["target_model"], k, m[k])
			}
		}
		if ci, _ := m["positive_ci"].(map[string]any); ci != nil {
			lo, hi, est := ci["low"].(float64), ci["high"].(float64), ci["estimate"].(float64)
			if !(lo <= est && est <= hi) {
				t.Errorf("positive_ci %v: estimate outside its interval", ci)
			}
		}
	}
	sort.Strings(models)
	if !slices.Equal(models, []string{"offline-careful", "offline-careless"}) {
		t.Errorf("results models %v", models)
	}
}

// normJSON re-encodes b so that two encodings of one value compare equal.
func normJSON(t *testing.T, b []byte) []byte {
	t.Helper()
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatal(err)
	}
	out, _ := json.Marshal(v)
	return out
}
