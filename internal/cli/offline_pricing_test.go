package cli

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// docs/config.md: the offline model, priced by name, lets a user try
// --max-cost and the bill without a key (its pricing: was ignored and
// every run cost $0, so the ceiling could never be reached).
func TestOfflineModelPricedByNameMeetsTheCeiling(t *testing.T) {
	dir, cfgPath, raw := initDemo(t)
	const care = "    offline: {care: 0.8}"
	i := strings.Index(string(raw), care)
	if i < 0 {
		t.Fatalf("config.yaml has no %q line to price", care)
	}
	end := i + strings.IndexByte(string(raw[i:]), '\n') + 1
	priced := string(raw[:end]) + "    pricing: {input: 100, output: 100}\n" + string(raw[end:])
	if err := os.WriteFile(cfgPath, []byte(priced), 0o644); err != nil {
		t.Fatal(err)
	}
	_, _, errs := run(t, dir, "run", "example", "--max-cost", "0.5")
	if !strings.Contains(errs, "cost ceiling $0.5000") {
		t.Errorf("a priced offline target never met the ceiling; stderr:\n%s", errs)
	}
	m := regexp.MustCompile(`spent now: \$([0-9.]+)`).FindStringSubmatch(errs)
	if m == nil || m[1] == "0.0000" {
		t.Errorf("the bill of a priced offline target: %v; stderr:\n%s", m, errs)
	}
}

// TestCeilingBeforeGenerationStopsTheRun: a ceiling reached while
// gen_metrics or gen_scenarios has written nothing is a stop at the
// ceiling like any other (exit 0, its line says to raise --max-cost): not
// exit 2 telling the user to "run `impactbench gen-scenarios` first", nor
// a failed metrics row (exit 1, "run the same command again", which
// meets the same ceiling). The rerun without a ceiling finishes.
func TestCeilingBeforeGenerationStopsTheRun(t *testing.T) {
	for _, tt := range []struct {
		name, bench string
		args        []string
	}{
		{"run, gen_scenarios", "example", []string{"run", "example"}},
		{"run, gen_metrics", "nomet", []string{"run", "nomet"}},
		{"gen-metrics", "nomet", []string{"gen-metrics", "nomet"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir, cfgPath, raw := initDemo(t)
			// The generator (user_model) priced so that its first call is
			// past the ceiling.
			priced := string(raw) + "\npricing:\n  offline-user: {input: 1000, output: 1000}\n"
			if err := os.WriteFile(cfgPath, []byte(priced), 0o644); err != nil {
				t.Fatal(err)
			}
			if tt.bench == "nomet" {
				b := filepath.Join(dir, "benchmarks", "nomet")
				if err := os.MkdirAll(b, 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(b, "benchmark.yaml"), []byte("name: No metrics\ndescription: Metrics a model writes.\n"), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			code, _, errs := run(t, dir, append(tt.args, "--max-cost", "0.01")...)
			if code != ExitOK || strings.Contains(errs, "does not exist") || strings.Contains(errs, "failed") ||
				!strings.Contains(errs, "cost ceiling $0.0100") || strings.Contains(errs, "stopped — \n") {
				t.Fatalf("%v at a ceiling the generator cannot pass: exit %d, want %d with the ceiling's line; stderr:\n%s", tt.args, code, ExitOK, errs)
			}
			if code, _, errs := run(t, dir, append([]string{"-q"}, tt.args...)...); code != ExitOK {
				t.Fatalf("rerun without a ceiling: exit %d\n%s", code, errs)
			}
		})
	}
}

// initDemo is a fresh `init` project: its folder, its config.yaml and
// that file's bytes.
func initDemo(t *testing.T) (dir, cfgPath string, raw []byte) {
	t.Helper()
	dir = filepath.Join(t.TempDir(), "demo")
	if code, _, errs := run(t, t.TempDir(), "init", dir); code != 0 {
		t.Fatalf("init: exit %d: %s", code, errs)
	}
	cfgPath = filepath.Join(dir, "config.yaml")
	raw, err := os.ReadFile(cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	return dir, cfgPath, raw
}
