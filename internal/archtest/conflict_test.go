package archtest

import (
	"bufio"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A merge that left its conflict markers in a file still builds when the
// file is documentation (docs/commands.md carried one for a day): no text
// file of the tree may hold a line that starts a conflict's side.
func TestNoMergeConflictMarkers(t *testing.T) {
	root := filepath.Join("..", "..")
	text := map[string]bool{".go": true, ".md": true, ".yaml": true, ".yml": true, ".sh": true, ".txt": true, ".json": true, ".html": true}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if name := d.Name(); path != root && (strings.HasPrefix(name, ".") && name != ".ci" || name == "testdata" || name == "node_modules") {
				return filepath.SkipDir
			}
			return nil
		}
		if !text[filepath.Ext(path)] && filepath.Base(filepath.Dir(path)) != ".ci" {
			return nil
		}
		return checkMarkers(t, path)
	})
	if err != nil {
		t.Fatal(err)
	}
}

func checkMarkers(t *testing.T, path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
	for n := 1; sc.Scan(); n++ {
		ln := sc.Text()
		if strings.HasPrefix(ln, "<<<<<<< ") || strings.HasPrefix(ln, ">>>>>>> ") || ln == "<<<<<<<" || ln == ">>>>>>>" {
			t.Errorf("%s:%d: merge conflict marker %q", path, n, ln)
		}
	}
	return sc.Err()
}
