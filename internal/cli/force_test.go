package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/impactbench/impactbench/internal/phase"
)

// TestForceHelpHasOneMeaning: every command's --force says what it means
// there in one sentence, word for word the same wherever the meaning is
// the same, followed only by where it acts; the commands whose --force is
// a redo — and only those — have --accept-fewer, with one help text.
func TestForceHelpHasOneMeaning(t *testing.T) {
	cases := []struct {
		command, meaning, here string // here: what the help must name after the sentence
	}{
		{"init", "overwrite", "config.yaml"},
		{"gen-metrics", "replace", "benchmark.yaml.bak-<UTC time>"},
		{"run", "redo", "gen-metrics --force"},
		{"gen-scenarios", "redo", "scenarios.json"},
		{"simulate", "redo", "runs/<target>/conversations.json"},
		{"evaluate", "redo", "runs/<target>/scores.json"},
		{"validate", "redo", "validation/<role>-<model>/"},
		{"compare", "compare", ""},
		{"publish", "overwrite", "no earlier publish into DIR wrote"},
	}
	sentences := map[string]string{} // meaning → its sentence
	meaningOf := map[string]string{} // sentence → meaning
	var acceptHelp string
	for _, tc := range cases {
		t.Run(tc.command, func(t *testing.T) {
			force, accept := lookupFlags(t, tc.command)
			sentence, here, _ := strings.Cut(force.Usage, " (here: ")
			if tc.here != "" && !strings.Contains(here, tc.here) {
				t.Errorf("--force help %q does not name %q after its sentence", force.Usage, tc.here)
			}
			if prev, ok := sentences[tc.meaning]; ok && prev != sentence {
				t.Errorf("--force (%s) is worded\n  %q\nwhere another command's is\n  %q", tc.meaning, sentence, prev)
			}
			if m, ok := meaningOf[sentence]; ok && m != tc.meaning {
				t.Errorf("--force means %s here and %s elsewhere with the same words %q", tc.meaning, m, sentence)
			}
			sentences[tc.meaning], meaningOf[sentence] = sentence, tc.meaning
			if (accept != nil) != (tc.meaning == "redo") {
				t.Fatalf("--accept-fewer registered: %v; want it exactly on the commands whose --force is a redo", accept != nil)
			}
			if accept == nil {
				return
			}
			if acceptHelp != "" && accept.Usage != acceptHelp {
				t.Errorf("--accept-fewer help %q differs from another command's %q", accept.Usage, acceptHelp)
			}
			acceptHelp = accept.Usage
		})
	}
	if redo := sentences["redo"]; !strings.Contains(redo, phase.AcceptFewerFlag) || !strings.Contains(redo, "stored answers") {
		t.Errorf("the redo sentence must say it ignores stored answers and still needs %s to shrink an output: %q", phase.AcceptFewerFlag, redo)
	}
	if !strings.Contains(acceptHelp, "--force or not") {
		t.Errorf("--accept-fewer's help must say --force does not do it: %q", acceptHelp)
	}
	assertForceTableComplete(t, cases)
}

// lookupFlags finds command's --force (required) and --accept-fewer.
func lookupFlags(t *testing.T, command string) (force, accept *pflag.Flag) {
	t.Helper()
	c, _, err := newRootCmd(&globals{}).Find([]string{command})
	if err != nil || c.Name() != command {
		t.Fatalf("no command %s (%v)", command, err)
	}
	force = c.LocalNonPersistentFlags().Lookup("force")
	if force == nil || force.Hidden {
		t.Fatalf("%s has no --force", command)
	}
	return force, c.LocalNonPersistentFlags().Lookup(strings.TrimPrefix(phase.AcceptFewerFlag, "--"))
}

