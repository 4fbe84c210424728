package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// TestSpentLineAndOpenings: a fresh run replays the opening one target
// paid for to the other, and the summary says so instead of calling it
// "reused from earlier runs"; --independent-openings (and
// generation.independent_openings, which the flag overrides both ways)
// asks each target's opening itself, so a fresh run replays nothing.
func TestSpentLineAndOpenings(t *testing.T) {
	notPaid := regexp.MustCompile(`stored answers replayed, not paid: (\d+) calls worth \$[0-9.]+ \(from earlier runs, or an opening already paid for another target\)`)
	cases := []struct {
		name       string
		configured bool // generation.independent_openings: true
		flag       string
		replayed   bool
	}{
		{"shared by default", false, "", true},
		{"flag asks each target", false, "--independent-openings", false},
		{"config asks each target", true, "", false},
		{"flag overrides config", true, "--independent-openings=false", true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			if code, _, errs := run(t, dir, "init", dir); code != 0 {
				t.Fatalf("init: %s", errs)
			}
			if c.configured {
				cfgPath := filepath.Join(dir, "config.yaml")
				cfg, _ := os.ReadFile(cfgPath)
				cfg = bytes.Replace(cfg, []byte("# independent_openings: true"), []byte("independent_openings: true"), 1)
				if err := os.WriteFile(cfgPath, cfg, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			args := []string{"run", "example", "--no-report"}
			if c.flag != "" {
				args = append(args, c.flag)
			}
			code, _, errs := run(t, dir, args...)
			if code != 0 {
				t.Fatalf("%v: exit %d\n%s", args, code, errs)
			}
			if strings.Contains(errs, "reused from earlier runs") {
				t.Errorf("a fresh run says it reused earlier runs:\n%s", errs)
			}
			m := notPaid.FindStringSubmatch(errs)
			if m == nil {
				t.Fatalf("no line of replayed answers:\n%s", errs)
			}
			if n, _ := strconv.Atoi(m[1]); (n > 0) != c.replayed {
				t.Errorf("%d calls replayed on a fresh run, want replays: %v", n, c.replayed)
			}
		})
	}
}

// TestRefusedBeforeStartPrintsOnlyTheError: a command its checks refuse
// before anything ran — a target config.yaml lacks, an input not written
// yet — spent nothing, so it prints only its error: no "spent now: $0.0000"
// line before it, and (with --dry-run) no empty plan on stdout.
func TestRefusedBeforeStartPrintsOnlyTheError(t *testing.T) {
	dir := t.TempDir()
	if code, _, errs := run(t, dir, "init", dir); code != 0 {
		t.Fatalf("init: %s", errs)
	}
	cases := [][]string{
		{"run", "example", "nope"},
		{"run", "example", "--dry-run", "nope"},
		{"run", "all", "nope"},
		{"run", "all", "--dry-run", "nope"},
		{"run", "example", "--until", "0.1", "nope"},
		{"simulate", "example", "nope"},
		{"evaluate", "example", "nope"},
		{"simulate", "example"},
		{"evaluate", "example"},
		{"merge", "example"},
	}
	for _, args := range cases {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			code, out, errs := run(t, dir, args...)
			if code != ExitUsage {
				t.Fatalf("exit %d, want %d\n%s", code, ExitUsage, errs)
			}
			if !strings.HasPrefix(errs, "impactbench: ") || strings.Contains(errs, "spent now") {
				t.Errorf("stderr is more than the error:\n%s", errs)
			}
			if out != "" {
				t.Errorf("stdout not empty:\n%s", out)
			}
		})
	}
}
