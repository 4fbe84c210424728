//go:build darwin || dragonfly || freebsd || linux || netbsd || openbsd

package study_test

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/impactbench/impactbench/internal/hostile"
	"github.com/impactbench/impactbench/internal/study"
)

// A study input that is not a regular file, or too large, is an input
// error naming the file once (it was named twice: "taxonomy.json:
// taxonomy.json: …").
func TestLoadNamesAnUnreadableInputOnce(t *testing.T) {
	_, bench := small(t)
	path := filepath.Join(bench, study.TaxonomyFile)
	hostile.Pipe(t, path)
	var err error
	hostile.NotBlocked(t, path, func() { _, err = study.Load(bench) })
	var ie *study.InputError
	if !errors.As(err, &ie) || strings.Count(err.Error(), study.TaxonomyFile) != 1 || !strings.Contains(err.Error(), "named pipe") {
		t.Errorf("%v, want an input error naming %s once, as a named pipe", err, study.TaxonomyFile)
	}
}
