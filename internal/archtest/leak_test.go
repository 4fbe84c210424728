package archtest

import (
	"go/ast"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// startsGoroutines returns the package directories whose non-test files hold
// a go statement.
func startsGoroutines(files []goFile) map[string]bool {
	dirs := map[string]bool{}
	for _, f := range files {
		ast.Inspect(f.ast, func(n ast.Node) bool {
			if _, ok := n.(*ast.GoStmt); ok {
				dirs[f.dir] = true
				return false
			}
			return true
		})
	}
	return dirs
}

// checksLeaks reports whether a test file of dir uses goleak.
func checksLeaks(root, dir string) (bool, error) {
	tests, err := filepath.Glob(filepath.Join(root, filepath.FromSlash(dir), "*_test.go"))
	if err != nil {
		return false, err
	}
	for _, p := range tests {
		b, err := os.ReadFile(p)
		if err != nil {
			return false, err
		}
		if strings.Contains(string(b), `"go.uber.org/goleak"`) {
			return true, nil
		}
	}
	return false, nil
}

// leakCheckPending are packages that start goroutines without a leak check
// yet, each with its reason. An entry that is no longer needed fails the test,
// so the list only shrinks.
var leakCheckPending = map[string]string{
	"internal/browsertest": "a test helper with no tests of its own: the browser tests that use it check for leaks",
	"internal/redisserver": "a test helper with no tests of its own: the tests that start a Redis check for leaks",
}

// Every package that starts goroutines checks, after its tests, that none
// is left running (issue #32).
func TestGoroutineStartersCheckForLeaks(t *testing.T) {
	root := moduleRoot(t)
	starters := startsGoroutines(sourceFiles(t, false))
	for _, dir := range sortedKeys(starters) {
		ok, err := checksLeaks(root, dir)
		if err != nil {
			t.Fatal(err)
		}
		why, pending := leakCheckPending[dir]
		switch {
		case ok && pending:
			t.Errorf("%s checks for leaks now: remove it from leakCheckPending (%s)", dir, why)
		case !ok && !pending:
			t.Errorf("%s starts goroutines but its tests do not check for leaks: add a TestMain calling goleak.VerifyTestMain", dir)
		}
	}
	for dir := range leakCheckPending {
		if !starters[dir] {
			t.Errorf("%s starts no goroutine: remove it from leakCheckPending", dir)
		}
	}
}
