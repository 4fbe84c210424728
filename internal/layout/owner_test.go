package layout

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// The names a path or unit name is made of. A string literal equal to
// one of them, outside this package, is a second spelling of the layout:
// change the name here and that reader or writer silently drifts.
var ownedNames = append([]string{
	ConfigFile, EnvFile, EnvExampleFile, BenchmarksDirName,
	StudyTaxonomyFile, StudyNutritionFile, StudyModelsFile, StudyResultFile,
	BenchmarkFile, ScenariosFile, ResultsFile, RunManifestFile, ReportFile, CostFile, LabelsFile,
	UntilFile, ConversationsFile, ScoresFile, RepeatsFile, RunsDirName, SetsDirName, SetsFile,
	JudgesDirName, HumanDirName, CacheDirName, CallsDirName, RecordsFile, LockFile, HoldsFile, ValidationDirName,
	SimDir, EvalDir, HumanUnitDir, HumanEvalDir, HumanAuditDir, GenMetricsUnit, PublishManifestFile, SiteIndex,
	// Not GenMetricsDir and GenScenariosDir alone: they are also the
	// stages' names (phase, cost, prompts, config keys). The fragment
	// "gen_scenarios/" below catches a unit glued by hand.
}, PublishedDataFiles...)

// Fragments no literal outside this package may contain: the pieces a
// path or unit name was glued from before this package owned them.
var ownedFragments = []string{
	"/" + SimDir + "/", GenScenariosDir + "/", ".shard-", sampleSep + "%d",
	RunsDirName + "/", "/" + ScoresFile, "/" + ConversationsFile,
}

// notYetOwned are the directories whose paths are converted to this
// package as part of splitting the runner, the command line and the
// shared run state; each leaves this list when it is converted.
var notYetOwned = []string{"internal/runner", "internal/cli", "internal/work"}

// spelledElsewhere lists the literals outside this package that spell a
// layout name for another reason, by file (relative to the module) and
// value. Each entry says why; an entry no literal matches any more fails
// the test, so the list never outlives its reason.
var spelledElsewhere = map[string]string{
	// A data name that is also a folder's: the JSON keys and component
	// names of run_manifest.json, results.json and the phase records
	// (renaming the judges folder must not rename them), and the "human"
	// of a person's rows and of seeds (changing it would change the data
	// and the seeded numbers).
	"internal/compare/comparable.go:judges":    "CompJudges: a run_manifest.json component",
	"internal/results/fingerprint.go:judges":   "run_manifest.json's key",
	"internal/results/types.go:judges":         "results.json's key",
	"internal/evaluate/judge.go:judges":        "the phase record's input name",
	"internal/validation/validation.go:judges": "compare's component a judge swap may change",
	"internal/human/human.go:human":            `a person's rows' "user"`,
	"internal/stages/human.go:human":           `a person's rows' user model, and the seed label of their games`,
	"internal/results/human.go:human":          "the seed label of the human-versus-simulated test",
	"internal/export/table.go:human":           "the source column's value for people's games",
	"internal/benchcli/bench.go:benchmarks":    "the harness's --benchmarks flag (how many benchmarks the cluster presets write)",
	"internal/compare/study.go:benchmarks":     `the English plural of "across K benchmarks" in compare --study's safety-stop lines`,
}

