package callstore

import (
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/impactbench/impactbench/internal/fault"
	"github.com/impactbench/impactbench/internal/fsx"
)

// TestCrowdedFolderIsRefused: a units folder, or its .seg folder, holding
// more than maxDirEntries entries (of any name) is refused by List and by
// opening a unit, and by ListUnits (status), with an input error naming the folder and the limit,
// after reading no more than that; nothing in the store changes. At the
// bound it is listed.
func TestCrowdedFolderIsRefused(t *testing.T) {
	defer func(n int) { maxDirEntries = n }(maxDirEntries)
	maxDirEntries = 5
	for _, tc := range []struct {
		name    string
		folder  string // under the store, holding the entries
		entries int
		refused bool
	}{
		{"units folder at the bound", "t/sim", 5, false},
		{"units folder over the bound", "t/sim", 6, true},
		{"segments folder at the bound", "t/sim/" + segDirName, 5, false},
		{"segments folder over the bound", "t/sim/" + segDirName, 6, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			dir := filepath.Join(root, filepath.FromSlash(tc.folder))
			if err := os.MkdirAll(dir, 0o700); err != nil {
				t.Fatal(err)
			}
			for i := range tc.entries {
				if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("n%d", i)), nil, 0o600); err != nil {
					t.Fatal(err)
				}
			}
			before := tree(t, root)
			s := Open(root, false)
			_, listErr := s.List(t.Context(), "t/sim")
			_, _, unitsErr := ListUnits(filepath.Join(root, "t", "sim"))
			u, openErr := s.Unit("t/sim/u")
			if openErr == nil {
				u.Close()
			}
			if !tc.refused {
				if listErr != nil || openErr != nil || unitsErr != nil {
					t.Fatalf("List: %v; Unit: %v; ListUnits: %v", listErr, openErr, unitsErr)
				}
				return
			}
			for what, err := range map[string]error{"List": listErr, "Unit": openErr, "ListUnits": unitsErr} {
				var many *fsx.TooManyEntriesError
				if !errors.As(err, &many) || !strings.Contains(err.Error(), dir) || !strings.Contains(err.Error(), "5 entries") || fault.KindOf(err) != fault.Input {
					t.Errorf("%s: err = %v, want an input error naming %s and its limit", what, err, dir)
				}
			}
			if after := tree(t, root); !maps.Equal(before, after) {
				t.Errorf("the store changed:\nbefore %v\nafter  %v", before, after)
			}
		})
	}
}

// tree is every path under root with its file's content.
func tree(t *testing.T, root string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		var b []byte
		if !d.IsDir() {
			if b, err = os.ReadFile(p); err != nil {
				return err
			}
		}
		out[p] = string(b)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}
