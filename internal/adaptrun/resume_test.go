package adaptrun_test

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/impactbench/impactbench/internal/adaptive"
	"github.com/impactbench/impactbench/internal/adaptrun"
	"github.com/impactbench/impactbench/internal/cli"
	"github.com/impactbench/impactbench/internal/config"
	"github.com/impactbench/impactbench/internal/runner"
	"github.com/impactbench/impactbench/internal/work"
)

// project is a fresh offline project with a study's inputs, its set capped
// at 6 base scenarios per metric.
func project(t *testing.T) (cfgPath string) {
	t.Helper()
	dir := t.TempDir()
	cfgPath = filepath.Join(dir, "config.yaml")
	for _, args := range [][]string{{"init", dir}, {"--config", cfgPath, "init", "--study", dir}} {
		var errb bytes.Buffer
		if code := cli.Main(args, strings.NewReader(""), io.Discard, &errb); code != 0 {
			t.Fatalf("%v: %s", args, errb.String())
		}
	}
	b, _ := os.ReadFile(cfgPath)
	b = bytes.Replace(b, []byte("scenarios_per_metric: 2"), []byte("scenarios_per_metric: 6"), 1)
	if err := os.WriteFile(cfgPath, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return cfgPath
}

type study struct{ *runner.Study }

func (s study) Benches() []*work.Bench {
	var out []*work.Bench
	for _, r := range s.Benchmarks() {
		out = append(out, r.Work())
	}
	return out
}

// runOnce runs the adaptive study in one process until it stops, or until
// cancel says to stop it (after the look of the round it names); it
// returns the calls it paid.
func runOnce(t *testing.T, cfgPath string, killAfter int) int {
	t.Helper()
	cfg, err := config.LoadWithOptions(cfgPath, config.LoadOptions{AllowMissingEnv: true})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	benches := filepath.Join(cfg.Dir, "benchmarks")
	s, err := runner.NewStudy(ctx, cfg, []string{filepath.Join(benches, "example")}, runner.Options{Stderr: io.Discard})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	looks := 0
	o := adaptrun.Options{Dir: benches, Design: adaptive.Options{Max: 6}, Logf: func(string, ...any) {
		if looks++; looks == killAfter {
			cancel() // the next round starts cancelled, as after a kill
		}
	}}
	_, err = adaptrun.Run(ctx, study{s}, nil, o)
	if killAfter == 0 && err != nil {
		t.Fatal(err)
	}
	if killAfter > 0 && err == nil {
		t.Fatalf("the run was not stopped after look %d", killAfter)
	}
	return s.Summary().Spent.Requests
}

// TestResumePaysNothingTwice: an adaptive study stopped after its second
// look and run again pays, over both processes, exactly the calls one
// uninterrupted run pays, and ends on the same scenario set.
func TestResumePaysNothingTwice(t *testing.T) {
	whole := project(t)
	want := runOnce(t, whole, 0)
	killed := project(t)
	first := runOnce(t, killed, 2)
	second := runOnce(t, killed, 0)
	t.Logf("uninterrupted: %d calls; killed after look 2: %d, resumed: %d", want, first, second)
	if first+second != want || first == 0 || second == 0 {
		t.Errorf("killed after look 2 and resumed: %d + %d calls, want %d (one uninterrupted run)", first, second, want)
	}
	set := func(cfgPath string) []byte {
		b, err := os.ReadFile(filepath.Join(filepath.Dir(cfgPath), "benchmarks", "example", "scenarios.json"))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	if !bytes.Equal(set(whole), set(killed)) {
		t.Error("the resumed study ended on another scenario set than the uninterrupted one")
	}
}
