//go:build darwin || dragonfly || freebsd || linux || netbsd || openbsd

package batch

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/impactbench/impactbench/internal/hostile"
)

// TestCacheFilesThatArePipesDoNotHang: a named pipe where the state file
// or a batch's saved results go is not read (it would block Run forever):
// the state file is refused naming it, the results count as missing.
func TestCacheFilesThatArePipesDoNotHang(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.json")
	hostile.Pipe(t, path)
	hostile.NotBlocked(t, path, func() {
		_, err := loadState(path, "p")
		var se *StateError
		if !errors.As(err, &se) || se.Path != path || !strings.Contains(err.Error(), "named pipe") {
			t.Errorf("a state file that is a named pipe: want a *StateError naming it, got %T %v", err, err)
		}
	})
	results := cachePath(path, "batch_1")
	if err := os.MkdirAll(filepath.Dir(results), 0o700); err != nil {
		t.Fatal(err)
	}
	hostile.Pipe(t, results)
	hostile.NotBlocked(t, results, func() {
		if _, ok := loadResults(path, "batch_1"); ok {
			t.Error("saved results that are a named pipe were read")
		}
	})
}
