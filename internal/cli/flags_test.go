package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/impactbench/impactbench/internal/config"
	"github.com/impactbench/impactbench/internal/runner"
)

// noFlag lists the config keys beside run.* and max_cost that a flag of
// the same name might be mistaken for, and why none overrides them.
var noFlag = map[string]string{
	"run.verbose":     "the global --verbose logs model calls; run.verbose prints simulated turns (config only)",
	"run.concurrency": "config only",
	"seed":            "compare --seed seeds compare's own bootstrap; compare reads no config",
	"judge":           "evaluate --judge names other judge models (written under runs/<target>/judges/); config's judge: block holds the judge prompt's options",
}

// TestFlagsOverrideConfig: for every setting both config.yaml and a flag
// give, a flag typed on the command line wins in both directions and an
// untyped one takes config's value — the runner's options and the config
// the runner reads agree. It fails if any one of them ORs (or ANDs).
func TestFlagsOverrideConfig(t *testing.T) {
	values := map[string][2]string{"force": {"false", "true"}, "dry-run": {"false", "true"}, "max-cost": {"0", "25"}, "independent-openings": {"false", "true"}}
	for _, s := range (&phaseFlags{}).configured(&config.Config{}) {
		vs, ok := values[s.flag]
		if !ok {
			t.Fatalf("--%s (%s): add its two values to this test", s.flag, s.key)
		}
		for _, cfgV := range vs {
			for _, flagV := range []string{"", vs[0], vs[1]} {
				want := cfgV
				if flagV != "" {
					want = flagV
				}
				name := fmt.Sprintf("%s=%s/--%s=%s", s.key, cfgV, s.flag, flagV)
				t.Run(name, func(t *testing.T) {
					cfg := &config.Config{}
					pf := &phaseFlags{}
					setConfig(t, pf.configured(cfg), s.key, cfgV)
					cmd := &cobra.Command{Use: "x"}
					pf.add(cmd, withForce|withDryRun|withMaxCost|withOpenings)
					var args []string
					if flagV != "" {
						args = []string{"--" + s.flag + "=" + flagV}
					}
					if err := cmd.ParseFlags(args); err != nil {
						t.Fatal(err)
					}
					g := &globals{stderr: io.Discard}
					opts, err := g.runnerOptions(cfg, pf)
					if err != nil {
						t.Fatal(err)
					}
					if got := optionValue(opts, cfg, s.flag); got != want {
						t.Errorf("runner option %s = %s, want %s", s.flag, got, want)
					}
					for _, c := range pf.configured(cfg) {
						if c.key == s.key && (valueString(c.cfgVal) != want || valueString(c.flagVal) != want) {
							t.Errorf("after resolve: config %s = %s, flag = %s, want %s", s.key, valueString(c.cfgVal), valueString(c.flagVal), want)
						}
					}
				})
			}
		}
	}
}

func setConfig(t *testing.T, settings []flagSetting, key, v string) {
	t.Helper()
	for _, s := range settings {
		if s.key != key {
			continue
		}
		switch p := s.cfgVal.(type) {
		case *bool:
			*p = v == "true"
		case *float64:
			_, _ = fmt.Sscan(v, p)
		}
		return
	}
	t.Fatalf("no setting %s", key)
}

func valueString(p any) string {
	switch p := p.(type) {
	case *bool:
		return fmt.Sprint(*p)
	case *float64:
		return fmt.Sprint(*p)
	}
	return fmt.Sprintf("%T", p)
}

// optionValue is what the runner sees of a flag: its option, or the
// config key it reads (the shared opening is the config's).
func optionValue(o runner.Options, cfg *config.Config, flag string) string {
	switch flag {
	case "independent-openings":
		return fmt.Sprint(cfg.Generation.IndependentOpenings)
	case "force":
		return fmt.Sprint(o.Force)
	case "dry-run":
		return fmt.Sprint(o.DryRun)
	case "max-cost":
		return fmt.Sprint(o.MaxCost)
	}
	return "?"
}

// TestEveryConfigFlagResolved: every config key a flag of some command
// also names (run.force ↔ --force, max_cost ↔ --max-cost) is one of
// phaseFlags.configured's (or adaptiveFlags.configured's) settings, or in noFlag with the reason; and
// every key of config's run: block is one or the other. A new pair that
// nobody resolves fails here.
func TestEveryConfigFlagResolved(t *testing.T) {
	resolved := map[string]bool{}
	for _, s := range append((&phaseFlags{}).configured(&config.Config{}), (&adaptiveFlags{}).configured(&config.Config{})...) {
		resolved[s.key] = true
	}
	keys := map[string]bool{}
	yamlKeys(reflect.TypeFor[config.Config](), "", keys)
	for k := range keys {
		if strings.HasPrefix(k, "run.") && strings.Count(k, ".") == 1 && !resolved[k] && noFlag[k] == "" {
			t.Errorf("config key %s: resolve it against its flag (phaseFlags.configured) or say in noFlag why it has none", k)
		}
	}
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		c.LocalFlags().VisitAll(func(f *pflag.Flag) {
			name := strings.ReplaceAll(f.Name, "-", "_")
			for _, k := range []string{name, "run." + name} {
				if keys[k] && !resolved[k] && noFlag[k] == "" {
					t.Errorf("%s --%s names config key %s but does not resolve against it", c.CommandPath(), f.Name, k)
				}
			}
		})
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(newRootCmd(&globals{}))
	for k := range resolved {
		if !keys[k] {
			t.Errorf("resolved setting %s is not a config key", k)
		}
	}
}

