package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"syscall"
	"testing"

	"github.com/spf13/cobra"

	"github.com/impactbench/impactbench/internal/config"
)

// TestInterruptedForcedRunSaysItStartsOver: the same command again
// continues an interrupted run, but not a forced one (--force, or
// run.force in config.yaml), which resets every unit once more and pays
// again for what was done: its message says so instead of "run the same
// command again to continue" (docs/reruns.md, Interrupts), and its SIGTERM
// notice does not promise a resume either.
func TestInterruptedForcedRunSaysItStartsOver(t *testing.T) {
	for _, tc := range []struct {
		name     string
		args     []string
		cfgForce bool
		want     string
	}{
		{"plain", nil, false, interruptedMsg},
		{"--force", []string{"--force"}, false, interruptedForcedMsg},
		{"run.force", nil, true, interruptedForcedMsg},
		{"--force=false over run.force", []string{"--force=false"}, true, interruptedMsg},
		{"--force --dry-run", []string{"--force", "--dry-run"}, false, interruptedMsg},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := &config.Config{}
			cfg.Run.Force = tc.cfgForce
			pf := &phaseFlags{}
			cmd := &cobra.Command{Use: "run"}
			pf.add(cmd, withForce|withDryRun)
			if err := cmd.ParseFlags(tc.args); err != nil {
				t.Fatal(err)
			}
			var stderr bytes.Buffer
			g := &globals{stderr: &stderr}
			if _, err := g.runnerOptions(cfg, pf); err != nil {
				t.Fatal(err)
			}
			g.printError(fmt.Errorf("simulate t: %w", context.Canceled))
			if got, want := stderr.String(), "impactbench: "+tc.want+"\n"; got != want {
				t.Errorf("interrupted:\n got %q\nwant %q", got, want)
			}
			// --json says it in its error object.
			var js bytes.Buffer
			printErrorJSON(&js, context.Canceled, g.interruptedMessage())
			if b, _ := json.Marshal(tc.want); !strings.Contains(js.String(), `"message":`+string(b)) {
				t.Errorf("--json: %s, want the message %s", js.String(), b)
			}
			// A scheduler's SIGTERM is told the same; Ctrl-C's notice
			// promises nothing either way.
			forced := tc.want == interruptedForcedMsg
			if n := stopNotice(syscall.SIGTERM, g.forced.Load()); strings.Contains(n, "to resume without paying twice") == forced {
				t.Errorf("SIGTERM notice of a run forced=%v: %q", forced, n)
			}
			if n := stopNotice(os.Interrupt, g.forced.Load()); !strings.Contains(n, "press Ctrl-C again") {
				t.Errorf("Ctrl-C notice: %q", n)
			}
		})
	}
}
