// Package archtest keeps the tree in the shape ARCHITECTURE.md describes.
// Its tests read the import graph (`go list -deps -json ./...`) and every Go
// file of the module (go/ast), and fail when
//
//   - a package imports one on a higher floor, or a package is on no floor,
//     or ARCHITECTURE.md's floors list other packages than the test's;
//   - internal/schedule reaches stage, prompt, layout or file code;
//   - internal/runner grows past its budget of non-test lines;
//   - a type has more than 40 methods;
//   - a function or method outside tests, under internal/ or cmd/, spans
//     more than 80 lines and is not in longFuncAllowed (or an entry there
//     is no longer long);
//   - a struct stores a context.Context (contexts are passed, first);
//   - a package that starts goroutines has no leak check (goleak) in its
//     tests;
//   - code outside internal/fsx (and the bench harness) lists a directory
//     with a standard library call that reads it whole (filepath.Glob,
//     filepath.WalkDir, os.ReadDir, …) rather than fsx.ReadDir (bounded)
//     or fsx.Walk (in batches);
//   - a file that calls Mkfifo builds on Windows (it belongs in a
//     *_unix_test.go with a unix build constraint).
//
// `go test -v ./internal/archtest` logs the runner's line count and the type
// with the most methods; with ARCHTEST_TOP=1 it lists every type of 20
// methods or more, and every function of 60 lines or more.
//
// The package holds no code besides its tests, so nothing imports it and it
// sits outside the floors.
package archtest
