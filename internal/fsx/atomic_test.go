package fsx

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

func readString(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// onlyFiles lists dir's entries (no temp file may be left behind).
func onlyFiles(t *testing.T, dir string, want ...string) {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range ents {
		got = append(got, e.Name())
	}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("%s holds %v, want %v", dir, got, want)
	}
}

func TestWriteFileReplacesAndCreatesParents(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "a", "b", "out.json")
	if err := WriteFile(p, []byte("one"), Shared); err != nil {
		t.Fatal(err)
	}
	if err := WriteFile(p, []byte("two"), Shared); err != nil {
		t.Fatal(err)
	}
	if got := readString(t, p); got != "two" {
		t.Errorf("read back %q", got)
	}
	onlyFiles(t, filepath.Dir(p), "out.json")
}

func TestWriteFileParentIsAFile(t *testing.T) {
	f := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(f, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := WriteFile(filepath.Join(f, "child.json"), []byte("x"), Shared); err == nil {
		t.Fatal("want an error when the parent path is a file")
	}
}

// TestWriteFileReplacesALinkNotItsTarget: a rename puts a regular file
// where the link was; the file the link pointed at is untouched.
func TestWriteFileReplacesALinkNotItsTarget(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("symbolic links need privileges on Windows")
	}
	dir := t.TempDir()
	target := filepath.Join(dir, "bashrc")
	if err := os.WriteFile(target, []byte("# rc\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "results.json")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	if err := WriteFile(link, []byte("{}"), Shared); err != nil {
		t.Fatal(err)
	}
	if got := readString(t, target); got != "# rc\n" {
		t.Errorf("the link's target changed to %q", got)
	}
	st, err := os.Lstat(link)
	if err != nil || !st.Mode().IsRegular() {
		t.Errorf("%s is not a regular file after the write: %v %v", link, st, err)
	}
}

func TestCreateAbortAndCommit(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "report.html")
	if err := os.WriteFile(p, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := Create(p, Shared)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write([]byte("half")); err != nil {
		t.Fatal(err)
	}
	if got := readString(t, p); got != "old" {
		t.Errorf("visible before Commit: %q", got)
	}
	f.Abort()
	f.Abort() // twice is fine
	if got := readString(t, p); got != "old" {
		t.Errorf("Abort changed the file: %q", got)
	}
	onlyFiles(t, dir, "report.html")

	f, err = Create(p, Shared)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Abort()
	if _, err := f.Write([]byte("new")); err != nil {
		t.Fatal(err)
	}
	if err := f.Commit(); err != nil {
		t.Fatal(err)
	}
	if err := f.Commit(); err == nil {
		t.Error("a second Commit succeeded")
	}
	if _, err := f.Write([]byte("x")); err == nil {
		t.Error("Write after Commit succeeded")
	}
	if got := readString(t, p); got != "new" {
		t.Errorf("after Commit: %q", got)
	}
	onlyFiles(t, dir, "report.html")
}

// TestCommitFailureLeavesTheFile: when the rename cannot happen (the path
// is a non-empty directory), the temp file goes and the path is unchanged.
func TestCommitFailureLeavesTheFile(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "out")
	if err := os.MkdirAll(filepath.Join(p, "inside"), 0o755); err != nil {
		t.Fatal(err)
	}
	f, err := Create(p, Shared)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = f.Write([]byte("x"))
	if err := f.Commit(); err == nil {
		t.Fatal("Commit over a non-empty directory succeeded")
	}
	onlyFiles(t, dir, "out")
}

func TestTempNames(t *testing.T) {
	long := strings.Repeat("é", 300)
	for _, base := range []string{"scores.json", "m01_s001_v01__s0.json", long, ".env"} {
		n := tempName(base)
		if !IsTemp(n) {
			t.Errorf("IsTemp(%q) = false for a name tempName made", n)
		}
		if len(n) > 255 {
			t.Errorf("temp name of a long base is %d bytes", len(n))
		}
		if !strings.HasPrefix(n, ".") {
			t.Errorf("temp name %q is not hidden", n)
		}
	}
	if a, b := tempName("x"), tempName("x"); a == b {
		t.Errorf("two temp names alike: %s", a)
	}
	for name, want := range map[string]bool{
		".scores.json.tmp-0123456789abcdef": true,
		".conversations.json.tmp-123":       true, // earlier versions' names
		".tmp-456":                          true,
		".tmp-state.json-789":               true,
		".report-789.html.tmp":              true,
		".benchmark.yaml.42.tmp":            true,
		".scores.json.tmp-0123456789ABCDEF": false,
		".scores.json.tmp-":                 false,
		".scores.json.tmp-abc":              false,
		"scores.json.tmp-0123456789abcdef":  false,
		".env":                              false,
		".tmp":                              false,
		"notes.tmp":                         false,
		".bashrc":                           false,
		".lock":                             false,
		".draft.tmp":                        false,
	} {
		if got := IsTemp(name); got != want {
			t.Errorf("IsTemp(%q) = %v, want %v", name, got, want)
		}
	}
}

func TestWriteFileLeavesNoTempOnWriteError(t *testing.T) {
	dir := t.TempDir()
	f, err := Create(filepath.Join(dir, "x.json"), Shared)
	if err != nil {
		t.Fatal(err)
	}
	f.f.Close() // make the next write fail
	if _, err := f.Write([]byte("x")); err == nil {
		t.Fatal("write to a closed file succeeded")
	}
	f.Abort()
	onlyFiles(t, dir)
	if err := f.Commit(); err == nil {
		t.Error("Commit after Abort succeeded")
	}
}
