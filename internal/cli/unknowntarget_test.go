package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestUnknownTargetRefused: every command that takes targets refuses one
// config.yaml does not have — exit 2 naming it and config's targets, with
// "did you mean" for a likely typo, every file as it was — status and
// merge as run and the stages do. A target taken out of config.yaml whose
// runs/<target>/ is still there is shown, not refused.
func TestUnknownTargetRefused(t *testing.T) {
	dir := copyProject(t)
	const known = "(targets: offline-careful, offline-careless)"
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"status", "example", "nope"}, `target "nope" is not in`},
		{[]string{"status", "example", "offline-careful", "nope"}, `target "nope" is not in`},
		{[]string{"status", "example", "nope", "nope2"}, `targets "nope", "nope2" are not in`},
		{[]string{"status", "example", "offline-carefull"}, "; did you mean offline-careful?"},
		{[]string{"status", "example", ".."}, `target ".." is not in`},
		{[]string{"status", "all", "nope"}, `target "nope" is not in`},
		{[]string{"status", "example", "nope", "--json"}, `target \"nope\" is not in`},
		{[]string{"merge", "example", "nope"}, `target "nope" is not in`},
		{[]string{"merge", "all", "nope"}, `target "nope" is not in`},
		{[]string{"run", "example", "nope"}, `target "nope" is not in`},
		{[]string{"run", "example", "offline-carefull"}, "; did you mean offline-careful?"},
		{[]string{"simulate", "example", "nope"}, `target "nope" is not in`},
		{[]string{"evaluate", "example", "nope"}, `target "nope" is not in`},
	} {
		name := strings.Join(c.args, " ")
		before := snapshot(t, dir)
		code, out, errs := run(t, dir, c.args...)
		if code != ExitUsage || !strings.Contains(errs, c.want) || !strings.Contains(errs, known) {
			t.Errorf("%s: exit %d, want %d with %q and %q; stderr:\n%s", name, code, ExitUsage, c.want, known, errs)
		}
		if out != "" {
			t.Errorf("%s: printed on stdout:\n%s", name, out)
		}
		assertSameFiles(t, before, snapshot(t, dir))
	}
	legacy := filepath.Join(dir, "benchmarks", "example", "runs", "retired")
	if err := os.MkdirAll(legacy, 0o755); err != nil {
		t.Fatal(err)
	}
	if code, out, errs := run(t, dir, "status", "example", "retired"); code != 0 || !strings.Contains(out, "retired") {
		t.Errorf("status example retired (runs/retired/ exists): exit %d\n%s%s", code, out, errs)
	}
}
