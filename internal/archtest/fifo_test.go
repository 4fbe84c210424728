package archtest

import (
	"bytes"
	"go/ast"
	"go/build"
	"go/parser"
	"go/token"
	"io"
	"path"
	"testing"
)

// unixOnly is the build constraint of a file that makes named pipes
// (syscall.Mkfifo, which Windows has not).
const unixOnly = "//go:build darwin || dragonfly || freebsd || linux || netbsd || openbsd"

// TestMkfifoOnlyInUnixFiles: a Go file (tests included) that calls a
// Mkfifo is built only on unix (its name's GOOS or a build constraint such
// as unixOnly), so that `GOOS=windows go vet ./...` and `go test` of the
// package on Windows compile: they failed on six test files that did not.
func TestMkfifoOnlyInUnixFiles(t *testing.T) {
	root := moduleRoot(t)
	n := 0
	for _, f := range sourceFiles(t, true) {
		if !callsMkfifo(f.ast) {
			continue
		}
		n++
		if buildsOnWindows(t, root+"/"+path.Dir(f.path), path.Base(f.path), nil) {
			t.Errorf("%s calls Mkfifo yet builds on Windows: move the test (and only its helpers) into a *_unix_test.go starting with %s", f.path, unixOnly)
		}
	}
	if n == 0 {
		t.Fatal("found no file calling Mkfifo: the check looks at nothing")
	}
}

// TestMkfifoCheckCatchesAnUntaggedFile: the check above tells a file
// without a unix constraint from one with it.
func TestMkfifoCheckCatchesAnUntaggedFile(t *testing.T) {
	body := "package p\n\nimport \"syscall\"\n\nfunc f() { _ = syscall.Mkfifo(\"p\", 0o600) }\n"
	for _, tc := range []struct {
		name, src string
		windows   bool
	}{
		{"pipe_test.go", body, true},
		{"pipe_unix_test.go", body, true}, // "_unix" is no GOOS: the name alone does not do it
		{"pipe_unix_test.go", unixOnly + "\n\n" + body, false},
		{"pipe_linux_test.go", body, false},
		{"pipe_test.go", "//go:build unix\n\n" + body, false},
	} {
		f, err := parser.ParseFile(token.NewFileSet(), tc.name, tc.src, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		if !callsMkfifo(f) {
			t.Fatalf("%s: the call to Mkfifo is not seen", tc.name)
		}
		if got := buildsOnWindows(t, "/p", tc.name, []byte(tc.src)); got != tc.windows {
			t.Errorf("%s %q: builds on Windows = %v, want %v", tc.name, tc.src[:20], got, tc.windows)
		}
	}
}

// callsMkfifo reports whether the file refers to a Mkfifo of a package
// (syscall.Mkfifo, unix.Mkfifo).
func callsMkfifo(f *ast.File) bool {
	found := false
	ast.Inspect(f, func(n ast.Node) bool {
		if sel, ok := n.(*ast.SelectorExpr); ok && sel.Sel.Name == "Mkfifo" {
			if _, ok := sel.X.(*ast.Ident); ok {
				found = true
			}
		}
		return !found
	})
	return found
}

// buildsOnWindows reports whether go build for windows/amd64 takes the
// file name in dir (its name's GOOS and GOARCH, its build constraints);
// src, when given, is the file's content instead of the file on disk.
func buildsOnWindows(t *testing.T, dir, name string, src []byte) bool {
	t.Helper()
	ctx := build.Default
	ctx.GOOS, ctx.GOARCH = "windows", "amd64"
	if src != nil {
		ctx.OpenFile = func(string) (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(src)), nil }
	}
	ok, err := ctx.MatchFile(dir, name)
	if err != nil {
		t.Fatal(err)
	}
	return ok
}
