package cli

import (
	"fmt"
	"net"

	"github.com/spf13/cobra"

	"github.com/impactbench/impactbench/internal/runner"
	"github.com/impactbench/impactbench/internal/viewer"
)

// viewOptions are view's flags.
type viewOptions struct {
	Addr  string
	Blind bool
}

func newViewCmd(g *globals) *cobra.Command {
	var o viewOptions
	cmd := &cobra.Command{
		Use:   "view",
		Short: "Serve a local web viewer: live progress, transcripts, scenarios side by side, blind human review",
		Long: `Serves a web viewer over the project's benchmarks on a loopback address (default
http://127.0.0.1:8377/). It shows each benchmark's runs while they are going (progress per phase
and target, conversations as they finish, refreshed every second), the leaderboard and
conversations once judged, one scenario across all targets side by side, and the full static
report. In review mode a person records their own verdict on a conversation (behaviour present
or absent, a note, their name) into benchmarks/<bench>/labels.jsonl and only then sees the
judges' verdicts (--blind=false shows them first). A calibration queue serves a seeded random
sample stratified by metric and judge verdict; a triage queue lists conversations where judges
disagree or samples split.

The viewer has no login: it binds only to loopback addresses and accepts writes only from its
own page. Reach it from another machine through an SSH tunnel.`,
		Example: `  impactbench view
  impactbench view --addr 127.0.0.1:9000 --blind=false`,
		GroupID: "results",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := g.loadConfig()
			if err != nil {
				return err
			}
			if !viewer.IsLoopback(o.Addr) {
				return usagef("--addr %s: view has no login, so it binds only to a loopback address (127.0.0.1:PORT, [::1]:PORT, localhost:PORT); use an SSH tunnel to reach it from elsewhere", o.Addr)
			}
			srv, err := viewer.New(viewer.Options{ProjectDir: cfg.Dir, Settings: runner.ReportOptionsFor(cfg).Settings,
				Samples: cfg.Generation.NumSamples, Blind: o.Blind, Seed: cfg.Seed, Logger: g.logger})
			if err != nil {
				return err
			}
			ln, err := net.Listen("tcp", o.Addr)
			if err != nil {
				return fmt.Errorf("view: %w", err)
			}
			url := fmt.Sprintf("http://%s/", ln.Addr())
			switch {
			case g.JSON: // one line a script can read the address from
				if err := writeJSON(g.stdout, viewJSON{Command: "view", URL: url}); err != nil {
					return err
				}
			case !g.Quiet:
				fmt.Fprintf(g.stderr, "impactbench: viewer at %s (Ctrl-C to stop)\n", url)
			}
			go srv.Warm()
			return srv.Serve(cmd.Context(), ln)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.Addr, "addr", "127.0.0.1:8377", "loopback `HOST:PORT` to serve on")
	f.BoolVar(&o.Blind, "blind", true, "in review mode, show the judges' verdicts only after the reviewer has recorded theirs")
	return cmd
}

// viewJSON is `view --json`: printed once the viewer listens.
type viewJSON struct {
	Command string `json:"command"`
	URL     string `json:"url"`
}