// assertForceTableComplete: every command with a visible --force is in
// cases, and forceUses has no entry for a command without one.
func assertForceTableComplete(t *testing.T, cases []struct{ command, meaning, here string }) {
	t.Helper()
	listed := map[string]bool{}
	for _, tc := range cases {
		listed[tc.command] = true
	}
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if f := c.LocalNonPersistentFlags().Lookup("force"); f != nil && !f.Hidden && !listed[c.Name()] {
			t.Errorf("%s --force: add its meaning to this test", c.CommandPath())
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(newRootCmd(&globals{}))
	for name := range forceUses {
		if !listed[name] {
			t.Errorf("forceUses[%q]: no such command with --force in this test", name)
		}
	}
}

// forceRunJSON is what the redo tests read from a command's --json object.
type forceRunJSON struct {
	Spent struct {
		Requests int `json:"requests"`
	} `json:"spent"`
	Phases []struct {
		Phase  string `json:"phase"`
		Target string `json:"target"`
		Status string `json:"status"`
	} `json:"phases"`
	Run *forceRunJSON `json:"run"` // validate's
}

func runAsJSON(t *testing.T, dir string, args ...string) forceRunJSON {
	t.Helper()
	code, out, errs := run(t, dir, append(args, "--json")...)
	var r forceRunJSON
	if err := json.Unmarshal([]byte(out), &r); err != nil || code != 0 {
		t.Fatalf("%v: exit %d, %v\n%s%s", args, code, err, out, errs)
	}
	if r.Run != nil {
		return *r.Run
	}
	return r
}

// TestForceRedoesAndPaysAgain: on a finished project each stage command
// skips its phases and pays nothing; with --force the same command runs
// its phases again and pays for its calls again.
func TestForceRedoesAndPaysAgain(t *testing.T) {
	cases := []struct {
		args  []string
		phase string // the phase --force must have run
	}{
		{[]string{"gen-scenarios", "example"}, "gen_scenarios"},
		{[]string{"simulate", "example", "offline-careful"}, "simulate"},
		{[]string{"evaluate", "example", "offline-careless"}, "evaluate"},
		{[]string{"run", "example"}, "simulate"},
		{[]string{"validate", "example", "--swap", "judge=offline-careful"}, "evaluate"},
	}
	dir := copyProject(t)
	for _, tc := range cases {
		t.Run(tc.args[0], func(t *testing.T) {
			if tc.args[0] == "validate" {
				runAsJSON(t, dir, tc.args...) // the validation run's first pass
			}
			plain := runAsJSON(t, dir, tc.args...)
			if plain.Spent.Requests != 0 || ranPhase(plain, tc.phase) {
				t.Fatalf("%v without --force: %d requests, %s ran; want it skipped, nothing paid", tc.args, plain.Spent.Requests, tc.phase)
			}
			forced := runAsJSON(t, dir, append(tc.args, "--force")...)
			if forced.Spent.Requests == 0 || !ranPhase(forced, tc.phase) {
				t.Errorf("%v --force: %d requests, %s ran: %v; want it redone and paid again", tc.args, forced.Spent.Requests, tc.phase, ranPhase(forced, tc.phase))
			}
		})
	}
}

func ranPhase(r forceRunJSON, name string) bool {
	for _, p := range r.Phases {
		if p.Phase == name && p.Status == "ran" {
			return true
		}
	}
	return false
}

// TestShrinkNeedsAcceptFewer: a command whose output would lose rows,
// models or verdicts is refused — exit 2, naming --accept-fewer, every
// file byte-identical — with --force as without it (a redo is no licence
// to lose results), and goes through with --accept-fewer, which (unlike
// --force) reuses the stored answers: where the rows left were all made
// before, it pays for nothing.
func TestShrinkNeedsAcceptFewer(t *testing.T) {
	fewerSamples := func(t *testing.T, d string) {
		editConfig(t, d, func(s string) string { return strings.Replace(s, "num_samples: 2", "num_samples: 1", 1) })
	}
	cases := []struct {
		name     string
		setup    func(t *testing.T, dir string)
		args     []string
		out      []string // an output the accepted command rewrites, under the benchmark
		wantRows int
		free     bool // every row left is stored: --accept-fewer pays nothing
	}{
		{"run: num_samples lowered", fewerSamples, []string{"run", "example"}, []string{"runs", "offline-careful", "scores.json"}, 8, true},
		{"simulate: num_samples lowered", fewerSamples, []string{"simulate", "example", "offline-careless"}, []string{"runs", "offline-careless", "conversations.json"}, 8, true},
		{"gen-scenarios: scenarios_per_metric lowered", func(t *testing.T, d string) {
			editConfig(t, d, func(s string) string {
				return strings.Replace(s, "scenarios_per_metric: 2", "scenarios_per_metric: 1", 1)
			})
		}, []string{"gen-scenarios", "example"}, []string{"scenarios.json"}, 4, false},
		{"evaluate: conversations.json shrunk", func(t *testing.T, d string) {
			keepFirstRows(t, benchFile(d, "runs", "offline-careful", "conversations.json"), 3)
		}, []string{"evaluate", "example", "offline-careful"}, []string{"runs", "offline-careful", "scores.json"}, 3, true},
		{"aggregate: a target's scores removed", func(t *testing.T, d string) {
			if err := os.Remove(benchFile(d, "runs", "offline-careless", "scores.json")); err != nil {
				t.Fatal(err)
			}
		}, []string{"aggregate", "example"}, []string{"results.json"}, 1, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := copyProject(t)
			tc.setup(t, dir)
			before := snapshot(t, dir)
			for _, flags := range [][]string{nil, {"--force"}} {
				if tc.args[0] == "aggregate" && flags != nil {
					continue // aggregate has no --force (TestAggregateForceNamesAcceptFewer)
				}
				args := append(append([]string{}, tc.args...), flags...)
				code, out, errs := run(t, dir, args...)
				if code != ExitUsage || !strings.Contains(errs, "refusing to replace") || !strings.Contains(errs, "pass "+phase.AcceptFewerFlag) {
					t.Fatalf("%v: exit %d, want %d refusing and naming %s\n%s%s", args, code, ExitUsage, phase.AcceptFewerFlag, out, errs)
				}
				assertSameFiles(t, before, snapshot(t, dir))
			}
			args := append(append([]string{}, tc.args...), phase.AcceptFewerFlag)
			if r := runAsJSON(t, dir, args...); tc.free && r.Spent.Requests != 0 {
				t.Errorf("%v paid %d requests; the rows left were stored", args, r.Spent.Requests)
			}
			var rows []json.RawMessage
			if err := json.Unmarshal(readBytes(t, benchFile(dir, tc.out...)), &rows); err != nil || len(rows) != tc.wantRows {
				t.Errorf("%s after %v: %d rows (%v), want %d", filepath.Join(tc.out...), args, len(rows), err, tc.wantRows)
			}
		})
	}
}

// TestAggregateForceNamesAcceptFewer: aggregate always recomputes, so it
// has no --force; its old one (which accepted fewer models) is a usage
// error naming the flag that does that now, and touches nothing.
func TestAggregateForceNamesAcceptFewer(t *testing.T) {
	dir := copyProject(t)
	before := snapshot(t, dir)
	for _, flag := range []string{"--force", "-f"} {
		code, out, errs := run(t, dir, "aggregate", "example", flag)
		if code != ExitUsage || !strings.Contains(errs, "aggregate has no --force") || !strings.Contains(errs, phase.AcceptFewerFlag) {
			t.Errorf("aggregate %s: exit %d, want %d naming %s\n%s%s", flag, code, ExitUsage, phase.AcceptFewerFlag, out, errs)
		}
	}
	assertSameFiles(t, before, snapshot(t, dir))
}
