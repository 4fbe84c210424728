package cli

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/impactbench/impactbench/internal/config"
	"github.com/impactbench/impactbench/internal/fsx"
	"github.com/impactbench/impactbench/internal/runner"
	"github.com/impactbench/impactbench/internal/study"
)

func newInitCmd(g *globals) *cobra.Command {
	var force, forStudy bool
	cmd := &cobra.Command{
		Use:   "init [dir]",
		Short: "Create a project: config.yaml, .env.example and an example benchmark",
		Long: `Creates config.yaml (every key documented), .env.example and benchmarks/example/benchmark.yaml
in dir (default: the current directory). The config uses the built-in offline model for every
role, so the example runs without an API key; switch models to real providers when ready.
Existing files are never overwritten unless --force. It ends with the next command to run,
spelled so that it works whether or not impactbench is on your PATH.

With --study it writes only a study's inputs into dir/benchmarks: taxonomy.json (areas →
subareas → groups of metric keys), nutrition-label.json (label categories) and models.yaml
(run directory → published model), drafted from the project's own benchmarks and targets
when it has any, else over the example benchmark with an entry per target of config.yaml
(docs/study.md); dir must hold the project's config.yaml.`,
		Example: `  impactbench init demo && cd demo && impactbench run example
  impactbench init --study && impactbench study && impactbench publish`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			dir := "."
			if len(args) == 1 {
				dir = args[0]
			}
			if st, err := os.Stat(dir); err == nil && !st.IsDir() {
				return usagef("init: %s is a file, not a directory: name the project's directory (it is created if missing)", dir)
			}
			scaffold := config.Scaffold
			ownStudy := false
			if forStudy {
				if err := studyNeedsProject(dir); err != nil {
					return err
				}
				scaffold = config.ScaffoldStudy
				drafted, err := projectStudyScaffold(g, dir)
				if err != nil {
					return err
				}
				if drafted != nil {
					ownStudy = true
					scaffold = func(dir string, force bool) ([]string, error) { return config.WriteScaffold(dir, force, drafted) }
				}
			}
			files, err := scaffold(dir, force)
			if err != nil {
				return err
			}
			abs, _ := filepath.Abs(dir)
			exe, _ := os.Executable()
			cwd, _ := os.Getwd()
			next := nextSteps(abs, nextEnv{lookPath: exec.LookPath, exe: exe, cwd: cwd})
			if forStudy {
				next = studySteps(next, ownStudy)
			}
			if g.JSON {
				return writeJSON(g.stdout, initJSON{Command: "init", Dir: abs, Files: files, Next: next})
			}
			// What was written is a note (stderr, not with -q); what to run
			// next is init's answer (stdout), as in --json.
			if !g.Quiet {
				for _, f := range files {
					fmt.Fprintln(g.stderr, "wrote", f)
				}
				fmt.Fprintln(g.stderr)
			}
			fmt.Fprintf(g.stdout, "Next:\n  %s\n", strings.Join(next, "\n  "))
			return nil
		},
	}
	cmd.Flags().BoolVar(&force, "force", false, forceHelp["init"])
	cmd.Flags().BoolVar(&forStudy, "study", false, "write a study's inputs (benchmarks/taxonomy.json, nutrition-label.json, models.yaml) instead of a project")
	return cmd
}

// studyNeedsProject refuses init --study where dir holds no config.yaml:
// a study's inputs belong in a project's benchmarks/, and the next steps
// (run, study, publish) would all fail for want of a config. It names the
// project above dir when there is one (a user inside benchmarks/<bench>).
func studyNeedsProject(dir string) error {
	if fileExists(filepath.Join(dir, "config.yaml")) {
		return nil
	}
	abs, _ := filepath.Abs(dir)
	if p, ok := findConfig(dir); ok {
		return usagef("init --study: %s has no config.yaml; the project is %s: run `impactbench init --study` there", abs, filepath.Dir(p))
	}
	return usagef("init --study: %s has no config.yaml: a study's inputs go into a project's benchmarks/ (run `impactbench init %s` first)", abs, dir)
}

// studySteps turns the example's next steps into a study's: run the
// benchmark (every benchmark, for a study drafted from the project's
// own), score the study, publish it.
func studySteps(next []string, all bool) []string {
	var out []string
	for _, l := range next {
		cmd, ok := strings.CutSuffix(l, " run example")
		if !ok || strings.HasPrefix(l, "#") {
			out = append(out, l)
			continue
		}
		if all {
			l = cmd + " run all"
		}
		out = append(out, l, cmd+" study", cmd+" publish")
	}
	return out
}

