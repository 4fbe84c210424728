package archtest

import (
	"bytes"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

const (
	// runnerBudget is the most non-test lines internal/runner may hold
	// (issue #32): what it does beyond wiring belongs to a package below it.
	runnerBudget = 2500
	// maxMethods is the most methods a type may have (DEVELOPERS.md).
	maxMethods = 40
)

// goFile is one parsed Go file of the module.
type goFile struct {
	path string // slash-separated, relative to the module root
	dir  string // its package directory, relative to the module root
	ast  *ast.File
	fset *token.FileSet // positions of ast
}

// sourceFiles parses every Go file of the module outside testdata and hidden
// directories; tests says whether _test.go files are included.
func sourceFiles(t *testing.T, tests bool) []goFile {
	t.Helper()
	root := moduleRoot(t)
	fset := token.NewFileSet()
	var files []goFile
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if p != root && (name == "testdata" || name == "vendor" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_")) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(name, ".go") || (!tests && strings.HasSuffix(name, "_test.go")) {
			return nil
		}
		f, err := parser.ParseFile(fset, p, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		r, _ := filepath.Rel(root, p)
		files = append(files, goFile{path: filepath.ToSlash(r), dir: filepath.ToSlash(filepath.Dir(r)), ast: f, fset: fset})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("found no Go file")
	}
	return files
}

func TestRunnerWithinBudget(t *testing.T) {
	dir := filepath.Join(moduleRoot(t), "internal", "runner")
	n, err := nonTestLines(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("internal/runner: %d non-test lines (budget %d)", n, runnerBudget)
	if n > runnerBudget {
		t.Errorf("internal/runner has %d non-test lines, more than %d: move what is not wiring into a package below it", n, runnerBudget)
	}
}

// nonTestLines counts the lines of the non-test Go files in dir and below.
func nonTestLines(dir string) (int, error) {
	n := 0
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		n += bytes.Count(b, []byte("\n"))
		if len(b) > 0 && b[len(b)-1] != '\n' {
			n++
		}
		return nil
	})
	return n, err
}

// methodCounts counts, per "dir.Type", the methods declared on the type (on
// T and *T alike, generic receivers by their base name) and, for interface
// types, the methods their declaration lists.
func methodCounts(files []goFile) map[string]int {
	counts := map[string]int{}
	for _, f := range files {
		for _, decl := range f.ast.Decls {
			switch d := decl.(type) {
			case *ast.FuncDecl:
				if d.Recv != nil && len(d.Recv.List) == 1 {
					counts[f.dir+"."+receiverBase(d.Recv.List[0].Type)]++
				}
			case *ast.GenDecl:
				for _, s := range d.Specs {
					if ts, ok := s.(*ast.TypeSpec); ok {
						if it, ok := ts.Type.(*ast.InterfaceType); ok {
							counts[f.dir+"."+ts.Name.Name] += len(it.Methods.List)
						}
					}
				}
			}
		}
	}
	return counts
}

// receiverBase is T for receivers T, *T, T[K] and *T[K, V].
func receiverBase(e ast.Expr) string {
	for {
		switch x := e.(type) {
		case *ast.StarExpr:
			e = x.X
		case *ast.ParenExpr:
			e = x.X
		case *ast.IndexExpr:
			e = x.X
		case *ast.IndexListExpr:
			e = x.X
		case *ast.Ident:
			return x.Name
		default:
			return fmt.Sprintf("%T", e)
		}
	}
}

func TestNoTypeHasMoreThan40Methods(t *testing.T) {
	counts := methodCounts(sourceFiles(t, false))
	most, name := 0, ""
	for _, k := range sortedKeys(counts) {
		if counts[k] > maxMethods {
			t.Errorf("%s has %d methods, more than %d: split it", k, counts[k], maxMethods)
		}
		if counts[k] > most {
			most, name = counts[k], k
		}
	}
	t.Logf("most methods: %s with %d", name, most)
	if os.Getenv("ARCHTEST_TOP") != "" {
		for _, k := range sortedKeys(counts) {
			if counts[k] >= 20 {
				t.Logf("%4d %s", counts[k], k)
			}
		}
	}
}

