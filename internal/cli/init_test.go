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
			if code, _, errs := run(t, dir, "init", dir); code != 0 {
				t.Fatalf("init: exit %d: %s", code, errs)
			}
			if code, _, errs := run(t, dir, append(args, dir, "--force")...); code != 0 {
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

// init --study writes a study's inputs into a project's benchmarks/; where
// there is no project its next steps (run, study, publish) could only fail
// for want of a config.yaml, so it refuses (exit 2, nothing written) and
// names the project above, if any.
func TestInitStudyOutsideAProject(t *testing.T) {
	root := t.TempDir()
	if code, _, errs := run(t, root, "init", root); code != 0 {
		t.Fatalf("init: exit %d: %s", code, errs)
	}
	tests := []struct {
		name, dir, want string
	}{
		{"no project", t.TempDir(), "impactbench init"},
		{"inside a project", filepath.Join(root, "benchmarks", "example"), root},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := projectTree(t, tt.dir)
			code, _, errs := run(t, tt.dir, "init", "--study", tt.dir)
			if code != ExitUsage || !strings.Contains(errs, "config.yaml") || !strings.Contains(errs, tt.want) {
				t.Errorf("init --study %s: exit %d, want %d naming config.yaml and %q; stderr %q", tt.dir, code, ExitUsage, tt.want, errs)
			}
			if !maps.Equal(before, projectTree(t, tt.dir)) {
				t.Errorf("init --study %s wrote files", tt.dir)
			}
		})
	}
}

// init naming a file is a usage mistake (exit 2 saying so), not a run
// failure quoting lstat; the file is left as it was.
func TestInitOnAFile(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "notes.txt")
	if err := os.WriteFile(file, []byte("mine\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"init", file}, {"init", "--study", file}} {
		code, _, errs := run(t, dir, args...)
		if code != ExitUsage || !strings.Contains(errs, "not a directory") {
			t.Errorf("%v: exit %d, want %d saying it is not a directory; stderr %q", args, code, ExitUsage, errs)
		}
		if b, err := os.ReadFile(file); err != nil || string(b) != "mine\n" {
			t.Errorf("%v changed %s: %q, %v", args, file, b, err)
		}
	}
}
