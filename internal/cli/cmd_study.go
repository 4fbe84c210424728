package cli

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/spf13/cobra"

	"github.com/impactbench/impactbench/internal/artifacts"
	"github.com/impactbench/impactbench/internal/compare"
	"github.com/impactbench/impactbench/internal/fault"
	"github.com/impactbench/impactbench/internal/layout"
	"github.com/impactbench/impactbench/internal/publish"
	"github.com/impactbench/impactbench/internal/sanitize"
	"github.com/impactbench/impactbench/internal/study"
)

// studyJSON is study's and status --study's --json output.
type studyJSON struct {
	Command string `json:"command"`
	study.Summary
}

// publishJSON is publish's --json output.
type publishJSON struct {
	Command string `json:"command"`
	// Study is the study.json publish refreshed (null in a dry run).
	Study *string `json:"study"`
	publish.Report
}

// studyDir is the project's benchmarks directory, where the study's
// inputs and study.json live.
func (g *globals) studyDir() (string, error) {
	cfg, err := g.loadConfig()
	if err != nil {
		return "", err
	}
	return filepath.Join(cfg.Dir, "benchmarks"), nil
}

// loadStudy reads and scores the study, printing its warnings (loading's
// and what impactbench-web would drop) on stderr.
func (g *globals) loadStudy() (*study.Study, *study.Result, string, error) {
	dir, err := g.studyDir()
	if err != nil {
		return nil, nil, "", err
	}
	s, err := study.Load(dir)
	if err != nil {
		return nil, nil, "", err
	}
	for _, b := range s.Benchmarks {
		g.warnBenchmark(b.Config)
	}
	res := s.Compute()
	g.warnStudy(res.Warnings)
	if len(s.Models) == 0 {
		g.warn(fmt.Sprintf("no model of %s has judged rows yet: the study is empty (run the benchmarks first, e.g. `impactbench run all`)", study.ModelsFile))
	}
	return s, res, dir, nil
}

// warnStudy prints a study's warnings on stderr (warn).
func (g *globals) warnStudy(warnings []string) {
	for _, w := range warnings {
		g.warn(w)
	}
}

func newStudyCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "study",
		Short: "Score the study (taxonomy, nutrition label, every model) with intervals; writes benchmarks/study.json",
		Long: `Reads the study's inputs in benchmarks/ (taxonomy.json, nutrition-label.json, models.yaml;
` + "`impactbench init --study`" + ` writes examples) and the score rows of every benchmark they name, and
scores every model per age group (from each scenario's demographic) at every level: overall,
each area, subarea, group, nutrition category, benchmark and metric. Each score is the mean of
its metrics' pass rates, with a 95 % interval over base scenarios, paired model differences,
rank intervals, and how many base scenarios it rests on. Writes benchmarks/study.json
(docs/study.md) and prints the leaderboards.`,
		Example: `  impactbench study
  impactbench study --json | jq '.leaderboard[] | select(.age == "adult")'`,
		GroupID: "results",
		Args:    noArgs("it scores every benchmark the study's files name; for one benchmark's results, use `impactbench report %s`"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			_, res, dir, err := g.loadStudy()
			if err != nil {
				return err
			}
			path := filepath.Join(dir, study.ResultFile)
			if err := res.WriteFile(path); err != nil {
				return err
			}
			sum := study.Summarize(res, path)
			if g.JSON {
				return writeJSON(g.stdout, studyJSON{Command: "study", Summary: sum})
			}
			return sum.WriteText(sanitize.NewTextWriter(g.stdout)) // names come from files
		},
	}
}

