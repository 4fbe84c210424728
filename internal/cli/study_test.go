package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/impactbench/impactbench/internal/config"
	"github.com/impactbench/impactbench/internal/layout"
)

// TestStudyCommandsJSON runs init --study, study, publish (and its dry
// run), status --study and compare --study with --json on a finished
// example project and checks each output against docs/json.md.
func TestStudyCommandsJSON(t *testing.T) {
	doc := jsonDoc(t)
	dir := copyProject(t)
	code, out, errs := run(t, dir, "init", "--study", dir, "--json")
	if code != 0 {
		t.Fatalf("init --study: exit %d\n%s", code, errs)
	}
	obj := checkShape(t, "init --study", doc, "init", decodeJSON(t, "init --study", out))
	if files, _ := obj["files"].([]any); len(files) != 3 {
		t.Errorf("init --study wrote %v", obj["files"])
	}
	if next, _ := obj["next"].([]any); !strings.Contains(strings.Join(toStrings(next), "\n"), " publish") {
		t.Errorf("init --study next steps %v lack publish", next)
	}

	code, out, errs = run(t, dir, "study", "--json")
	if code != 0 {
		t.Fatalf("study: exit %d\n%s", code, errs)
	}
	obj = checkShape(t, "study", doc, "study", decodeJSON(t, "study", out))
	lb, _ := obj["leaderboard"].([]any)
	if len(lb) != 4 || obj["models"] != 2.0 || obj["metrics"] != 2.0 {
		t.Fatalf("study: %v", obj)
	}
	checkShape(t, "study leaderboard[0]", doc, "study.leaderboard[]", lb[0])
	studyFile := filepath.Join(dir, "benchmarks", "study.json")
	if obj["file"] != studyFile {
		t.Errorf("study file %v, want %s", obj["file"], studyFile)
	}

	site := filepath.Join(dir, "site")
	code, out, errs = run(t, dir, "publish", "--output", site, "--json")
	if code != 0 {
		t.Fatalf("publish: exit %d\n%s", code, errs)
	}
	obj = checkShape(t, "publish", doc, "publish", decodeJSON(t, "publish", out))
	if w, _ := obj["written"].([]any); len(w) == 0 || obj["study"] != studyFile || obj["dry_run"] != false {
		t.Errorf("publish: %v", obj)
	}
	for _, f := range []string{"taxonomy.json", "models.json", "benchmark-data.json", "scenario-index.json", "metric-details.json", "nutrition.json", "uncertainty.json"} {
		if _, err := os.Stat(filepath.Join(site, "data", f)); err != nil {
			t.Errorf("publish did not write data/%s: %v", f, err)
		}
	}
	code, out, _ = run(t, dir, "publish", "--output", site, "--dry-run", "--json")
	obj = checkShape(t, "publish --dry-run", doc, "publish", decodeJSON(t, "publish --dry-run", out))
	if w, _ := obj["written"].([]any); code != 0 || len(w) != 0 || obj["study"] != nil || obj["dry_run"] != true {
		t.Errorf("publish --dry-run of an unchanged study: exit %d, %v", code, obj)
	}
	code, out, _ = run(t, dir, "publish", "--output", site, "--site", "--json")
	obj = checkShape(t, "publish --site", doc, "publish", decodeJSON(t, "publish --site", out))
	if page := filepath.Join(site, "index.html"); code != 0 || obj["site"] != page {
		t.Errorf("publish --site: exit %d, %v", code, obj)
	} else if _, err := os.Stat(page); err != nil {
		t.Errorf("publish --site wrote no page: %v", err)
	}
	if code, _, errs = run(t, dir, "publish", "--output", site, "--site"); code != 0 || !strings.Contains(errs, "site: open "+filepath.Join(site, "index.html")) {
		t.Errorf("publish --site: exit %d, %s", code, errs)
	}

	code, out, errs = run(t, dir, "status", "--study", "--json")
	if code != 0 {
		t.Fatalf("status --study: exit %d\n%s", code, errs)
	}
	obj = checkShape(t, "status --study", doc, "study", decodeJSON(t, "status --study", out))
	if obj["command"] != "status" || obj["cells"] == 0.0 {
		t.Errorf("status --study: %v", obj)
	}

	code, out, errs = run(t, dir, "compare", "--study", dir, studyFile, "--json")
	if code != 0 {
		t.Fatalf("compare --study: exit %d\n%s", code, errs)
	}
	obj = checkShape(t, "compare --study", doc, "compare --study", decodeJSON(t, "compare --study", out))
	rows, _ := obj["rows"].([]any)
	if len(rows) == 0 || obj["changed"] != 0.0 {
		t.Fatalf("compare --study of a study with itself: %v", obj)
	}
	checkShape(t, "compare --study rows[0]", doc, "compare --study.rows[]", rows[0])
}