func TestMethodCountCatchesABigType(t *testing.T) {
	var src strings.Builder
	src.WriteString("package p\ntype big[K any] struct{}\n")
	for i := range maxMethods + 1 {
		recv := "big[K]"
		if i%2 == 0 {
			recv = "*big[K]"
		}
		fmt.Fprintf(&src, "func (b %s) m%d() {}\n", recv, i)
	}
	f, err := parser.ParseFile(token.NewFileSet(), "p.go", src.String(), 0)
	if err != nil {
		t.Fatal(err)
	}
	if got := methodCounts([]goFile{{dir: "p", ast: f}})["p.big"]; got != maxMethods+1 {
		t.Fatalf("counted %d methods on p.big, want %d", got, maxMethods+1)
	}
}

// storedContexts returns "file: Type.field" for every struct field, in any
// struct type (named, anonymous, nested), whose type is context.Context.
func storedContexts(files []goFile) []string {
	var found []string
	for _, f := range files {
		ctxName := contextImportName(f.ast)
		if ctxName == "" {
			continue
		}
		ast.Inspect(f.ast, func(n ast.Node) bool {
			st, ok := n.(*ast.StructType)
			if !ok {
				return true
			}
			for _, fld := range st.Fields.List {
				if isContext(fld.Type, ctxName) {
					found = append(found, fmt.Sprintf("%s: a struct field of type context.Context (%s)", f.path, fieldNames(fld)))
				}
			}
			return true
		})
	}
	return found
}

// contextImportName is the name file f gives the standard context package,
// or "" when it does not import it.
func contextImportName(f *ast.File) string {
	for _, imp := range f.Imports {
		if p, _ := strconv.Unquote(imp.Path.Value); p == "context" {
			if imp.Name != nil {
				return imp.Name.Name
			}
			return "context"
		}
	}
	return ""
}

func isContext(e ast.Expr, ctxName string) bool {
	sel, ok := e.(*ast.SelectorExpr)
	if !ok || sel.Sel.Name != "Context" {
		return false
	}
	id, ok := sel.X.(*ast.Ident)
	return ok && id.Name == ctxName
}

func fieldNames(f *ast.Field) string {
	if len(f.Names) == 0 {
		return "embedded"
	}
	var names []string
	for _, n := range f.Names {
		names = append(names, n.Name)
	}
	return strings.Join(names, ", ")
}

// Contexts are passed as the first parameter, never stored (DEVELOPERS.md):
// a stored context outlives the call it was meant for.
func TestNoStoredContext(t *testing.T) {
	for _, s := range storedContexts(sourceFiles(t, true)) {
		if !storedContextAllowed[s] {
			t.Error(s)
		}
	}
}

// storedContextAllowed are the browser tests' tabs: chromedp's handle on a
// browser tab is a context by the library's design (every action takes it),
// so a test's page keeps it as long as the tab lives. Nothing else may.
var storedContextAllowed = map[string]bool{
	"internal/site/browser_test.go: a struct field of type context.Context (ctx)":        true,
	"internal/viewer/team_browser_test.go: a struct field of type context.Context (ctx)": true,
}

func TestStoredContextCheckCatchesOne(t *testing.T) {
	src := "package p\nimport stdctx \"context\"\ntype a struct{ n int; c stdctx.Context }\nvar b = []struct{ stdctx.Context }{}\n"
	f, err := parser.ParseFile(token.NewFileSet(), "p.go", src, 0)
	if err != nil {
		t.Fatal(err)
	}
	if got := storedContexts([]goFile{{path: "p.go", ast: f}}); len(got) != 2 {
		t.Fatalf("found %q, want the named field and the embedded one", got)
	}
}