// Every path and unit name is spelled here and nowhere else in the
// module's code (tests may spell them: they check what was written).
func TestNoOtherPackageSpellsTheLayout(t *testing.T) {
	root := moduleRoot(t)
	used := map[string]bool{}
	var bad []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if skipDir(rel, d.Name()) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(rel, ".go") || strings.HasSuffix(rel, "_test.go") {
			return nil
		}
		for _, lit := range layoutLiterals(t, path) {
			key := rel + ":" + lit.value
			if _, ok := spelledElsewhere[key]; ok {
				used[key] = true
				continue
			}
			bad = append(bad, rel+":"+strconv.Itoa(lit.line)+": "+strconv.Quote(lit.value))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range bad {
		t.Errorf("%s spells a layout name: build it with package layout (or allow it, with its reason, in spelledElsewhere)", b)
	}
	for _, dir := range notYetOwned {
		if st, err := os.Stat(filepath.Join(root, dir)); err != nil || !st.IsDir() {
			t.Errorf("notYetOwned lists %s, which is not a directory of the module any more: remove it", dir)
		}
	}
	for key := range spelledElsewhere {
		if !used[key] {
			t.Errorf("spelledElsewhere[%q] matches no literal any more: remove it", key)
		}
	}
}

func skipDir(rel, name string) bool {
	if rel == "." {
		return false
	}
	if strings.HasPrefix(name, ".") || name == "testdata" || name == "vendor" || rel == "internal/layout" {
		return true
	}
	return slices.Contains(notYetOwned, rel)
}

type literal struct {
	value string
	line  int
}

// layoutLiterals are the string literals of a file that spell a layout
// name; struct tags and import paths are not code that builds a path.
func layoutLiterals(t *testing.T, path string) []literal {
	t.Helper()
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
	if err != nil {
		t.Fatal(err)
	}
	skip := map[*ast.BasicLit]bool{}
	var out []literal
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.ImportSpec:
			skip[n.Path] = true
		case *ast.Field:
			if n.Tag != nil {
				skip[n.Tag] = true
			}
		case *ast.BasicLit:
			if n.Kind != token.STRING || skip[n] {
				return true
			}
			v, err := strconv.Unquote(n.Value)
			if err == nil && spellsLayout(v) {
				out = append(out, literal{v, fset.Position(n.Pos()).Line})
			}
		}
		return true
	})
	return out
}

func spellsLayout(v string) bool {
	if slices.Contains(ownedNames, v) {
		return true
	}
	for _, frag := range ownedFragments {
		if strings.Contains(v, frag) {
			return true
		}
	}
	return false
}

// The check itself: it finds what it must and lets through what it may.
func TestSpellsLayout(t *testing.T) {
	for v, want := range map[string]bool{
		"scores.json": true, "runs": true, ".cache": true, "%s/sim/%s__s%d": true, "gen_scenarios/m01": true,
		"conversations.shard-0-of-2.json": true, "runs/" + "x": true, "human-eval": true,
		"scores": false, "the runs of a benchmark": false, "simulate": false, "evaluation": false, "results": false,
	} {
		if got := spellsLayout(v); got != want {
			t.Errorf("spellsLayout(%q) = %v, want %v", v, got, want)
		}
	}
}

func moduleRoot(t *testing.T) string {
	t.Helper()
	dir, err := filepath.Abs(".")
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.mod above the package")
		}
		dir = parent
	}
}

// The owner of the layout sits at the bottom of the import graph, so
// every package can use it: the standard library, internal/ids, and
// internal/fsx to list folders to a bound (fsx, and internal/fault under
// it, import only the standard library: checked here too).
func TestLayoutImportsNothingAboveIt(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	const ids = "github.com/impactbench/impactbench/internal/ids"
	const fsx = "github.com/impactbench/impactbench/internal/fsx"
	const fault = "github.com/impactbench/impactbench/internal/fault"
	below, err := filepath.Glob("../fsx/*.go")
	if err != nil {
		t.Fatal(err)
	}
	faultFiles, err := filepath.Glob("../fault/*.go")
	if err != nil {
		t.Fatal(err)
	}
	allowed := map[string]func(string) bool{}
	for _, name := range files {
		allowed[name] = func(p string) bool { return p == ids || p == fsx }
	}
	const module = "github.com/impactbench/impactbench/"
	for _, name := range below {
		allowed[name] = func(p string) bool { return p == fault || !strings.HasPrefix(p, module) }
	}
	for _, name := range faultFiles {
		allowed[name] = func(p string) bool { return !strings.HasPrefix(p, module) }
	}
	for name, ok := range allowed {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), name, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			if std := !strings.Contains(strings.Split(p, "/")[0], "."); !std && !ok(p) {
				t.Errorf("%s imports %s: layout may import only the standard library, %s and %s; fsx only %s; fault nothing of the module", name, p, ids, fsx, fault)
			}
		}
	}
}
