package config

import (
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"unicode/utf8"

	"github.com/goccy/go-yaml/parser"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/impactbench/impactbench/internal/hostile"
)

// config.yaml and benchmark.yaml are the files a user writes by hand (and
// a benchmark folder may come from someone else), fuzzed. Seeds: every
// YAML file under testdata and the scaffold, and testdata/fuzz/<Fuzz…>/,
// which holds the files of cmd/impactbench's bad-input corpus and every
// regression the fuzzers found, and the hostile shapes of internal/hostile
// (alias bombs, deep nesting, huge lists). Properties: no input allocates
// more than maxFuzzAlloc in all; no input panics; a file that
// is not UTF-8 or not YAML is an error naming the file; what is accepted
// meets the documented bounds; and (benchmark.yaml) SaveMetrics writes the
// metrics read back as exactly those metrics, the rest unchanged.

func addYAMLSeeds(f *testing.F, globs ...string) {
	f.Helper()
	for _, g := range globs {
		paths, err := filepath.Glob(g)
		if err != nil || len(paths) == 0 {
			f.Fatalf("no seeds match %s", g)
		}
		for _, p := range paths {
			b, err := os.ReadFile(p)
			if err != nil {
				f.Fatal(err)
			}
			f.Add(b)
		}
	}
}

// addHostileSeeds adds the hostile shapes of TestHostileYAMLIsBounded.
func addHostileSeeds(f *testing.F, head, free, mapKey, anyKey string) {
	for _, gen := range hostile.YAMLShapes(head, free, mapKey, anyKey) {
		f.Add(gen())
	}
}

// maxFuzzAlloc bounds what one load may allocate in all (TotalAlloc):
// generous, far below what a reader without bounds takes on the hostile
// seeds (gigabytes).
const maxFuzzAlloc = 512 << 20

// allocated runs f and returns the bytes it allocated.
func allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

func FuzzLoadConfig(f *testing.F) {
	addYAMLSeeds(f, "testdata/good/*.yaml", "testdata/bad/*.yaml", "testdata/dotenv/config.yaml", "testdata/upstream-config.yaml", "scaffold/config.yaml")
	addHostileSeeds(f, "", "x-", "user_model", "")
	dir := f.TempDir()
	path := filepath.Join(dir, "config.yaml")
	f.Fuzz(func(t *testing.T, src []byte) {
		if err := os.WriteFile(path, src, 0o644); err != nil {
			t.Fatal(err)
		}
		// ${VAR} references expand to nothing; .env is never exported.
		var cfg *Config
		var err error
		if n := allocated(func() { cfg, err = LoadWithOptions(path, LoadOptions{AllowMissingEnv: true, LookupEnv: noEnv}) }); n > maxFuzzAlloc {
			t.Fatalf("loading %d bytes allocated %d MB", len(src), n>>20)
		}
		if checkYAMLOutcome(t, path, src, err) {
			checkConfigBounds(t, cfg)
		}
	})
}

// checkYAMLOutcome checks what a loader made of src: a refusal must name
// the file and a problem; an acceptance must be of valid UTF-8 that the
// YAML parser reads too. It reports whether src was accepted.
func checkYAMLOutcome(t *testing.T, file string, src []byte, err error) bool {
	t.Helper()
	if err != nil {
		var ce *Error
		if !errors.As(err, &ce) || ce.File != file || len(ce.Problems) == 0 {
			t.Fatalf("error does not name the file and a problem: %T %v", err, err)
		}
		return false
	}
	if !utf8.Valid(src) {
		t.Fatalf("accepted a file that is not UTF-8: %q", src)
	}
	if _, perr := parser.ParseBytes(src, 0); perr != nil {
		t.Fatalf("accepted a file the YAML parser refuses (%v): %q", perr, src)
	}
	return true
}

// checkConfigBounds: what Load accepts is what the docs promise.
func checkConfigBounds(t *testing.T, cfg *Config) {
	t.Helper()
	g := cfg.Generation
	if g.Turns < 1 || g.Turns > MaxTurns || g.NumSamples < 1 || g.NumSamples > MaxNumSamples ||
		g.ScenariosPerMetric < 1 || g.ScenariosPerMetric > MaxScenariosPerMetric {
		t.Fatalf("accepted generation %+v out of bounds", g)
	}
	ids := map[string]bool{}
	for i, m := range cfg.Targets {
		if m.ID == "" || ids[m.ID] {
			t.Fatalf("accepted targets[%d] with an empty or repeated id %q", i, m.ID)
		}
		ids[m.ID] = true
	}
	if cfg.MaxCost < 0 {
		t.Fatalf("accepted max_cost %v", cfg.MaxCost)
	}
}

func FuzzLoadBenchmark(f *testing.F) {
	addYAMLSeeds(f, "testdata/good/bench-*.yaml", "testdata/benchbad/*.yaml", "testdata/commented/*.yaml",
		"testdata/humanebench/*.yaml", "testdata/save/*.in.yaml", "scaffold/benchmarks/*/benchmark.yaml")
	addHostileSeeds(f, "name: n\ndescription: d\n", "", "scenario", "lol")
	const file = "benchmark.yaml"
	f.Fuzz(func(t *testing.T, src []byte) {
		var b *Benchmark
		var ps *problems
		if n := allocated(func() { b, ps = decodeBenchmark(file, src) }); n > maxFuzzAlloc {
			t.Fatalf("decoding %d bytes allocated %d MB", len(src), n>>20)
		}
		if !checkYAMLOutcome(t, file, src, ps.err()) {
			return
		}
		if b.Name == "" || b.Description == "" {
			t.Fatalf("accepted a benchmark without name or description: %q", src)
		}
		if len(b.Metrics) == 0 {
			return
		}
		if err := ValidateMetrics(b.Metrics); err != nil {
			t.Fatalf("accepted metrics that ValidateMetrics refuses: %v", err)
		}
		out, err := replaceMetrics(file, src, b.Metrics)
		if err != nil {
			t.Fatalf("cannot write back the metrics read: %v\n%s", err, src)
		}
		b2, ps2 := decodeBenchmark(file, out)
		if err := ps2.err(); err != nil {
			t.Fatalf("metrics written back do not read: %v\n%s", err, out)
		}
		// What the file says, not where: no warnings (their lines move),
		// an absent list is an empty one, and a number is a number (the
		// writer prints a whole float as 3, as SaveMetrics's own check
		// allows: canonMetrics).
		b.Warnings, b2.Warnings = nil, nil
		if d := cmp.Diff(canonMetrics(b.Metrics), canonMetrics(b2.Metrics), cmpopts.EquateEmpty()); d != "" {
			t.Fatalf("write and read changed the metrics (-read +written):\n%s\n%q\n%q", d, src, out)
		}
		b.Metrics, b2.Metrics = nil, nil
		if d := cmp.Diff(b, b2, cmpopts.EquateEmpty()); d != "" {
			t.Fatalf("write and read changed the benchmark (-read +written):\n%s\n%q\n%q", d, src, out)
		}
	})
}