// projectStudyScaffold drafts a study's inputs from the project in dir when
// it has benchmarks of its own (anything but the starter example alone):
// their metrics in the taxonomy and the nutrition label, its targets in
// models.yaml. nil: no such project, so the example's inputs are written.
func projectStudyScaffold(g *globals, dir string) ([]config.ScaffoldFile, error) {
	cfgPath := filepath.Join(dir, "config.yaml")
	if !fileExists(cfgPath) {
		return nil, nil
	}
	// As every command that only reads config.yaml (status, report):
	// drafting the study calls no model, so an unset key is no error.
	cfg, err := config.LoadWithOptions(cfgPath, config.LoadOptions{AllowMissingEnv: true})
	if err != nil {
		return nil, err
	}
	g.warnFile(cfg.Warnings) // as every command that loads config.yaml
	dirs, err := runner.ListBenches(cfg)
	if err != nil || len(dirs) == 0 {
		return nil, nil
	}
	if len(dirs) == 1 && filepath.Base(dirs[0]) == "example" {
		return starterStudyScaffold(cfg, dirs[0])
	}
	benches := make([]*config.Benchmark, 0, len(dirs))
	for _, d := range dirs {
		b, err := config.LoadBenchmark(filepath.Join(d, "benchmark.yaml"))
		if err != nil {
			return nil, err
		}
		g.warnBenchmark(b)
		benches = append(benches, b)
	}
	return study.Scaffold(benches, cfg.Targets, time.Now().Year())
}

// starterStudyScaffold is the study of a project whose only benchmark is
// the starter example: the example's own taxonomy and nutrition label, and
// models.yaml naming config.yaml's targets. Those are the starter's two
// offline ones until the user puts real models in (README: the first real
// benchmark comes before the study); then models.yaml is drafted from the
// targets, as in a project with benchmarks of its own, so that `run all`
// and `study` do not stop at run directories models.yaml does not know.
// nil: the targets are the starter's, whose files are written as they are.
func starterStudyScaffold(cfg *config.Config, exampleDir string) ([]config.ScaffoldFile, error) {
	files, err := config.StarterStudyFiles()
	if err != nil {
		return nil, err
	}
	i := slices.IndexFunc(files, func(f config.ScaffoldFile) bool { return filepath.Base(f.Path) == study.ModelsFile })
	if i < 0 || starterTargets(string(files[i].Data), cfg.Targets) {
		return nil, nil
	}
	b, err := config.LoadBenchmark(filepath.Join(exampleDir, "benchmark.yaml"))
	if err != nil {
		return nil, err
	}
	drafted, err := study.Scaffold([]*config.Benchmark{b}, cfg.Targets, time.Now().Year())
	if err != nil {
		return nil, err
	}
	for _, d := range drafted {
		if filepath.Base(d.Path) == study.ModelsFile {
			files[i] = d
		}
	}
	return files, nil
}

// starterTargets reports whether targets are exactly the run directories
// the starter's models.yaml names.
func starterTargets(models string, targets []config.ModelConfig) bool {
	if strings.Count(models, "run_dir: ") != len(targets) {
		return false
	}
	for _, t := range targets {
		if !strings.Contains(models, "{run_dir: "+t.ID+",") {
			return false
		}
	}
	return true
}

// initJSON is init's --json output.
type initJSON struct {
	Command string   `json:"command"`
	Dir     string   `json:"dir"`
	Files   []string `json:"files"`
	Next    []string `json:"next"`
}

// nextEnv is how this binary can be found again: lookPath searches PATH,
// exe is this executable, cwd the working directory.
type nextEnv struct {
	lookPath func(string) (string, error)
	exe      string
	cwd      string
}

// modulePath is impactbench's module path (not published: `go install
// …@latest` does not work, `go run` and `go install` from the source do).
const modulePath = "github.com/impactbench/impactbench"

// nextSteps are the commands that run the example in dir, spelled for how
// this binary can be found: by name when impactbench is on PATH, by its
// path otherwise, and through `go run` from the source tree when it is a
// `go run` build, whose binary is deleted when it exits. Lines starting
// with # are advice.
func nextSteps(dir string, env nextEnv) []string {
	cd := "cd " + shellQuote(dir)
	if _, err := env.lookPath("impactbench"); err == nil {
		return []string{cd, "impactbench run example"}
	}
	if env.exe != "" && !strings.Contains(filepath.ToSlash(env.exe), "/go-build") {
		return []string{
			cd,
			shellQuote(env.exe) + " run example",
			"# impactbench is not on your PATH; to type just `impactbench`, add " + shellQuote(filepath.Dir(env.exe)) + " to PATH",
		}
	}
	src := sourceRoot(env.cwd)
	if src == "" {
		return []string{
			"# build impactbench once, in its source tree: go build -o impactbench ./cmd/impactbench",
			cd,
			"/path/to/the/source/impactbench run example",
		}
	}
	run := "go run ./cmd/impactbench --config " + shellQuote(filepath.Join(dir, "config.yaml")) + " run example"
	if src != env.cwd {
		run = "cd " + shellQuote(src) + " && " + run
	}
	return []string{
		run,
		"# or install it once (cd " + shellQuote(src) + " && go install ./cmd/impactbench; $(go env GOPATH)/bin must be on PATH), then: " + cd + " && impactbench run example",
	}
}

// sourceRoot is the impactbench source tree holding dir, or "".
func sourceRoot(dir string) string {
	for d := dir; d != ""; {
		// Only a regular file, a small one: the walk goes above the
		// project, where a named pipe called go.mod would block init.
		if b, err := fsx.ReadFile(filepath.Join(d, "go.mod"), 1<<20); err == nil {
			if strings.HasPrefix(string(b), "module "+modulePath+"\n") {
				return d
			}
			return ""
		}
		parent := filepath.Dir(d)
		if parent == d {
			return ""
		}
		d = parent
	}
	return ""
}

// shellQuote quotes s for a POSIX shell when it needs it.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./:@+=,") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
