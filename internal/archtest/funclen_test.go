package archtest

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"sort"
	"strings"
	"testing"
)

// maxFuncLines is the most lines, from its func keyword to its closing
// brace, a function or method outside tests may span: a reader should not
// have to scroll through one.
const maxFuncLines = 80

// longFuncAllowed lists, by "path:Func" (methods as "path:Type.Method"), the
// non-test functions allowed to be longer than maxFuncLines, each with why.
// The list must be exact: an entry that is no longer long, or gone, fails.
var longFuncAllowed = map[string]string{
	"internal/benchcli/bench.go:newBenchCmd":                           "cobra flag declarations",
	"internal/cli/cmd_phases.go:newPhaseCmd":                           "cobra flag declarations and the stage dispatch they feed",
	"internal/cli/cmd_study.go:newPublishCmd":                          "cobra flag declarations",
	"internal/cli/cmd_view.go:newViewCmd":                              "cobra flag declarations",
	"internal/benchharness/caching.go:cacheFake.ServeHTTP":             "fake caching provider of the bench harness (test support)",
	"internal/benchharness/harness.go:Result.WriteText":                "bench harness report (measurement tooling, test support)",
	"internal/benchharness/harness.go:Run":                             "bench harness driver (measurement tooling, test support)",
	"internal/llm/batch/fakebatch/anthropic.go:Server.anthropicCreate": "fake batch API in test support",
	"internal/llm/llmtest/llmtest.go:Server.render":                    "fake provider in test support",
	"internal/llm/llmtest/llmtest.go:parseAnthropic":                   "fake provider in test support",
}

// funcLengths returns, per "path:Func" (methods as "path:Type.Method"), the
// lines each function declaration of files spans, its doc comment apart.
func funcLengths(files []goFile) map[string]int {
	lengths := map[string]int{}
	for _, f := range files {
		for _, decl := range f.ast.Decls {
			d, ok := decl.(*ast.FuncDecl)
			if !ok {
				continue
			}
			name := d.Name.Name
			if d.Recv != nil && len(d.Recv.List) == 1 {
				name = receiverBase(d.Recv.List[0].Type) + "." + name
			}
			start, end := f.fset.Position(d.Pos()).Line, f.fset.Position(d.End()).Line
			lengths[f.path+":"+name] = end - start + 1
		}
	}
	return lengths
}

// underCodeDirs keeps the files under internal/ and cmd/.
func underCodeDirs(files []goFile) []goFile {
	var kept []goFile
	for _, f := range files {
		if strings.HasPrefix(f.path, "internal/") || strings.HasPrefix(f.path, "cmd/") {
			kept = append(kept, f)
		}
	}
	return kept
}

// lengthProblems lists the functions of lengths longer than maxFuncLines
// that allowed does not list, and the entries of allowed that are gone or
// no longer long.
func lengthProblems(lengths map[string]int, allowed map[string]string) []string {
	var problems []string
	for _, k := range sortedKeys(lengths) {
		if _, ok := allowed[k]; lengths[k] > maxFuncLines && !ok {
			problems = append(problems, fmt.Sprintf("%s spans %d lines, more than %d: split it into well-named steps", k, lengths[k], maxFuncLines))
		}
	}
	for _, k := range sortedKeys(allowed) {
		n, found := lengths[k]
		switch {
		case !found:
			problems = append(problems, fmt.Sprintf("%s is allowed to be long but no longer exists: drop it from longFuncAllowed", k))
		case n <= maxFuncLines:
			problems = append(problems, fmt.Sprintf("%s is allowed to be long but spans %d lines now: drop it from longFuncAllowed", k, n))
		}
	}
	return problems
}

func TestNoFunctionLongerThan80Lines(t *testing.T) {
	lengths := funcLengths(underCodeDirs(sourceFiles(t, false)))
	for _, p := range lengthProblems(lengths, longFuncAllowed) {
		t.Error(p)
	}
	if os.Getenv("ARCHTEST_TOP") != "" {
		keys := sortedKeys(lengths)
		sort.SliceStable(keys, func(i, j int) bool { return lengths[keys[i]] > lengths[keys[j]] })
		for _, k := range keys {
			if lengths[k] >= 60 {
				t.Logf("%4d %s", lengths[k], k)
			}
		}
	}
}

func TestFunctionLengthCatchesALongFunction(t *testing.T) {
	var src strings.Builder
	src.WriteString("package p\ntype big[K any] struct{}\nfunc (b *big[K]) long() {\n")
	for i := range maxFuncLines - 1 {
		fmt.Fprintf(&src, "\t_ = %d\n", i)
	}
	src.WriteString("}\nfunc short() {}\n")
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "p.go", src.String(), 0)
	if err != nil {
		t.Fatal(err)
	}
	got := funcLengths([]goFile{{path: "internal/p/p.go", ast: f, fset: fset}})
	if got["internal/p/p.go:big.long"] != maxFuncLines+1 || got["internal/p/p.go:short"] != 1 {
		t.Fatalf("funcLengths = %v, want big.long spanning %d lines and short 1", got, maxFuncLines+1)
	}
	for _, c := range []struct {
		name    string
		allowed map[string]string
		want    []string // one substring per problem, in order
	}{
		{"long, not allowed", nil, []string{"internal/p/p.go:big.long spans 81 lines"}},
		{"long, allowed", map[string]string{"internal/p/p.go:big.long": "why"}, nil},
		{"allowed but short", map[string]string{"internal/p/p.go:big.long": "why", "internal/p/p.go:short": "why"},
			[]string{"internal/p/p.go:short is allowed to be long but spans 1 lines now"}},
		{"allowed but gone", map[string]string{"internal/p/p.go:big.long": "why", "internal/p/p.go:gone": "why"},
			[]string{"internal/p/p.go:gone is allowed to be long but no longer exists"}},
	} {
		problems := lengthProblems(got, c.allowed)
		if len(problems) != len(c.want) {
			t.Errorf("%s: problems %q, want %d", c.name, problems, len(c.want))
			continue
		}
		for i, w := range c.want {
			if !strings.Contains(problems[i], w) {
				t.Errorf("%s: problem %q, want it to say %q", c.name, problems[i], w)
			}
		}
	}
}
