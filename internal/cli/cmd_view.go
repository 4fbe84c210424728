package cli

import (
	"fmt"
	"net"

	"github.com/spf13/cobra"

	"github.com/impactbench/impactbench/internal/report"
	"github.com/impactbench/impactbench/internal/results"
	"github.com/impactbench/impactbench/internal/runner"
	"github.com/impactbench/impactbench/internal/viewer"
)

// viewOptions are view's flags.
type viewOptions struct {
	Addr      string
	Blind     bool
	Reveal    string
	Overlap   float64
	HalfWidth float64
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
or absent, a note, their name) into benchmarks/<bench>/labels.jsonl, from the keyboard (1/0
present/absent, j/k move, s skip, u undo, n note). Blind review (the default) shows nothing that
names the target, the judges' verdicts, the stratum or other people's labels — not on the page,
in its URLs or in the answers it fetches — and reveals the judges' verdict only once the
reviewer's own is saved (--reveal never: not at all; --blind=false shows everything first).
The calibration queue draws, at random within each metric × judge verdict, the labels that
impactbench calibrate --plan says a corrected rate within --half-width needs, in an order of
its own for each reviewer; --overlap of its rows are asked of two people, so agreement between
labellers is measured. A triage queue lists conversations where judges disagree or samples
split. On the Play page a person plays the user of a scenario against a
target (its persona and goals as the brief, its landmarks at their turns,
at most generation.turns turns); the conversation is stored in
runs/<target>/human/, judged like the rest, and compared with the
simulated users' on the same scenarios (results.json's human_comparison
after aggregate).

The viewer has no login: it binds only to loopback addresses and accepts writes only from its
own page. Reach it from another machine through an SSH tunnel.`,
		Example: `  impactbench view
  impactbench view --addr 127.0.0.1:9000 --blind=false
  impactbench view --reveal never --overlap 0.3`,
		GroupID: "results",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := g.loadConfig()
			if err != nil {
				return err
			}
			if o.Reveal != string(viewer.RevealAfter) && o.Reveal != string(viewer.RevealNever) {
				return usagef("--reveal %q: want after (show the judges' verdict once the reviewer's is saved) or never", o.Reveal)
			}
			if o.Overlap < 0 || o.Overlap > 1 {
				return usagef("--overlap %v: want a share between 0 and 1", o.Overlap)
			}
			if !(o.HalfWidth > 0 && o.HalfWidth < 1) {
				return usagef("--half-width %v: want a half-width between 0 and 1 (0.10 = ±10 points)", o.HalfWidth)
			}
			if !viewer.IsLoopback(o.Addr) {
				return usagef("--addr %s: view has no login, so it binds only to a loopback address (127.0.0.1:PORT, [::1]:PORT, localhost:PORT); use an SSH tunnel to reach it from elsewhere", o.Addr)
			}
			// The Play page's target replies and verdicts go through the
			// run's environment: clients, limits, cost ceiling, call store.
			play, err := runner.NewPlayer(cfg, runner.Options{Logger: g.logger})
			if err != nil {
				return err
			}
			srv, err := viewer.New(viewer.Options{ProjectDir: cfg.Dir, Settings: report.OptionsFor(cfg).Settings,
				Samples: cfg.Generation.NumSamples, Blind: o.Blind, Reveal: viewer.Reveal(o.Reveal), Overlap: o.Overlap, OverlapSet: true,
				PlanHalfWidth: o.HalfWidth, Seed: cfg.Seed, Play: play, Logger: g.logger})
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
	f.BoolVar(&o.Blind, "blind", true, "review blind: nothing on the review page, its URLs or its API answers names the target, the judges' verdicts or other reviewers' labels")
	f.StringVar(&o.Reveal, "reveal", string(viewer.RevealAfter), "blind review: show the judges' verdict `WHEN`: after the reviewer's is saved, or never")
	f.Float64Var(&o.Overlap, "overlap", viewer.DefaultOverlap, "share of the calibration queue's rows asked of a second reviewer (labeller agreement)")
	f.Float64Var(&o.HalfWidth, "half-width", results.DefaultPlanHalfWidth, "the calibration queue draws the labels a corrected rate within this 95 % half-width needs")
	return cmd
}

// viewJSON is `view --json`: printed once the viewer listens.
type viewJSON struct {
	Command string `json:"command"`
	URL     string `json:"url"`
}
