package cli

import (
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// init over an existing project is a usage mistake (exit 2, as the exit
// codes promise for "bad usage … nothing was written"), not a run failure
// to rerun: it names the files and --force, and leaves them as they were;
// with --study as without it.
func TestInitOverExistingFilesIsUsage(t *testing.T) {
	for _, args := range [][]string{{"init"}, {"init", "--study"}} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			dir := t.TempDir()
			if code, _, errs := run(t, dir, append(args, dir)...); code != 0 {
				t.Fatalf("first %v: exit %d: %s", args, code, errs)
			}
			cfg := filepath.Join(dir, "config.yaml")
			if _, err := os.Stat(cfg); err == nil {
				editFile(t, cfg, func(s string) string { return s + "# mine\n" })
			}
			before := projectTree(t, dir)
			code, _, errs := run(t, dir, append(args, dir)...)
			if code != ExitUsage {
				t.Errorf("second %v: exit %d, want %d (%s)", args, code, ExitUsage, errs)
			}
			for _, w := range []string{"already exist", "--force"} {
				if !strings.Contains(errs, w) {
					t.Errorf("second %v: stderr %q lacks %q", args, errs, w)
				}
			}
			if !maps.Equal(before, projectTree(t, dir)) {
				t.Errorf("second %v changed the project's files", args)
			}
		})
	}
}
