package cli

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"runtime/debug"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/impactbench/impactbench/internal/fault"
)

// TestFlagsPerCommand: each command registers only the flags it acts on,
// and every command is listed here. A flag that does nothing for a command
// must not be listed in its help; a hidden flag (an old spelling kept
// working) is listed apart.
func TestFlagsPerCommand(t *testing.T) {
	want := map[string][]string{
		"run":           {"accept-fewer", "adaptive", "adaptive-max", "adaptive-seed", "adaptive-start", "dry-run", "force", "independent-openings", "max-cost", "no-report", "rounds", "shard", "shards", "until", "workers"},
		"gen-metrics":   {"dry-run", "force", "max-cost"},
		"gen-scenarios": {"accept-fewer", "dry-run", "force", "max-cost", "replace"},
		"simulate":      {"accept-fewer", "dry-run", "force", "independent-openings", "max-cost", "shard", "shards", "workers"},
		"evaluate":      {"accept-fewer", "dry-run", "force", "judge", "max-cost", "repeats", "shard", "shards", "workers"},
		"aggregate":     {"accept-fewer", "dry-run", "upstream-only"},
		"validate":      {"accept-fewer", "dry-run", "force", "max-cost", "swap"},
		"merge":         {"from-store", "no-aggregate"},
		"init":          {"force", "study"},
		"report":        {},
		"compare":       {"allow", "force", "output", "seed", "study"},
		"status":        {"study"},
		"study":         {},
		"publish":       {"addr", "dry-run", "force", "output", "serve", "site"},
		"export":        {"format", "messages", "output", "raw"},
		"calibrate":     {"half-width", "include-after-reveal", "plan"},
		"items":         {"all"},
		"plan":          {"half-width", "icc", "pilot", "rate"},
		"view":          {"addr", "blind", "half-width", "overlap", "reveal", "reviewer"},
		"version":       {},
		"exit-codes":    {},
	}
	// aggregate's --force answers with the flag that does what it did
	// (errAggregateForce).
	hidden := map[string][]string{"publish": {"out"}, "aggregate": {"force"}}
	root := newRootCmd(&globals{})
	for _, cmd := range root.Commands() {
		if _, ok := want[cmd.Name()]; !ok && cmd.Name() != "help" && cmd.Name() != "completion" {
			t.Errorf("command %s: list its flags in this test", cmd.Name())
		}
	}
	for name, flags := range want {
		cmd, _, err := root.Find([]string{name})
		if err != nil || cmd.Name() != name {
			t.Fatalf("command %s: %v", name, err)
		}
		var got, gotHidden []string
		cmd.LocalNonPersistentFlags().VisitAll(func(f *pflag.Flag) {
			if f.Hidden {
				gotHidden = append(gotHidden, f.Name)
			} else {
				got = append(got, f.Name)
			}
		})
		sort.Strings(got)
		if !slices.Equal(got, flags) {
			t.Errorf("%s registers %v, want %v", name, got, flags)
		}
		if !slices.Equal(gotHidden, hidden[name]) {
			t.Errorf("%s hides %v, want %v", name, gotHidden, hidden[name])
		}
	}
}

// TestOutputFlagEverywhere: every command that takes an output path takes
// it as -o/--output, and no command has another -o.
func TestOutputFlagEverywhere(t *testing.T) {
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		c.LocalNonPersistentFlags().VisitAll(func(f *pflag.Flag) {
			if f.Hidden {
				return
			}
			if (f.Shorthand == "o") != (f.Name == "output") {
				t.Errorf("%s: -%s/--%s: -o is --output, the output path, everywhere", c.CommandPath(), f.Shorthand, f.Name)
			}
			if strings.HasPrefix(f.Name, "out") && f.Name != "output" {
				t.Errorf("%s --%s: an output path is --output", c.CommandPath(), f.Name)
			}
		})
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(newRootCmd(&globals{}))
}

// TestUsagePlaceholders: pflag turns the first back-quoted word of a usage
// string into the placeholder after the flag name (`--shard impactbench
// merge` once). Every back-quoted word must be a deliberate placeholder.
func TestUsagePlaceholders(t *testing.T) {
	placeholder := regexp.MustCompile(`^([A-Z][A-Z_]*|i/K|HOST:PORT)$`)
	root := newRootCmd(&globals{})
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		check := func(f *pflag.Flag) {
			name, _ := pflag.UnquoteUsage(f)
			if strings.Contains(f.Usage, "`") && !placeholder.MatchString(name) {
				t.Errorf("%s --%s shows %q as its value placeholder", c.CommandPath(), f.Name, name)
			}
		}
		c.LocalFlags().VisitAll(check)
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)

	// And the help reads as intended.
	var out bytes.Buffer
	Main([]string{"simulate", "--help"}, strings.NewReader(""), &out, &out)
	for _, want := range []string{"--shard i/K ", "--max-cost USD ", "--config FILE "} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("simulate --help lacks %q:\n%s", want, out.String())
		}
	}
}

