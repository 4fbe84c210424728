package archtest

import (
	"go/ast"
	"path"
	"strconv"
	"strings"
	"testing"
)

// listingFuncs are the standard library's directory listings that read a
// folder whole (and sort it): a user's folder of millions of entries would
// be held in memory. Outside internal/fsx, code lists a folder through
// fsx.ReadDir (bounded: past its limit, an input error naming the folder)
// or walks one with fsx.Walk (in batches).
var listingFuncs = map[string][]string{
	"path/filepath": {"Glob", "Walk", "WalkDir"},
	"os":            {"ReadDir"},
	"io/ioutil":     {"ReadDir"},
	"io/fs":         {"Glob", "ReadDir", "WalkDir"},
}

// listingMethods are the listing methods of *os.File (and fs.ReadDirFile):
// only internal/fsx reads a directory itself.
var listingMethods = []string{"ReadDir", "Readdir", "Readdirnames"}

// unboundedListingAllowed are the directories whose code may list folders
// as it likes: fsx, which does the bounded listing, and the bench
// harness, dev tooling that lists only the folders it made.
var unboundedListingAllowed = []string{"internal/fsx", "internal/benchharness"}

// TestEveryListingIsBounded: no non-test code outside
// unboundedListingAllowed lists a directory with filepath.Glob,
// filepath.Walk(Dir), os.ReadDir, ioutil.ReadDir, fs.Glob, fs.ReadDir,
// fs.WalkDir or a directory's own ReadDir/Readdir/Readdirnames.
func TestEveryListingIsBounded(t *testing.T) {
	for _, f := range sourceFiles(t, false) {
		if allowedToList(f.dir) {
			continue
		}
		imports := map[string]string{} // local name → import path
		for _, im := range f.ast.Imports {
			p, err := strconv.Unquote(im.Path.Value)
			if err != nil {
				continue
			}
			name := path.Base(p)
			if im.Name != nil {
				name = im.Name.Name
			}
			imports[name] = p
		}
		ast.Inspect(f.ast, func(n ast.Node) bool {
			sel, ok := n.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			if id, ok := sel.X.(*ast.Ident); ok {
				if p, isPkg := imports[id.Name]; isPkg && id.Obj == nil {
					for _, name := range listingFuncs[p] {
						if sel.Sel.Name == name {
							t.Errorf("%s: %s.%s reads a folder whole: list it with fsx.ReadDir (bounded) or walk it with fsx.Walk", f.path, p, name)
						}
					}
					return true
				}
			}
			for _, name := range listingMethods {
				if sel.Sel.Name == name {
					t.Errorf("%s: .%s reads a directory outside internal/fsx: list it with fsx.ReadDir (bounded) or walk it with fsx.Walk", f.path, name)
				}
			}
			return true
		})
	}
}

func allowedToList(dir string) bool {
	for _, a := range unboundedListingAllowed {
		if dir == a || strings.HasPrefix(dir, a+"/") {
			return true
		}
	}
	return false
}