func newPublishCmd(g *globals) *cobra.Command {
	var out, oldOut, addr string
	var dry, withSite, serve, force bool
	cmd := &cobra.Command{
		Use:   "publish",
		Short: "Write the study's website data (impactbench-web's data/ and scenarios/ files)",
		Long: `Writes the study's data exactly as the ImpactBench website (impactbench-web) loads it, laid
out as it fetches it: DIR/data/taxonomy.json, models.json, benchmark-data.json,
scenario-index.json, metric-details.json, nutrition.json, and one
DIR/scenarios/<benchmark>/<model>/<scenario>.json per published conversation. Verdicts mean
"behaviour present" (the site derives pass from the metric's type); ages come from each
scenario's demographic. DIR/data/uncertainty.json holds the intervals, base-scenario counts
and rank intervals (study.json; the site does not read it). A file whose bytes would not
change is left alone, so publishing again after one benchmark changed rewrites only its
files and the aggregate ones; files an earlier publish wrote that this one does not are
removed. Also refreshes benchmarks/study.json.

Publish owns only what it wrote, as it wrote it (DIR/.impactbench-publish.json lists each
file with its size and sha256): a file already at a path it writes that no earlier publish
into DIR wrote — a folder it never published into, such as a checkout of impactbench-web with
its own data/models.json — is refused (exit 2, naming the file, nothing changed), and so is a
file publish wrote that was changed since (a hand-edited data/models.json), whether publish
would overwrite it or, no longer writing it, remove it; --dry-run says so too. Publish into an
empty or new folder, or add --force to take those files over (publish then owns them); files
it does not write are never touched.

--site adds the static study site beside the data: DIR/index.html and DIR/site/ (leaderboard
with intervals, rank intervals and tie groups; the taxonomy down to each transcript with the
judge's evidence marked; the nutrition label; model vs model; what is thin and what judge
calibration corrected). It makes no network request and works opened from disk (file://) or
from any static host. Publishing without --site later removes it.

--serve then serves DIR on loopback (--addr, default 127.0.0.1:8080) with the CORS header
impactbench-web needs to load the files from its own origin (a plain static server such as
python3 -m http.server sends none, and the site then loads nothing), until Ctrl-C: run the
site with PUBLIC_DATA_BASE=http://127.0.0.1:8080. The site opens on the model
claude-haiku-4-5 (hard-coded); a study without it shows no scores until a model is picked.`,
		Example: `  impactbench publish -o site-data
  impactbench publish --site -o study-site   # then open study-site/index.html
  impactbench publish --dry-run          # list what would change; write nothing
  impactbench publish -o web-data --force   # web-data holds data/ files no publish wrote: take them over
  impactbench publish -o site-data --serve   # then run impactbench-web with PUBLIC_DATA_BASE=http://127.0.0.1:8080`,
		GroupID: "results",
		Args:    noArgs("to write into %s, use -o %s"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			// Flags that would be ignored are refused, as calibrate's
			// --half-width without --plan is.
			if serve && dry {
				return usagef("--serve serves what publish writes, and --dry-run writes nothing: drop one of them")
			}
			if !serve && cmd.Flags().Changed("addr") {
				return usagef("--addr applies to --serve only: add --serve to preview DIR")
			}
			if serve {
				// Before publishing: a refused flag changes nothing.
				if err := publish.CheckAddr(addr); err != nil {
					return fault.AsInput(err)
				}
			}
			out, err := deprecatedAlias(g, cmd.Flags(), "out", "output", oldOut, out)
			if err != nil {
				return err
			}
			s, res, dir, err := g.loadStudy()
			if err != nil {
				return err
			}
			if out == "" {
				out = filepath.Join(filepath.Dir(dir), "published")
			}
			rep, err := publish.Publish(cmd.Context(), s, res, publish.Options{Out: out, DryRun: dry, Site: withSite, Force: force})
			if err != nil {
				return err
			}
			var written *string
			if !dry {
				path := filepath.Join(dir, study.ResultFile)
				if err := res.WriteFile(path); err != nil {
					return err
				}
				written = &path
			}
			if g.JSON {
				if err := writeJSON(g.stdout, publishJSON{Command: "publish", Study: written, Report: *rep}); err != nil {
					return err
				}
			} else {
				printPublish(g, rep)
			}
			if !serve || dry {
				return nil
			}
			return publish.Serve(cmd.Context(), out, addr, func(base string) {
				fmt.Fprintf(g.stderr, "serving %s at %s (Access-Control-Allow-Origin: *) until Ctrl-C: run impactbench-web with PUBLIC_DATA_BASE=%s\n", out, base, base)
			})
		},
	}
	cmd.Flags().StringVarP(&out, "output", "o", "", "output `DIR` (default: published/ beside config.yaml)")
	cmd.Flags().StringVar(&oldOut, "out", "", "the old spelling of --output")
	_ = cmd.Flags().MarkHidden("out") // still works, with a note (deprecatedAlias)
	cmd.Flags().BoolVarP(&dry, "dry-run", "n", false, "list the files that would be written or removed; write nothing")
	cmd.Flags().BoolVar(&withSite, "site", false, "also write the static study site (DIR/index.html, DIR/site/): works from file:// and any static host")
	cmd.Flags().BoolVar(&force, "force", false, forceHelp["publish"])
	cmd.Flags().BoolVar(&serve, "serve", false, "then serve DIR on loopback with the CORS header impactbench-web needs, until Ctrl-C")
	cmd.Flags().StringVar(&addr, "addr", "127.0.0.1:8080", "the loopback `HOST:PORT` --serve listens on")
	return cmd
}

// printPublish prints what publish did, as a note on stderr (not with
// -q): the files are its result. A dry run's list of every change (up to
// maxListed, then per directory) is its result, on stdout.
func printPublish(g *globals, rep *publish.Report) {
	w := g.stderr
	verb, rm := "wrote", "removed"
	if rep.DryRun {
		w, verb, rm = g.stdout, "would write", "would remove"
	}
	if !rep.DryRun && g.Quiet {
		w = io.Discard
	}
	// Paths and warnings carry names from files and folders.
	out := sanitize.NewTextWriter(w)
	fmt.Fprintf(out, "%s: %d models, %d metrics, %d scenarios, %d conversations; %d files: %s %d, %d unchanged, %s %d\n",
		rep.Out, rep.Models, rep.Metrics, rep.Scenarios, rep.Conversations, rep.Files, verb, len(rep.Written), rep.Unchanged, rm, len(rep.Removed))
	if rep.DryRun {
		listFiles(out, verb, rep.Written)
		listFiles(out, rm, rep.Removed)
	}
	if rep.Site != "" && !rep.DryRun {
		fmt.Fprintf(out, "site: open %s (from disk or any static host)\n", rep.Site)
	}
	g.warnStudy(rep.Warnings)
}