// TestArgumentAndFlagErrors: argument and flag mistakes say what is
// expected, in text and as JSON on stderr.
func TestArgumentAndFlagErrors(t *testing.T) {
	dir := t.TempDir()
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"run"}, "expected a benchmark name (a directory under benchmarks/), e.g. `impactbench run example`"},
		{[]string{"simulate"}, "e.g. `impactbench simulate example`"},
		{[]string{"gen-metrics", "a", "b"}, "gen-metrics takes one benchmark name, got 2 arguments: a b"},
		{[]string{"report"}, "expected a benchmark name"},
		{[]string{"plan"}, "e.g. `impactbench plan example`"},
		{[]string{"calibrate"}, "e.g. `impactbench calibrate example`"},
		{[]string{"export"}, "e.g. `impactbench export example`"},
		{[]string{"run", "example", "--max-cost", "abc"}, `--max-cost "abc": want a dollar amount ≥ 0, e.g. 25 or 2.50`},
		{[]string{"run", "example", "--max-cost", "-3"}, `--max-cost "-3": want a dollar amount`},
		// 0 is the flags' "not given": typed, it must not pass for that
		// (every shard at once; or, for --shards, an unsharded run).
		{[]string{"run", "all", "--shard", "1/4", "--workers", "0"}, `--workers "0": want a whole number ≥ 1`},
		{[]string{"run", "all", "--shards", "0"}, `--shards "0": want a whole number ≥ 1`},
		{[]string{"simulate", "example", "--shard", "0/2", "--shards", "-2"}, `--shards "-2": want a whole number ≥ 1`},
	}
	for _, c := range cases {
		code, out, errs := run(t, dir, c.args...)
		if code != ExitUsage || !strings.Contains(errs, c.want) || strings.Contains(errs, "strconv") {
			t.Errorf("%v: exit %d, stderr %q, want %q", c.args, code, errs, c.want)
		}
		if out != "" {
			t.Errorf("%v: stdout %q", c.args, out)
		}
		code, _, errs = run(t, dir, append(c.args, "--json")...)
		var e errorJSON
		if err := json.Unmarshal([]byte(errs), &e); err != nil || code != ExitUsage || e.Error.Code != ExitUsage || e.Error.Kind != KindUsage || !strings.Contains(e.Error.Message, c.want) {
			t.Errorf("%v --json: exit %d, stderr %q (%v)", c.args, code, errs, err)
		}
	}
	// --json after a flag that fails to parse still gets a JSON error.
	code, _, errs := run(t, dir, "run", "example", "--nope", "--json")
	if code != ExitUsage || !strings.HasPrefix(errs, `{"error":{"code":2,`) {
		t.Errorf("--nope --json: exit %d, stderr %q", code, errs)
	}
}

func TestMaxCostValue(t *testing.T) {
	for in, want := range map[string]float64{"25": 25, "2.50": 2.5, "$3": 3, "0": 0} {
		var v usdValue
		if err := v.Set(in); err != nil || float64(v) != want {
			t.Errorf("Set(%q) = %v, %v; want %v", in, float64(v), err, want)
		}
	}
	for _, in := range []string{"abc", "-1", "NaN", "Inf", ""} {
		var v usdValue
		if err := v.Set(in); err == nil {
			t.Errorf("Set(%q) accepted %v", in, float64(v))
		}
	}
}

func TestBuildVersion(t *testing.T) {
	vcs := func(rev, modified string) []debug.BuildSetting {
		return []debug.BuildSetting{{Key: "vcs", Value: "git"}, {Key: "vcs.revision", Value: rev},
			{Key: "vcs.time", Value: "2026-01-02T03:04:05Z"}, {Key: "vcs.modified", Value: modified}}
	}
	rev := "0123456789abcdef0123456789abcdef01234567"
	cases := []struct {
		name    string
		ldflags string
		bi      *debug.BuildInfo
		want    string
		info    versionInfo
	}{
		{"ldflags win", "v1.2.3", &debug.BuildInfo{Main: debug.Module{Version: "v0.0.0-x"}, Settings: vcs(rev, "false")}, "v1.2.3",
			versionInfo{Version: "v1.2.3", Revision: rev, Time: "2026-01-02T03:04:05Z"}},
		{"module version", "", &debug.BuildInfo{Main: debug.Module{Version: "v0.4.0"}}, "v0.4.0", versionInfo{Version: "v0.4.0"}},
		{"revision of a modified checkout", "", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: vcs(rev, "true")},
			"devel 0123456789ab (modified)", versionInfo{Revision: rev, Time: "2026-01-02T03:04:05Z", Modified: true}},
		{"clean checkout", "", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: vcs(rev, "false")},
			"devel 0123456789ab", versionInfo{Revision: rev, Time: "2026-01-02T03:04:05Z"}},
		{"go run", "", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}}, "devel", versionInfo{}},
		{"no build info", "", nil, "devel", versionInfo{}},
	}
	for _, c := range cases {
		got := buildVersion(c.ldflags, c.bi)
		if got.String() != c.want {
			t.Errorf("%s: %q, want %q", c.name, got.String(), c.want)
		}
		got.Command, got.Go = "", ""
		if got != c.info {
			t.Errorf("%s: %+v, want %+v", c.name, got, c.info)
		}
	}
}

