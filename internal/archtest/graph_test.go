package archtest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/impactbench/impactbench"

// pkg is the part of `go list -json` the checks read.
type pkg struct {
	ImportPath string
	Dir        string
	Imports    []string
	Deps       []string
	GoFiles    []string
}

// moduleRoot is the directory holding go.mod above the test's directory.
func moduleRoot(t *testing.T) string {
	t.Helper()
	d, err := filepath.Abs(".")
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			return d
		}
		up := filepath.Dir(d)
		if up == d {
			t.Fatal("no go.mod above the test's directory")
		}
		d = up
	}
}

// rel drops the module path: "internal/llm" for module+"/internal/llm".
func rel(importPath string) string {
	return strings.TrimPrefix(importPath, module+"/")
}

// ours reports whether importPath is a package of this module.
func ours(importPath string) bool {
	return strings.HasPrefix(importPath, module+"/")
}

// listPackages runs `go list -deps -json ./...` at the module root and returns
// the module's own packages keyed by their path below the module.
func listPackages(t *testing.T) map[string]pkg {
	t.Helper()
	cmd := exec.Command("go", "list", "-deps", "-json", "./...")
	cmd.Dir = moduleRoot(t)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list -deps -json ./...: %v\n%s", err, stderr.String())
	}
	pkgs, err := decodePackages(out)
	if err != nil {
		t.Fatal(err)
	}
	if len(pkgs) == 0 {
		t.Fatal("go list found no package of the module")
	}
	return pkgs
}

func decodePackages(out []byte) (map[string]pkg, error) {
	pkgs := map[string]pkg{}
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p pkg
		err := dec.Decode(&p)
		if errors.Is(err, io.EOF) {
			return pkgs, nil
		}
		if err != nil {
			return nil, fmt.Errorf("decoding go list output: %w", err)
		}
		if ours(p.ImportPath) {
			pkgs[rel(p.ImportPath)] = p
		}
	}
}

// floorViolations returns one line per import of a package on a higher
// floor than the importer's, and per package placed on no floor.
func floorViolations(pkgs map[string]pkg, floorOf map[string]int) []string {
	var bad []string
	for _, p := range sortedKeys(pkgs) {
		if p == self {
			continue
		}
		f, ok := floorOf[p]
		if !ok {
			bad = append(bad, fmt.Sprintf("%s is on no floor: add it to floors in this test and to ARCHITECTURE.md", p))
			continue
		}
		for _, imp := range pkgs[p].Imports {
			if !ours(imp) {
				continue
			}
			g, ok := floorOf[rel(imp)]
			if ok && g > f {
				bad = append(bad, fmt.Sprintf("%s (floor %d, %s) imports %s (floor %d, %s): imports point down only",
					p, f, floors[f].name, rel(imp), g, floors[g].name))
			}
		}
	}
	return bad
}

func TestImportsPointDown(t *testing.T) {
	pkgs := listPackages(t)
	for _, line := range floorViolations(pkgs, floorIndex()) {
		t.Error(line)
	}
	for p := range floorIndex() {
		if _, ok := pkgs[p]; !ok {
			t.Errorf("floors name %s, which go list does not find: remove it here and from ARCHITECTURE.md", p)
		}
	}
}

// A floor check that cannot fail would be worthless: an import upwards must
// be reported, and so must a package left off the floors.
func TestFloorCheckCatchesUpwardImport(t *testing.T) {
	pkgs := map[string]pkg{
		"internal/fsx":    {ImportPath: module + "/internal/fsx", Imports: []string{module + "/internal/runner"}},
		"internal/runner": {ImportPath: module + "/internal/runner", Imports: []string{module + "/internal/fsx"}},
		"internal/new":    {ImportPath: module + "/internal/new"},
	}
	bad := floorViolations(pkgs, floorIndex())
	if len(bad) != 2 || !strings.Contains(bad[0], "internal/fsx") || !strings.Contains(bad[1], "internal/new is on no floor") {
		t.Fatalf("violations = %q, want fsx importing runner and internal/new unplaced", bad)
	}
}

// The scheduler decides what runs when; it must not know what a stage, a
// prompt, a file or the project's layout is (issue #32).
func TestScheduleKnowsNoStageNorFile(t *testing.T) {
	pkgs := listPackages(t)
	s, ok := pkgs["internal/schedule"]
	if !ok {
		t.Fatal("internal/schedule not found")
	}
	for _, d := range s.Deps {
		if !ours(d) {
			continue
		}
		for _, f := range scheduleForbidden {
			if r := rel(d); r == f || strings.HasPrefix(r, f+"/") {
				t.Errorf("internal/schedule depends on %s (stage, prompt, layout or file code)", r)
			}
		}
	}
}

// scheduleForbidden are the packages (and their sub-packages) the scheduler
// may not reach, directly or not.
var scheduleForbidden = []string{
	"internal/stages", "internal/prompts", "internal/fsx", "internal/artifacts",
	"internal/layout", "internal/callstore", "internal/phase", "internal/config",
	"internal/labels", "internal/results", "internal/llm",
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
