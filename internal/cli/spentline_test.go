package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/impactbench/impactbench/internal/llm"
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
			if !strings.Contains(errs, "spent now: ") {
				t.Fatalf("no line of what the run spent:\n%s", errs)
			}
			// Nothing replayed: the part is left out, not "0 calls".
			m := notPaid.FindStringSubmatch(errs)
			if n := 0; m != nil {
				n, _ = strconv.Atoi(m[1])
				if n == 0 || !c.replayed {
					t.Errorf("%d calls replayed on a fresh run, want replays: %v", n, c.replayed)
				}
			} else if c.replayed {
				t.Errorf("no calls replayed on a fresh run, want replays:\n%s", errs)
			}
		})
	}
}

// TestPrintSpent: the line says what was paid, and what was replayed
// only when something was: never "not paid: 0 calls".
func TestPrintSpent(t *testing.T) {
	for _, tc := range []struct {
		name            string
		spent, replayed llm.Usage
		want            string
	}{
		{"nothing at all", llm.Usage{}, llm.Usage{}, "spent now: $0.0000 (0 calls, 0 in / 0 out tokens)\n"},
		{"paid only", llm.Usage{Requests: 3, InputTokens: 30, OutputTokens: 9, Cost: 0.5, CostKnown: true}, llm.Usage{},
			"spent now: $0.5000 (3 calls, 30 in / 9 out tokens)\n"},
		{"replayed only", llm.Usage{}, llm.Usage{Requests: 8, Cost: 0.25, CostKnown: true},
			"spent now: $0.0000 (0 calls, 0 in / 0 out tokens); stored answers replayed, not paid: 8 calls worth $0.2500 (from earlier runs, or an opening already paid for another target)\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b bytes.Buffer
			printSpent(&b, "", tc.spent, tc.replayed)
			if b.String() != tc.want {
				t.Errorf("got  %q\nwant %q", b.String(), tc.want)
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

// A rerun after a target's outputs were lost (a killed worker, a deleted
// file) takes its finished rows from the call store, and each phase's line
// says how many, beside a spent line of nothing: the output alone shows
// nothing was paid twice (docs/workers.md).
func TestRerunSaysRowsCameFromTheStore(t *testing.T) {
	dir, _, _ := initDemo(t)
	if code, _, errs := run(t, dir, "run", "example", "--no-report"); code != 0 {
		t.Fatalf("run: exit %d: %s", code, errs)
	}
	if code, _, errs := run(t, dir, "run", "example", "--no-report"); code != 0 || strings.Contains(errs, "from the store") {
		t.Fatalf("a rerun with nothing to do: exit %d, or it claims rows from the store: %s", code, errs)
	}
	runDir := filepath.Join(dir, "benchmarks", "example", "runs", "offline-careful")
	for _, f := range []string{"conversations.json", "scores.json"} {
		if err := os.Remove(filepath.Join(runDir, f)); err != nil {
			t.Fatal(err)
		}
	}
	code, _, errs := run(t, dir, "run", "example", "--no-report")
	for _, want := range []string{
		"simulated 16 conversations (2 sample(s) × 8 scenarios) for offline-careful; 0 failed; 16 of them from the store, not paid again\n",
		"evaluated 16 conversations → 16 scores (15/16 passed) for offline-careful; 16 of them from the store, not paid again\n",
		"spent now: $0.0000 (0 calls,",
	} {
		if code != 0 || !strings.Contains(errs, want) {
			t.Errorf("rerun: exit %d, want %q in:\n%s", code, want, errs)
		}
	}
}
