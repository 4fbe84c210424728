package cli

import (
	"strings"
	"testing"
)

// run's qualifying flags are refused without what they qualify ("with
// --until: the most rounds"): they were ignored without a word and the
// ordinary run went ahead. With config's run.adaptive on, the --adaptive-*
// flags act and are accepted.
func TestRunFlagsWithoutWhatTheyQualify(t *testing.T) {
	dir := copyProject(t)
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"run", "example", "--rounds", "3"}, "--rounds applies with --until"},
		{[]string{"run", "example", "--adaptive-max", "5"}, "--adaptive-max applies with --adaptive"},
		{[]string{"run", "all", "--adaptive-start", "2", "--dry-run"}, "--adaptive-start applies with --adaptive"},
	} {
		before := snapshot(t, dir)
		code, _, errs := run(t, dir, tt.args...)
		if code != ExitUsage || !strings.Contains(errs, tt.want) {
			t.Errorf("%v: exit %d, want %d with %q; stderr %q", tt.args, code, ExitUsage, tt.want, errs)
		}
		assertSameFiles(t, before, snapshot(t, dir))
	}
	if code, _, errs := run(t, dir, "init", "--study", dir); code != 0 {
		t.Fatalf("init --study: %s", errs)
	}
	editConfig(t, dir, func(s string) string {
		return strings.Replace(s, "  concurrency: auto\n", "  concurrency: auto\n  adaptive: true\n", 1)
	})
	if code, _, errs := run(t, dir, "run", "all", "--adaptive-max", "3", "--dry-run"); code != 0 {
		t.Errorf("run all --adaptive-max 3 --dry-run under run.adaptive: true: exit %d: %s", code, errs)
	}
}