// yamlKeys collects the dotted yaml keys of a config type.
func yamlKeys(typ reflect.Type, prefix string, into map[string]bool) {
	for i := range typ.NumField() {
		f := typ.Field(i)
		tag, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if tag == "" || tag == "-" {
			continue
		}
		into[prefix+tag] = true
		if f.Type.Kind() == reflect.Struct && strings.Count(prefix, ".") < 2 { // run.adaptive.start
			yamlKeys(f.Type, prefix+tag+".", into)
		}
	}
}

// TestStageCommandsResolveFlags: every command that takes --dry-run or
// --force goes through resolve, on a real project: run.dry_run: true
// makes it a dry run, --dry-run=false undoes that; run.force: true makes a
// finished run redo (and pay for) its phases, --force=false skips them.
func TestStageCommandsResolveFlags(t *testing.T) {
	dir := copyProject(t)
	editConfig(t, dir, func(s string) string { return strings.Replace(s, "dry_run: false", "dry_run: true", 1) })
	for _, c := range [][]string{
		{"run", "example"}, {"gen-metrics", "example"}, {"gen-scenarios", "example"},
		{"simulate", "example"}, {"evaluate", "example"}, {"aggregate", "example"},
		{"validate", "example", "--swap", "judge=offline-careful"},
	} {
		for _, flag := range []string{"", "--dry-run=false", "--dry-run"} {
			args := append(append([]string{}, c...), "--json")
			if flag != "" {
				args = append(args, flag)
			}
			code, out, errs := run(t, dir, args...)
			var obj struct {
				DryRun bool `json:"dry_run"`
				Run    struct {
					DryRun bool `json:"dry_run"`
				} `json:"run"` // validate's
			}
			if err := json.Unmarshal([]byte(out), &obj); err != nil || code != 0 {
				t.Fatalf("%v: exit %d, %v\n%s%s", args, code, err, out, errs)
			}
			if c[0] == "validate" {
				obj.DryRun = obj.Run.DryRun
			}
			if want := flag != "--dry-run=false"; obj.DryRun != want {
				t.Errorf("%v with run.dry_run: true: dry_run %v, want %v", args, obj.DryRun, want)
			}
		}
	}

	editConfig(t, dir, func(s string) string {
		s = strings.Replace(s, "dry_run: true", "dry_run: false", 1)
		return strings.Replace(s, "force: false", "force: true", 1)
	})
	if r := runAsJSON(t, dir, "run", "example", "--force=false"); r.Spent.Requests != 0 || ranPhase(r, "simulate") {
		t.Errorf("run --force=false over run.force: true: %d requests, simulate ran: %v; want every phase skipped", r.Spent.Requests, ranPhase(r, "simulate"))
	}
	if r := runAsJSON(t, dir, "run", "example"); r.Spent.Requests == 0 || !ranPhase(r, "simulate") {
		t.Errorf("run with run.force: true: %d requests, simulate ran: %v; want the phases redone", r.Spent.Requests, ranPhase(r, "simulate"))
	}
}

// TestFlagOverrideDocumented: docs/config.md says, on each resolved key's
// row, that its flag overrides it either way, and docs/commands.md names
// every pair under "both directions" — the promise the tests above keep.
func TestFlagOverrideDocumented(t *testing.T) {
	cfgDoc := readDoc(t, "config.md")
	cmdDoc := readDoc(t, "commands.md")
	_, both, ok := strings.Cut(cmdDoc, "in both directions")
	if !ok {
		t.Fatal("docs/commands.md no longer says flags override config in both directions")
	}
	before, _, _ := strings.Cut(cmdDoc, "in both directions")
	promise := before[max(0, len(before)-300):] + both[:min(len(both), 300)]
	for _, s := range (&phaseFlags{}).configured(&config.Config{}) {
		row := ""
		for line := range strings.Lines(cfgDoc) {
			if strings.HasPrefix(line, "| `"+s.key+"` |") {
				row = line
			}
		}
		if !strings.Contains(row, "`--"+s.flag) || !strings.Contains(row, "overrides it either way") {
			t.Errorf("docs/config.md's row for %s does not say --%s overrides it either way: %q", s.key, s.flag, row)
		}
		if !strings.Contains(promise, "`--"+s.flag) || !strings.Contains(promise, "`"+s.key+"`") {
			t.Errorf("docs/commands.md's override sentence does not name --%s and %s", s.flag, s.key)
		}
	}
}

func readDoc(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "docs", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
