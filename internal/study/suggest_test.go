package study_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/impactbench/impactbench/internal/study"
	"github.com/impactbench/impactbench/internal/study/studytest"
)

// TestTaxonomyErrorsSuggest: a misspelt key, benchmark or metric id in
// the study's inputs gets the did-you-mean that config errors have.
func TestTaxonomyErrorsSuggest(t *testing.T) {
	cases := []struct {
		file, old, new, want string
	}{
		{study.TaxonomyFile, `"metric_ids"`, `"metrics_ids"`, `unknown key "metrics_ids"; did you mean metric_ids?`},
		{study.TaxonomyFile, `"beta__m01"`, `"betta__m01"`, "no benchmark betta"},
		{study.TaxonomyFile, `"beta__m01"`, `"betta__m01"`, "; did you mean beta?"},
		{study.TaxonomyFile, `"gamma__m01"`, `"gamma__m1"`, "defines no metric m1 (it has m01, m02); did you mean m01?"},
		{study.NutritionFile, `"alpha__m01"`, `"alpha__m001"`, "did you mean m01?"},
	}
	for _, c := range cases {
		_, bench := small(t)
		studytest.Edit(t, filepath.Join(bench, c.file), c.old, c.new)
		_, err := study.Load(bench)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s %s → %s: %v; want %q", c.file, c.old, c.new, err, c.want)
		}
	}
}
