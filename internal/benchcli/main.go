// Package benchcli is impactbench-bench, the benchmark harness's command:
// it measures the impactbench command against a local fake provider (wall
// time against the workload's bound, 429s, CPU, memory, and the cost
// benchmark). It is a binary of its own, so the user's impactbench carries
// no fake provider and no harness.
package benchcli

import (
	"context"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/impactbench/impactbench/internal/cli"
)

// globals are the harness command's output streams and output flags.
type globals struct {
	stdout, stderr io.Writer
	JSON, Quiet    bool
}

// Main runs impactbench-bench and returns the exit code (the same codes
// and --json error objects as impactbench's).
func Main(args []string, stdout, stderr io.Writer) int {
	g := &globals{stdout: stdout, stderr: stderr}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	// The harness's own profiles (the fake provider and its bookkeeping),
	// only when "%p" in the paths tells them from the measured child's: the
	// child inherits the variables, and two processes writing one file
	// would leave neither profile readable.
	if profilesPerProcess() {
		defer cli.StartProfiles(stderr)()
	}
	root := newBenchCmd(g)
	pf := root.PersistentFlags()
	pf.BoolVar(&g.JSON, "json", false, "print a machine-readable result on stdout")
	pf.BoolVarP(&g.Quiet, "quiet", "q", false, "print nothing but errors (and --json output)")
	return cli.Execute(ctx, root, args, stdout, stderr, &g.JSON)
}

// profilesPerProcess reports whether every profile path that is set names
// the process ("%p"), and at least one is set.
func profilesPerProcess() bool {
	set := false
	for _, env := range []string{"IMPACTBENCH_CPUPROFILE", "IMPACTBENCH_MEMPROFILE"} {
		if v := os.Getenv(env); v != "" {
			if !strings.Contains(v, "%p") {
				return false
			}
			set = true
		}
	}
	return set
}