func toStrings(v []any) []string {
	out := make([]string, len(v))
	for i, x := range v {
		out[i], _ = x.(string)
	}
	return out
}

// TestStudyBadInputLeavesFiles: a taxonomy naming a metric no benchmark
// defines is exit 2 (kind input) naming file, entry and key, and neither
// study nor publish touches study.json or the published files.
func TestStudyBadInputLeavesFiles(t *testing.T) {
	dir := studyProject(t)
	site := filepath.Join(dir, "site")
	if code, _, errs := run(t, dir, "publish", "--output", site); code != 0 {
		t.Fatalf("publish: %s", errs)
	}
	studyFile := filepath.Join(dir, "benchmarks", "study.json")
	before, _ := os.ReadFile(studyFile)
	index := filepath.Join(site, "data", "benchmark-data.json")
	beforeIndex, _ := os.ReadFile(index)
	tax := filepath.Join(dir, "benchmarks", "taxonomy.json")
	b, _ := os.ReadFile(tax)
	if err := os.WriteFile(tax, bytes.Replace(b, []byte(`"example__m02"`), []byte(`"example__m07"`), 1), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"study"}, {"publish", "--output", site}, {"study", "--json"}} {
		code, _, errs := run(t, dir, args...)
		if code != ExitUsage {
			t.Errorf("%v: exit %d, want %d", args, code, ExitUsage)
		}
		for _, want := range []string{"taxonomy.json:", "areas[0].subareas[0].groups[1].metric_ids[0]", "example__m07", "defines no metric m07"} {
			if !strings.Contains(errs, want) {
				t.Errorf("%v: error lacks %q:\n%s", args, want, errs)
			}
		}
		if args[len(args)-1] == "--json" && !strings.Contains(errs, `"kind":"input"`) {
			t.Errorf("--json error kind: %s", errs)
		}
	}
	if after, _ := os.ReadFile(studyFile); !bytes.Equal(before, after) {
		t.Error("a failed study changed study.json")
	}
	if after, _ := os.ReadFile(index); !bytes.Equal(beforeIndex, after) {
		t.Error("a failed publish changed the published files")
	}
}