func TestNextSteps(t *testing.T) {
	onPath := func(string) (string, error) { return "/usr/local/bin/impactbench", nil }
	notOnPath := func(string) (string, error) { return "", errors.New("not found") }
	src := t.TempDir()
	os.WriteFile(filepath.Join(src, "go.mod"), []byte("module "+modulePath+"\n\ngo 1.26\n"), 0o644)
	os.MkdirAll(filepath.Join(src, "internal", "cli"), 0o755)
	other := t.TempDir()
	cases := []struct {
		name string
		env  nextEnv
		want []string
	}{
		{"on PATH", nextEnv{lookPath: onPath, exe: "/x/impactbench"}, []string{"cd /p/demo", "impactbench run example"}},
		{"built binary", nextEnv{lookPath: notOnPath, exe: "/home/me/src/impactbench"},
			[]string{"cd /p/demo", "/home/me/src/impactbench run example", "# impactbench is not on your PATH"}},
		{"go run in the source tree", nextEnv{lookPath: notOnPath, exe: "/tmp/go-build1/b001/exe/impactbench", cwd: src},
			[]string{"go run ./cmd/impactbench --config /p/demo/config.yaml run example", "# or install it once"}},
		{"go run below the source root", nextEnv{lookPath: notOnPath, exe: "/tmp/go-build1/b001/exe/impactbench", cwd: filepath.Join(src, "internal", "cli")},
			[]string{"cd " + src + " && go run ./cmd/impactbench --config /p/demo/config.yaml run example"}},
		{"go run elsewhere", nextEnv{lookPath: notOnPath, exe: "/tmp/go-build1/b001/exe/impactbench", cwd: other},
			[]string{"# build impactbench once, in its source tree: go build -o impactbench ./cmd/impactbench"}},
	}
	for _, c := range cases {
		got := nextSteps("/p/demo", c.env)
		if len(got) < len(c.want) {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
			continue
		}
		for i, w := range c.want {
			if !strings.HasPrefix(got[i], w) {
				t.Errorf("%s: line %d %q, want %q…", c.name, i, got[i], w)
			}
		}
	}
	if got := shellQuote("/a b/it's"); got != `'/a b/it'\''s'` {
		t.Errorf("shellQuote: %s", got)
	}
}

// TestExitCodesJSON: `help exit-codes --json` (and `exit-codes --json`)
// writes the documented array — every exit code once, with the error
// kinds that exit with it — instead of the text, which prints unchanged
// without --json; an argument is refused.
func TestExitCodesJSON(t *testing.T) {
	doc := jsonDoc(t)
	dir := t.TempDir()
	for _, args := range [][]string{{"help", "exit-codes", "--json"}, {"exit-codes", "--json"}, {"--json", "exit-codes", "--help"}} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			code, out, errs := run(t, dir, args...)
			if code != 0 {
				t.Fatalf("exit %d\n%s", code, errs)
			}
			arr, ok := decodeJSON(t, "exit-codes", out).([]any)
			if !ok {
				t.Fatalf("want a JSON array, got:\n%s", out)
			}
			var codes []int
			kinds := map[string]int{}
			for _, v := range arr {
				obj := checkShape(t, "exit-codes[]", doc, "exit-codes[]", v)
				c := int(obj["code"].(float64))
				codes = append(codes, c)
				if m, _ := obj["meaning"].(string); m == "" || strings.Contains(m, "\n") {
					t.Errorf("code %d: meaning %q, want one non-empty line", c, m)
				}
				for _, k := range obj["kinds"].([]any) {
					kinds[k.(string)] = c
				}
			}
			if want := []int{ExitOK, ExitFailure, ExitUsage, ExitInterrupted}; !slices.Equal(codes, want) {
				t.Errorf("codes %v, want %v", codes, want)
			}
			for k := fault.Failure; k <= fault.Interrupted; k++ {
				if got, want := kinds[k.String()], exitCode(&fault.Error{Kind: k}); got != want {
					t.Errorf("kind %s listed under %d, exits %d", k, got, want)
				}
			}
		})
	}
	code, out, _ := run(t, dir, "help", "exit-codes")
	if code != 0 || !strings.HasPrefix(out, "0    success") || !strings.Contains(out, "\n130  interrupted") {
		t.Errorf("text: exit %d\n%s", code, out)
	}
	if code, _, errs := run(t, dir, "exit-codes", "extra"); code != ExitUsage {
		t.Errorf("exit-codes extra: exit %d, want %d\n%s", code, ExitUsage, errs)
	}
}
