package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/impactbench/impactbench/internal/config"
	"github.com/impactbench/impactbench/internal/fault"
	"github.com/impactbench/impactbench/internal/llm"
	"github.com/impactbench/impactbench/internal/phase"
	"github.com/impactbench/impactbench/internal/runner"
	"github.com/impactbench/impactbench/internal/work"
)

func TestExitCodeMapping(t *testing.T) {
	cases := []struct {
		name string
		err  error
		want int
	}{
		{"nil", nil, ExitOK},
		{"usage", usagef("bad"), ExitUsage},
		{"config", &config.Error{File: "config.yaml"}, ExitUsage},
		{"input", &fault.Error{Kind: fault.Input, Msg: "x"}, ExitUsage},
		{"wrapped input", fmt.Errorf("ctx: %w", &fault.Error{Kind: fault.Input, Msg: "x"}), ExitUsage},
		{"missing env at call", &llm.Error{Kind: llm.KindConfig}, ExitUsage},
		{"refused overwrite", fmt.Errorf("evaluate: %w", &phase.RefusedError{File: "scores.json"}), ExitUsage},
		{"partial", &runner.PartialError{Failed: 2}, ExitFailure},
		{"auth", &llm.Error{Kind: llm.KindAuth}, ExitFailure},
		{"locked", &work.ErrLocked{Bench: "b"}, ExitFailure},
		{"interrupted", fmt.Errorf("simulate: %w", context.Canceled), ExitInterrupted},
		{"other", errors.New("boom"), ExitFailure},
	}
	for _, c := range cases {
		if got := exitCode(c.err); got != c.want {
			t.Errorf("%s: exit %d, want %d", c.name, got, c.want)
		}
	}
}

func run(t *testing.T, dir string, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := Main(append([]string{"--config", filepath.Join(dir, "config.yaml")}, args...), strings.NewReader(""), &out, &errb)
	return code, out.String(), errb.String()
}

func TestCommandLine(t *testing.T) {
	dir := t.TempDir()
	if code, _, errs := run(t, dir, "init", dir); code != 0 || !strings.Contains(errs, "config.yaml") {
		t.Fatalf("init: %d %s", code, errs)
	}
	cases := []struct {
		args     []string
		code     int
		contains string
	}{
		{[]string{"--version"}, 0, "impactbench "},
		{[]string{"bogus"}, ExitUsage, "unknown command"},
		{[]string{"rn"}, ExitUsage, "Did you mean this?\n\trun"},
		{[]string{"completion", "bash", "extra"}, ExitUsage, "unknown command \"extra\""},
		{[]string{"run", "example", "--max-cost", "x"}, ExitUsage, "--max-cost"},
		{[]string{"run"}, ExitUsage, "expected a benchmark name (a directory under benchmarks/), e.g. `impactbench run example`"},
		{[]string{"run", "example", "--nope"}, ExitUsage, "unknown flag"},
		{[]string{"run", "all", "nope"}, ExitUsage, "target \"nope\" is not in"},
		{[]string{"run", "missing-bench"}, ExitUsage, "benchmark \"missing-bench\" not found"},
		{[]string{"simulate", "example", "nope"}, ExitUsage, "target \"nope\" is not in"},
		{[]string{"run", "example", "--shard", "3/2"}, ExitUsage, "--shard"},
		{[]string{"validate", "example"}, ExitUsage, "--swap"},
		{[]string{"validate", "example", "--swap", "cook=x"}, ExitUsage, "role must be"},
		{[]string{"gen_metrics", "example", "--dry-run"}, 0, "no model was called"},
		// `all` where a command takes one benchmark says what does the study.
		{[]string{"simulate", "all"}, ExitUsage, "simulate works on one benchmark at a time, not all: `impactbench run all` runs every benchmark's stages as one study"},
		{[]string{"evaluate", "all", "offline-careful"}, ExitUsage, "`impactbench run all`"},
		{[]string{"plan", "all"}, ExitUsage, "`impactbench run all --dry-run` plans the whole study"},
		{[]string{"validate", "all", "--swap", "judge=x"}, ExitUsage, "name it, e.g. `impactbench validate example"},
		// A command that takes no arguments says what it takes instead.
		{[]string{"publish", "site-data"}, ExitUsage, "impactbench publish takes no arguments, got \"site-data\": to write into site-data, use -o site-data"},
		{[]string{"study", "example"}, ExitUsage, "use `impactbench report example`"},
		{[]string{"view", "example"}, ExitUsage, "impactbench view takes no arguments, got \"example\": it serves every benchmark"},
		{[]string{"version", "x y"}, ExitUsage, "impactbench version takes no arguments, got \"x y\""},
	}
	for _, c := range cases {
		code, out, errs := run(t, dir, c.args...)
		if code != c.code || !strings.Contains(out+errs, c.contains) {
			t.Errorf("%v: exit %d (want %d), output %q lacks %q", c.args, code, c.code, out+errs, c.contains)
		}
	}
	// Help for every command renders with examples.
	for _, cmd := range []string{"run", "gen-metrics", "gen-scenarios", "simulate", "evaluate", "aggregate", "validate", "compare", "merge", "report", "status"} {
		code, out, _ := run(t, dir, cmd, "--help")
		if code != 0 || !strings.Contains(out, "Usage:") {
			t.Errorf("%s --help: exit %d %q", cmd, code, out)
		}
	}
	if code, out, _ := run(t, dir, "completion", "bash"); code != 0 || !strings.Contains(out, "bash completion") {
		t.Errorf("completion: %d", code)
	}
	// A missing config points at init.
	if code, _, errs := run(t, filepath.Join(dir, "nowhere"), "run", "example"); code != ExitUsage || !strings.Contains(errs, "impactbench init") {
		t.Errorf("missing config: %d %q", code, errs)
	}
	if _, err := os.Stat(filepath.Join(dir, "benchmarks", "example", "scenarios.json")); err == nil {
		t.Error("a failed or dry-run command wrote scenarios.json")
	}
}