// `run all` over a project with a study's inputs leaves study.json
// scored from what it just ran; when the refresh fails (a broken input)
// the command fails too, naming the cause (exit 2 for a bad input), leaves
// study.json as it was, and `status --study` then says it is stale and
// why.
func TestRunAllRefreshesStudy(t *testing.T) {
	dir := studyProject(t)
	studyFile := filepath.Join(dir, "benchmarks", "study.json")
	if code, _, errs := run(t, dir, "run", "all"); code != 0 || !strings.Contains(errs, "study: "+studyFile) {
		t.Fatalf("run all: exit %d, want study.json refreshed:\n%s", code, errs)
	}
	code, out, errs := run(t, dir, "status", "--study", "--json")
	if code != 0 || strings.Contains(errs, "stale") || !strings.Contains(out, `"stale": []`) {
		t.Fatalf("status --study after a refresh: exit %d, stale? %s\n%s", code, errs, out)
	}
	before := readBytes(t, studyFile)
	tax := filepath.Join(dir, "benchmarks", "taxonomy.json")
	if err := os.WriteFile(tax, []byte(strings.Replace(string(readBytes(t, tax)), "example__m01", "example__m99", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	// Staleness is told by modification times: the edit comes after
	// study.json as a person's would, not within the file system's tick.
	later := time.Now().Add(2 * time.Second)
	if err := os.Chtimes(tax, later, later); err != nil {
		t.Fatal(err)
	}
	results := filepath.Join(dir, "benchmarks", "example", "results.json")
	resultsBefore, err := os.Stat(results)
	if err != nil {
		t.Fatal(err)
	}
	code, _, errs = run(t, dir, "run", "all", "--force")
	if code != ExitUsage || !strings.Contains(errs, "not refreshed") || !strings.Contains(errs, "example__m99") {
		t.Fatalf("run all with a broken taxonomy: exit %d, want 2 naming the key:\n%s", code, errs)
	}
	// The exception the exit-code table states: the benchmarks ran, and
	// their results stand (rewritten by --force).
	if st, err := os.Stat(results); err != nil || !st.ModTime().After(resultsBefore.ModTime()) && os.SameFile(st, resultsBefore) {
		t.Errorf("run all's benchmarks did not write their results before the refresh failed: %v", err)
	}
	if !bytes.Equal(before, readBytes(t, studyFile)) {
		t.Error("a broken taxonomy changed study.json")
	}
	if code, _, _ := run(t, dir, "study"); code != ExitUsage {
		t.Errorf("study with the broken taxonomy: exit %d, want 2", code)
	}
	code, out, errs = run(t, dir, "status", "--study")
	if code != 0 || !strings.Contains(errs, studyFile+" is stale") || !strings.Contains(errs, filepath.Join("benchmarks", "taxonomy.json")) || strings.Contains(out, "stale") {
		t.Errorf("status --study of the stale study: exit %d\nstdout: %s\nstderr: %s", code, out, errs)
	}
	_, out, _ = run(t, dir, "status", "--study", "--json")
	var sum struct{ Stale []string }
	if err := json.Unmarshal([]byte(out), &sum); err != nil || !slices.Contains(sum.Stale, filepath.Join("benchmarks", "taxonomy.json")) {
		t.Errorf("status --study --json: stale %v (%v)", sum.Stale, err)
	}
}

// TestInitStudyDraftsFromTheProject: in a project with benchmarks of its
// own, init --study places every metric of every benchmark in the
// taxonomy and the nutrition label and every target in models.yaml, and
// the drafted inputs score as they are; the next steps run all of them.
func TestInitStudyDraftsFromTheProject(t *testing.T) {
	dir := copyProject(t)
	b, err := os.ReadFile(filepath.Join(dir, "benchmarks", "example", "benchmark.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	second := filepath.Join(dir, "benchmarks", "second")
	if err := os.MkdirAll(second, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(second, "benchmark.yaml"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errs := run(t, dir, "init", "--study", dir, "--json")
	if code != 0 {
		t.Fatalf("init --study: exit %d\n%s", code, errs)
	}
	var got struct {
		Next []string `json:"next"`
	}
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(strings.Join(got.Next, "\n"), " run all") {
		t.Errorf("next steps %v do not run every benchmark", got.Next)
	}
	tax, _ := os.ReadFile(filepath.Join(dir, "benchmarks", "taxonomy.json"))
	nut, _ := os.ReadFile(filepath.Join(dir, "benchmarks", "nutrition-label.json"))
	models, _ := os.ReadFile(filepath.Join(dir, "benchmarks", "models.yaml"))
	for _, key := range []string{"example__m01", "example__m02", "second__m01", "second__m02"} {
		if !strings.Contains(string(tax), `"`+key+`"`) || !strings.Contains(string(nut), `"`+key+`"`) {
			t.Errorf("%s missing from the drafted taxonomy or nutrition label", key)
		}
	}
	// Every drafted category is one impactbench-web shows: it lists only
	// labels starting "Avoids" or "Promotes".
	var cats []struct{ Label string }
	if err := json.Unmarshal(nut, &cats); err != nil || len(cats) != 2 {
		t.Fatalf("drafted nutrition label: %v %s", err, nut)
	}
	for _, c := range cats {
		if !strings.HasPrefix(c.Label, "Avoids ") && !strings.HasPrefix(c.Label, "Promotes ") {
			t.Errorf("drafted category %q: impactbench-web drops it", c.Label)
		}
	}
	for _, target := range []string{"offline-careful", "offline-careless"} {
		if !strings.Contains(string(models), `run_dir: "`+target+`"`) {
			t.Errorf("models.yaml has no entry for %s:\n%s", target, models)
		}
	}
	if code, _, errs := run(t, dir, "run", "all"); code != 0 {
		t.Fatalf("run all: exit %d\n%s", code, errs)
	}
	if code, _, errs := run(t, dir, "study"); code != 0 {
		t.Fatalf("study on the drafted inputs: exit %d\n%s", code, errs)
	}
}

// TestCompareStudyRefusals: compare --study on two studies without a
// model in common is exit 2 naming both sides' models (not an empty
// table), and compare without --study on study files is exit 2 with a
// hint to use --study.
func TestCompareStudyRefusals(t *testing.T) {
	dir := studyProject(t)
	if code, _, errs := run(t, dir, "study"); code != 0 {
		t.Fatalf("study: %s", errs)
	}
	studyFile := filepath.Join(dir, "benchmarks", "study.json")
	other := filepath.Join(t.TempDir(), "study.json")
	renamed := strings.NewReplacer(`"offline-careful"`, `"model-x"`, `"offline-careless"`, `"model-y"`).Replace(string(readBytes(t, studyFile)))
	if err := os.WriteFile(other, []byte(renamed), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errs := run(t, dir, "compare", "--study", studyFile, other)
	if code != ExitUsage || out != "" || !strings.Contains(errs, "no model in common") || !strings.Contains(errs, "offline-careful") || !strings.Contains(errs, "model-x") {
		t.Errorf("compare --study without common models: exit %d\nstdout: %s\nstderr: %s", code, out, errs)
	}
	code, _, errs = run(t, dir, "compare", studyFile, other)
	if code != ExitUsage || !strings.Contains(errs, "compare --study") {
		t.Errorf("compare of two study files without --study: exit %d, want a hint at --study:\n%s", code, errs)
	}
}

// TestStudyMessagesGoToStderr: study prints its results on stdout and
// every warning on stderr: a nutrition category impactbench-web will drop
// (its label starts neither "Avoids" nor "Promotes") and a study without
// the model the site opens on (claude-haiku-4-5), also from publish.
func TestStudyMessagesGoToStderr(t *testing.T) {
	dir := studyProject(t)
	studytestEdit(t, filepath.Join(dir, "benchmarks", "nutrition-label.json"), `"label": "Promotes Agency"`, `"label": "Shows wanted behaviours"`)
	for _, args := range [][]string{{"study"}, {"publish", "--output", filepath.Join(dir, "site")}} {
		code, out, errs := run(t, dir, args...)
		if code != 0 {
			t.Fatalf("%v: exit %d\n%s", args, code, errs)
		}
		for _, want := range []string{`"Shows wanted behaviours"`, "will drop this one", `no model has id "claude-haiku-4-5"`} {
			if !strings.Contains(errs, want) {
				t.Errorf("%v: stderr lacks %q:\n%s", args, want, errs)
			}
		}
		if strings.Contains(out, "warning") {
			t.Errorf("%v: a warning on stdout:\n%s", args, out)
		}
	}
}

// TestStudyBeforeAnyRun: in a new project, study writes an empty study and
// says so (exit 0).
func TestStudyBeforeAnyRun(t *testing.T) {
	dir := t.TempDir()
	if code, _, errs := run(t, dir, "init", dir); code != 0 {
		t.Fatalf("init: %s", errs)
	}
	if code, _, errs := run(t, dir, "init", "--study", dir); code != 0 {
		t.Fatalf("init --study: %s", errs)
	}
	code, out, errs := run(t, dir, "study")
	if code != 0 || !strings.Contains(errs, "the study is empty") || !strings.Contains(out, "0 models") {
		t.Errorf("study before any run: exit %d\nstdout: %s\nstderr: %s", code, out, errs)
	}
}

func studytestEdit(t *testing.T, path, old, new string) {
	t.Helper()
	b := readBytes(t, path)
	if !strings.Contains(string(b), old) {
		t.Fatalf("%s lacks %q", path, old)
	}
	if err := os.WriteFile(path, []byte(strings.Replace(string(b), old, new, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestPublishServeRefusesANetworkAddress: publish --serve serves only on
// loopback (its files go to any origin): another address, or one that is
// not HOST:PORT, is exit 2 naming the flag, before publishing — the output
// folder is not written (the serving itself is
// publish.TestServeSendsTheCORSHeader).
func TestPublishServeRefusesANetworkAddress(t *testing.T) {
	dir := studyProject(t)
	site := filepath.Join(dir, "site")
	for _, tt := range []struct{ addr, want string }{
		{"0.0.0.0:0", "loopback"},
		{"8080", "HOST:PORT"},
	} {
		code, _, errs := run(t, dir, "publish", "--output", site, "--serve", "--addr", tt.addr)
		if code != ExitUsage || !strings.Contains(errs, "--addr "+tt.addr) || !strings.Contains(errs, tt.want) {
			t.Errorf("publish --serve --addr %s: exit %d, want %d naming the flag and %q\n%s", tt.addr, code, ExitUsage, tt.want, errs)
		}
		if _, err := os.Stat(site); !os.IsNotExist(err) {
			t.Errorf("publish --serve --addr %s published before refusing: %v", tt.addr, err)
		}
	}
}

// TestPublishOutputFlag: publish takes its folder as -o/--output like
// compare and export; the old --out still works, says it is deprecated on
// stderr (stdout stays one JSON object), and is hidden from the help;
// --out and --output naming different folders is a usage error.
func TestPublishOutputFlag(t *testing.T) {
	dir := studyProject(t)
	for _, flag := range []string{"-o", "--output", "--out"} {
		site := filepath.Join(dir, "site"+flag)
		code, out, errs := run(t, dir, "publish", flag, site, "--json")
		if code != 0 {
			t.Fatalf("publish %s: exit %d\n%s", flag, code, errs)
		}
		var obj map[string]any
		if err := json.Unmarshal([]byte(out), &obj); err != nil {
			t.Fatalf("publish %s --json: stdout is not one JSON object: %v\n%s", flag, err, out)
		}
		if _, err := os.Stat(filepath.Join(site, "data", "models.json")); err != nil {
			t.Errorf("publish %s %s wrote nothing there: %v", flag, site, err)
		}
		note := strings.Contains(errs, "--out is deprecated and will be removed: use -o/--output")
		if note != (flag == "--out") {
			t.Errorf("publish %s: deprecation note %v on stderr:\n%s", flag, note, errs)
		}
	}
	code, _, errs := run(t, dir, "publish", "--out", filepath.Join(dir, "a"), "--output", filepath.Join(dir, "b"))
	if code != ExitUsage || !strings.Contains(errs, "--out is the old spelling of --output") {
		t.Errorf("--out and --output apart: exit %d, want 2 saying why:\n%s", code, errs)
	}
	if _, err := os.Stat(filepath.Join(dir, "a")); err == nil {
		t.Error("a refused publish wrote its folder")
	}
	_, help, _ := run(t, dir, "publish", "--help")
	if strings.Contains(help, "--out ") || !strings.Contains(help, "-o, --output DIR") {
		t.Errorf("publish --help shows --out or lacks -o, --output DIR:\n%s", help)
	}
}

// TestPublishIntoAFolderItDidNotWrite: publish into a folder holding its
// own data/models.json (a checkout of impactbench-web) is exit 2 naming
// the file and saying how to proceed, every file byte for byte as it was;
// --force takes the files over, and publishing there again then works
// without it.
func TestPublishIntoAFolderItDidNotWrite(t *testing.T) {
	dir := studyProject(t)
	site := filepath.Join(dir, "web")
	models := filepath.Join(site, "data", "models.json")
	readme := filepath.Join(site, "README.md")
	for path, data := range map[string]string{models: `{"models": ["theirs"]}`, readme: "# impactbench-web\n"} {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	entries := func() []string {
		var names []string
		_ = filepath.WalkDir(site, func(p string, _ fs.DirEntry, _ error) error { names = append(names, p); return nil })
		return names
	}
	before := entries()
	code, _, errs := run(t, dir, "publish", "-o", site)
	if code != ExitUsage || !strings.Contains(errs, models) || !strings.Contains(errs, "--force") {
		t.Errorf("publish into a folder it did not write: exit %d, want 2 naming %s and --force:\n%s", code, models, errs)
	}
	if got := string(readBytes(t, models)); got != `{"models": ["theirs"]}` {
		t.Errorf("a refused publish changed %s: %s", models, got)
	}
	if after := entries(); !slices.Equal(before, after) {
		t.Errorf("a refused publish changed the folder: %v, was %v", after, before)
	}
	if code, _, errs := run(t, dir, "publish", "-o", site, "--force"); code != 0 {
		t.Fatalf("publish --force: exit %d\n%s", code, errs)
	}
	if got := string(readBytes(t, models)); strings.Contains(got, "theirs") {
		t.Errorf("publish --force left %s as it was", models)
	}
	if code, _, errs := run(t, dir, "publish", "-o", site); code != 0 {
		t.Errorf("publishing again where publish --force wrote: exit %d\n%s", code, errs)
	}
	if got := string(readBytes(t, readme)); got != "# impactbench-web\n" {
		t.Errorf("publish changed %s, which it does not write: %s", readme, got)
	}
}

// TestInitStudyNamesTheConfiguredTargets: README's order is a first real
// benchmark (config.yaml's targets replaced by the user's models), then a
// study. In a project whose only benchmark is the starter example,
// init --study writes models.yaml for config.yaml's targets — the
// starter's own file when they are the starter's offline pair — so that
// `run all` refreshes study.json and `study` works without editing it.
func TestInitStudyNamesTheConfiguredTargets(t *testing.T) {
	starter, err := config.StarterStudyFiles()
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name    string
		rename  map[string]string
		wantDir []string
	}{
		{"starter targets", nil, []string{"offline-careful", "offline-careless"}},
		{"the user's targets", map[string]string{"id: offline-careful": "id: model-a", "id: offline-careless": "id: model-b"}, []string{"model-a", "model-b"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			if code, _, errs := run(t, dir, "init", dir); code != 0 {
				t.Fatalf("init: exit %d\n%s", code, errs)
			}
			cfgPath := filepath.Join(dir, "config.yaml")
			cfg := string(readBytes(t, cfgPath))
			for from, to := range tt.rename {
				cfg = strings.Replace(cfg, from, to, 1)
			}
			if err := os.WriteFile(cfgPath, []byte(cfg), 0o644); err != nil {
				t.Fatal(err)
			}
			if code, _, errs := run(t, dir, "init", "--study", dir); code != 0 {
				t.Fatalf("init --study: exit %d\n%s", code, errs)
			}
			for _, f := range starter {
				got := readBytes(t, filepath.Join(dir, f.Path))
				isModels := filepath.Base(f.Path) == "models.yaml"
				if (tt.rename == nil || !isModels) && !bytes.Equal(got, f.Data) {
					t.Errorf("%s differs from the starter's:\n%s", f.Path, got)
				}
				if isModels {
					for _, rd := range tt.wantDir {
						if !strings.Contains(string(got), "run_dir: "+rd+",") && !strings.Contains(string(got), `run_dir: "`+rd+`",`) {
							t.Errorf("models.yaml has no entry for target %s:\n%s", rd, got)
						}
					}
				}
			}
			if code, _, errs := run(t, dir, "-q", "run", "all"); code != 0 {
				t.Fatalf("run all: exit %d\n%s", code, errs)
			}
			if code, _, errs := run(t, dir, "study"); code != 0 {
				t.Fatalf("study: exit %d\n%s", code, errs)
			}
		})
	}
}

// TestListFilesNamesALoneFile: a long dry-run list sums each folder's
// files ("scenarios/beta/model-a/ (41 files)"); a folder holding one file
// names that file, never "(1 files)".
func TestListFilesNamesALoneFile(t *testing.T) {
	files := []string{"data/models.json", "site/data/pairs/model-a/model-b.js"}
	for i := range maxListed {
		files = append(files, fmt.Sprintf("scenarios/beta/model-a/m01_s%03d_v01.json", i))
	}
	var b strings.Builder
	listFiles(&b, "would write", files)
	want := "  would write data/models.json\n" +
		fmt.Sprintf("  would write scenarios/beta/model-a/ (%d files)\n", maxListed) +
		"  would write site/data/pairs/model-a/model-b.js\n"
	if b.String() != want {
		t.Errorf("listFiles:\n%s\nwant\n%s", b.String(), want)
	}
}

// TestCompareStudyOfTwoPublishes: compare --study takes the folders two
// publishes wrote (their data/uncertainty.json is study.json's copy), as
// "what moved between two publishes" suggests; a folder with neither is
// exit 2 naming what it looked for.
func TestCompareStudyOfTwoPublishes(t *testing.T) {
	dir := studyProject(t)
	old := filepath.Join(dir, "old")
	if code, _, errs := run(t, dir, "-q", "publish", "-o", old); code != 0 {
		t.Fatalf("publish: exit %d\n%s", code, errs)
	}
	code, out, errs := run(t, dir, "compare", "--study", old, filepath.Join(dir, "benchmarks"))
	if code != 0 || !strings.Contains(out, "A: "+filepath.Join(old, filepath.FromSlash(layout.PublishedData(layout.PublishedUncertaintyFile)))) {
		t.Errorf("compare --study of a publish folder: exit %d\n%s\n%s", code, out, errs)
	}
	code, _, errs = run(t, dir, "compare", "--study", t.TempDir(), old)
	if code != ExitUsage || !strings.Contains(errs, layout.PublishedData(layout.PublishedUncertaintyFile)) {
		t.Errorf("compare --study of an empty folder: exit %d\n%s", code, errs)
	}
}
