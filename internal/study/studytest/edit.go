package studytest

import (
	"os"
	"strings"
	"testing"
)

// Edit replaces the first old in the file at path with new, failing t when
// the file lacks it (a test that edits nothing would prove nothing).
func Edit(t testing.TB, path, old, new string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), old) {
		t.Fatalf("%s has no %q", path, old)
	}
	if err := os.WriteFile(path, []byte(strings.Replace(string(b), old, new, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
}
