package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// -o naming a directory is a usage mistake (exit 2 saying so), as publish
// -o naming a file is; it was exit 1 with "rename .out.tmp-… out: file
// exists", naming a temporary file the user never made.
func TestOutputFlagNamingADirectory(t *testing.T) {
	dir := copyProject(t)
	out := filepath.Join(dir, "outdir")
	if err := os.Mkdir(out, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"export", "example", "-o", out},
		{"export", "example", "--format", "parquet", "-o", out},
		{"compare", filepath.Join(dir, "benchmarks", "example"), filepath.Join(dir, "benchmarks", "example"), "-o", out},
	} {
		code, _, errs := run(t, dir, args...)
		if code != ExitUsage || !strings.Contains(errs, "is a directory") {
			t.Errorf("%v: exit %d, want %d saying -o is a directory; stderr %q", args, code, ExitUsage, errs)
		}
		if ents, _ := os.ReadDir(out); len(ents) != 0 {
			t.Errorf("%v left %d entries in %s", args, len(ents), out)
		}
		if ents, _ := os.ReadDir(dir); hasTemp(ents) {
			t.Errorf("%v left a temporary file in %s", args, dir)
		}
	}
}

func hasTemp(ents []os.DirEntry) bool {
	for _, e := range ents {
		if strings.Contains(e.Name(), ".tmp-") {
			return true
		}
	}
	return false
}
