package racemode_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// repoRoot is the module root, two directories above this package.
const repoRoot = "../.."

// TestEveryHeavyTestRunsInCI: a test that skips itself under -race
// (SkipHeavy, directly or through a helper of its package) is run by the
// .ci/run step without -race, which names it in its -run pattern and lists
// its package. A test missing there would run nowhere in CI.
func TestEveryHeavyTestRunsInCI(t *testing.T) {
	script, err := os.ReadFile(filepath.Join(repoRoot, ".ci", "run"))
	if err != nil {
		t.Fatal(err)
	}
	pattern, dirs := heavyStep(t, string(script))
	heavy := heavyTests(t)
	if len(heavy) == 0 {
		t.Fatal("found no test calling racemode.SkipHeavy: the scan is broken")
	}
	for dir, tests := range heavy {
		if !listed(dir, dirs) {
			t.Errorf(".ci/run's step without -race does not list ./%s (its %v skip under -race)", dir, tests)
		}
		for _, name := range tests {
			if !pattern.MatchString(name) {
				t.Errorf(".ci/run's step without -race does not run %s (./%s): it skips under -race", name, dir)
			}
		}
	}
}

// heavyStep finds the go test command without -race that has a -run
// pattern, and returns the pattern and the package directories it lists.
func heavyStep(t *testing.T, script string) (*regexp.Regexp, []string) {
	t.Helper()
	// The command and its backslash-continued lines.
	cmd := regexp.MustCompile(`(?m)^go test -run '([^']+)'((?:[^\n]*\\\n)*[^\n]*)$`).FindStringSubmatch(script)
	if cmd == nil {
		t.Fatal(".ci/run has no `go test -run '…'` step")
	}
	pattern, err := regexp.Compile(cmd[1])
	if err != nil {
		t.Fatalf(".ci/run's -run pattern: %v", err)
	}
	var dirs []string
	for _, f := range strings.Fields(strings.ReplaceAll(cmd[2], "\\\n", " ")) {
		if strings.HasPrefix(f, "./") {
			dirs = append(dirs, f)
		}
	}
	return pattern, dirs
}

// listed reports whether one of the package arguments covers dir.
func listed(dir string, args []string) bool {
	for _, a := range args {
		a = strings.TrimSuffix(strings.TrimPrefix(a, "./"), "/")
		if rest, ok := strings.CutSuffix(a, "/..."); ok {
			if dir == rest || strings.HasPrefix(dir, rest+"/") {
				return true
			}
		} else if dir == a {
			return true
		}
	}
	return false
}

// heavyTests maps each package directory (relative to the module root) to
// its Test functions that reach racemode.SkipHeavy.
func heavyTests(t *testing.T) map[string][]string {
	t.Helper()
	byDir := map[string][]*ast.File{}
	fset := token.NewFileSet()
	err := filepath.WalkDir(repoRoot, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".")) && path != repoRoot {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		dir, _ := filepath.Rel(repoRoot, filepath.Dir(path))
		byDir[filepath.ToSlash(dir)] = append(byDir[filepath.ToSlash(dir)], f)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]string{}
	for dir, files := range byDir {
		for name := range reaching(files) {
			if strings.HasPrefix(name, "Test") {
				out[dir] = append(out[dir], name)
			}
		}
	}
	return out
}

// reaching returns the package-level functions of files that call
// racemode.SkipHeavy, directly or through other such functions.
func reaching(files []*ast.File) map[string]bool {
	calls := map[string][]string{} // function -> package-level functions it calls
	found := map[string]bool{}
	for _, f := range files {
		for _, decl := range f.Decls {
			fn, ok := decl.(*ast.FuncDecl)
			if !ok || fn.Recv != nil || fn.Body == nil {
				continue
			}
			ast.Inspect(fn.Body, func(n ast.Node) bool {
				call, ok := n.(*ast.CallExpr)
				if !ok {
					return true
				}
				switch f := call.Fun.(type) {
				case *ast.Ident:
					calls[fn.Name.Name] = append(calls[fn.Name.Name], f.Name)
				case *ast.SelectorExpr:
					if x, ok := f.X.(*ast.Ident); ok && x.Name == "racemode" && f.Sel.Name == "SkipHeavy" {
						found[fn.Name.Name] = true
					}
				}
				return true
			})
		}
	}
	for changed := true; changed; {
		changed = false
		for fn, callees := range calls {
			for _, c := range callees {
				if found[c] && !found[fn] {
					found[fn], changed = true, true
				}
			}
		}
	}
	return found
}
