package viewer

import (
	"bufio"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/impactbench/impactbench/internal/artifacts"
)

// The viewer's index reads a benchmark's rows through artifacts' input
// guards, as the report does: a row over the row limit (one conversation
// of a shared folder padded to gigabytes) is refused, naming the file and
// row, instead of being read into memory whole; so is a row that is not
// UTF-8.
func TestIndexRowsAreBounded(t *testing.T) {
	dir := t.TempDir()
	big := filepath.Join(dir, "big.json")
	f, err := os.Create(big)
	if err != nil {
		t.Fatal(err)
	}
	w := bufio.NewWriter(f)
	w.WriteString(`[{"id": "m01_s001_v01", "transcript": [{"role": "user", "content": "`)
	chunk := strings.Repeat("x", 1<<20)
	for range artifacts.MaxRowBytes>>20 + 1 {
		w.WriteString(chunk)
	}
	w.WriteString(`"}]}]`)
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	f.Close()
	latin1 := filepath.Join(dir, "latin1.json")
	if err := os.WriteFile(latin1, []byte("[{\"id\": \"m01_s001_v01\", \"transcript\": [{\"role\": \"user\", \"content\": \"caf\xe9\"}]}]"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{big, latin1} {
		_, _, _, err := readRows[lightConv](path)
		var fe *artifacts.FileError
		if !errors.As(err, &fe) || fe.Path != path || !strings.Contains(err.Error(), "row 0") {
			t.Errorf("%s: readRows = %v, want a *FileError naming it and row 0", filepath.Base(path), err)
		}
	}
}
