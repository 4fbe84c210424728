package cli

import (
	"errors"
	"fmt"
	"net"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/impactbench/impactbench/internal/report"
	"github.com/impactbench/impactbench/internal/results"
	"github.com/impactbench/impactbench/internal/runner"
	"github.com/impactbench/impactbench/internal/sanitize"
	"github.com/impactbench/impactbench/internal/viewer"
)

// viewOptions are view's flags.
type viewOptions struct {
	Addr      string
	Blind     bool
	Reveal    string
	Overlap   float64
	HalfWidth float64
	Reviewers []string
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
reviewer's own is saved (--reveal never: not at all; --blind=false shows everything first, so
its labels are marked after_reveal, and is refused with --reveal). A label given after the
verdict on its row was shown to its labeller is marked after_reveal and left out of calibration.
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

The review queue is the whole study's: every benchmark's rows in one list, each item naming its
benchmark, with progress per benchmark and metric (labels so far, labels the plan asks for,
models with a corrected rate). A reviewer's place in it is kept by the server: j always goes to
the next unlabelled item, a new tab continues where they were, and only an open review form
holds an item away from the others.

--reviewer NAME (repeatable) shares the viewer with a team: it prints a link per reviewer and
one for you, and every request then needs one. A reviewer's link reaches only the review
queue, review items, that reviewer's own labels and the Play page — never run pages, verdicts,
other people's labels or target names, whatever --blind says; yours reaches everything. The
links are secrets (256-bit tokens, new at each start): hand each to its reviewer only. Without
--reviewer the viewer is yours alone: no login, loopback only.

It binds only to loopback addresses and accepts writes only from its own page. Reach it from
another machine through an SSH tunnel. A conversations.json or scores.json row whose ids are
not ids, or whose conv_id names another target or scenario than its own, stops it with exit 2
naming the file, row and field.`,
		Example: `  impactbench view
  impactbench view --addr 127.0.0.1:9000 --blind=false
  impactbench view --reveal never --overlap 0.3
  impactbench view --reviewer ana --reviewer bo`,
		GroupID: "results",
		Args:    noArgs("it serves every benchmark of the project at once"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := g.loadConfig()
			if err != nil {
				return err
			}
			if o.Reveal != string(viewer.RevealAfter) && o.Reveal != string(viewer.RevealNever) {
				return usagef("--reveal %q: want after (show the judges' verdict once the reviewer's is saved) or never", o.Reveal)
			}
			// --reveal says when blind review shows the judges' verdict;
			// --blind=false shows it from the start, and a reviewer's link
			// never shows it whatever --reveal says: typed together, one of
			// the two would be ignored.
			if !o.Blind && cmd.Flags().Changed("reveal") {
				return usagef("--reveal %s with --blind=false: --reveal says when blind review shows the judges' verdict, --blind=false shows it from the start; drop one of them", o.Reveal)
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
			for _, r := range o.Reviewers {
				if why := viewer.CheckReviewerName(r); why != "" {
					return usagef("--reviewer %q: %s", r, why)
				}
			}
			// Every id a page, a URL or a label could carry is checked
			// before anything is served.
			if err := viewer.Check(cfg.Dir); err != nil {
				return err
			}
			if dirs, err := runner.ListBenches(cfg); err == nil {
				g.warnBenchmarkIn(dirs...)
			}
			// The Play page's target replies and verdicts go through the
			// run's environment: clients, limits, cost ceiling, call store.
			play, err := runner.NewPlayer(cfg, runner.Options{Logger: g.logger})
			if err != nil {
				return err
			}
			srv, err := viewer.New(viewer.Options{ProjectDir: cfg.Dir, Settings: report.OptionsFor(cfg).Settings,
				Samples: cfg.Generation.NumSamples, Blind: o.Blind, Reveal: viewer.Reveal(o.Reveal), Overlap: o.Overlap, OverlapSet: true,
				PlanHalfWidth: o.HalfWidth, Seed: cfg.Seed, Play: play, Logger: g.logger, Reviewers: o.Reviewers})
			if err != nil {
				return usagef("%v", err)
			}
			ln, err := net.Listen("tcp", o.Addr)
			if err != nil {
				return fmt.Errorf("view: %w%s", err, addrInUseHint(err))
			}
			url := fmt.Sprintf("http://%s/", ln.Addr())
			links := srv.Links(url)
			switch {
			case g.JSON: // one line a script can read the address (and links) from
				if err := writeJSON(g.stdout, viewJSON{Command: "view", URL: links[0].URL, Links: links}); err != nil {
					return err
				}
			case len(links) > 1:
				// The links are printed here once, never logged: each is a
				// person's key to the viewer.
				fmt.Fprintf(g.stderr, "impactbench: viewer at %s (Ctrl-C to stop); hand each link to its person only:\n", url)
				for _, l := range links {
					who := "you (the researcher: everything)"
					if l.Role == viewer.RoleReviewer {
						who = "reviewer " + sanitize.Terminal(l.Name)
					}
					fmt.Fprintf(g.stderr, "  %s: %s\n", who, l.URL)
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
	f.StringArrayVar(&o.Reviewers, "reviewer", nil, "share the viewer with reviewer `NAME` (repeatable): print a link of their own that reaches only the review queue, items, their labels and Play, blind")
	return cmd
}

// viewJSON is `view --json`: printed once the viewer listens.
type viewJSON struct {
	Command string `json:"command"`
	// URL is the researcher's link (the served address without reviewers).
	URL string `json:"url"`
	// Links are every person's link: the researcher's, then each reviewer's.
	Links []viewer.Link `json:"links"`
}

// addrInUseHint says what to do when the address is taken: the bare
// "bind: address already in use" names neither the flag nor the likely
// holder.
func addrInUseHint(err error) string {
	if !errors.Is(err, syscall.EADDRINUSE) {
		return ""
	}
	return " (another process serves there, perhaps an earlier `impactbench view` or `publish --serve`: stop it, or pick a free port with --addr 127.0.0.1:PORT)"
}