const maxListed = 40

func listFiles(out io.Writer, verb string, files []string) {
	if len(files) <= maxListed {
		for _, f := range files {
			fmt.Fprintf(out, "  %s %s\n", verb, f)
		}
		return
	}
	dirs := map[string][]string{}
	for _, f := range files {
		d := f
		if parts := strings.SplitN(f, "/", 4); len(parts) == 4 {
			d = strings.Join(parts[:3], "/") + "/"
		}
		dirs[d] = append(dirs[d], f)
	}
	keys := make([]string, 0, len(dirs))
	for d := range dirs {
		keys = append(keys, d)
	}
	sort.Strings(keys)
	for _, d := range keys {
		if fs := dirs[d]; len(fs) > 1 {
			fmt.Fprintf(out, "  %s %s (%d files)\n", verb, d, len(fs))
		} else {
			fmt.Fprintf(out, "  %s %s\n", verb, fs[0]) // a folder of one file: the file
		}
	}
}

// statusStudy is `status --study`: the summary of benchmarks/study.json.
func statusStudy(g *globals) error {
	dir, err := g.studyDir()
	if err != nil {
		return err
	}
	path := filepath.Join(dir, study.ResultFile)
	res, err := study.ReadResult(path)
	if errors.Is(err, fs.ErrNotExist) {
		return fault.Inputf("%s not found: run `impactbench study` (or publish) first", path)
	}
	if err != nil {
		return err
	}
	sum := study.Summarize(res, path)
	stale, err := study.Stale(dir, path)
	if err != nil {
		return err
	}
	sum.Stale = stale
	g.warnStudy(sum.Warnings)
	if len(stale) > 0 {
		g.warn(fmt.Sprintf("%s is stale: %s changed since it was written; run `impactbench study` to refresh it", path, study.DescribeStale(stale)))
	}
	if g.JSON {
		return writeJSON(g.stdout, studyJSON{Command: "status", Summary: sum})
	}
	return sum.WriteText(sanitize.NewTextWriter(g.stdout)) // names come from files
}

// studyFile finds a study.json from a compare argument: the file, a
// directory holding it, a project whose benchmarks/ holds it, or a folder
// publish wrote (its data/uncertainty.json is study.json's copy), so two
// publishes compare as they are.
func studyFile(arg string) (string, error) {
	for _, p := range []string{arg, filepath.Join(arg, study.ResultFile), filepath.Join(arg, "benchmarks", study.ResultFile),
		filepath.Join(arg, filepath.FromSlash(layout.PublishedData(layout.PublishedUncertaintyFile)))} {
		if st, err := os.Stat(p); err == nil && !st.IsDir() {
			return p, nil
		}
	}
	return "", fault.Inputf("no study.json at %s (nor in it, nor in its benchmarks/, nor a published data/%s): run `impactbench study` there first", arg, layout.PublishedUncertaintyFile)
}

// studyHint is what compare without --study adds when arg is (or holds)
// a study.json rather than a run: "" otherwise.
func studyHint(arg string) string {
	if st, err := os.Stat(arg); err == nil && st.IsDir() && fileExists(filepath.Join(arg, "results.json")) {
		return ""
	}
	if p, err := studyFile(arg); err == nil {
		return fmt.Sprintf(" (%s is a study: compare two studies with `impactbench compare --study A B`)", p)
	}
	return ""
}

// compareStudies is `compare --study A B`.
func compareStudies(g *globals, argA, argB, out string) error {
	var res [2]*study.Result
	var paths [2]string
	for i, arg := range []string{argA, argB} {
		p, err := studyFile(arg)
		if err != nil {
			return err
		}
		if res[i], err = study.ReadResult(p); err != nil {
			return err
		}
		paths[i] = p
	}
	rep, err := compare.CompareStudies(res[0], res[1], paths[0], paths[1])
	var nc *compare.NoCommonModelsError
	if errors.As(err, &nc) {
		return fault.AsInput(err)
	}
	if err != nil {
		return err
	}
	if out != "" {
		if err := artifacts.WriteJSON(out, rep); err != nil {
			return err
		}
	}
	if g.JSON {
		return writeJSON(g.stdout, rep)
	}
	if err := rep.WriteTable(sanitize.NewTextWriter(g.stdout)); err != nil { // names come from both files
		return err
	}
	g.wrote(out)
	return nil
}
