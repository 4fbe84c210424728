package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/impactbench/impactbench/internal/config"
	"github.com/impactbench/impactbench/internal/runner"
)

// TestViewRefusesACraftedConvID (issue 34, item 11): a conv_id holding
// "$(touch x)" in conversations.json stops view before it serves anything,
// exit 2 naming the file, the row and the field; nothing runs.
func TestViewRefusesACraftedConvID(t *testing.T) {
	dir, run := calibrationProject(t)
	path := filepath.Join(dir, "benchmarks", "example", "runs", "offline-careful", "conversations.json")
	b, _ := os.ReadFile(path)
	const good = `"conv_id": "m01_s001_v01__offline-careful__s0"`
	if !bytes.Contains(b, []byte(good)) {
		t.Fatalf("fixture: no %s in %s", good, path)
	}
	if err := os.WriteFile(path, bytes.Replace(b, []byte(good), []byte(`"conv_id": "m01_s001_v01__offline-careful__s0$(touch x)"`), 1), 0o644); err != nil {
		t.Fatal(err)
	}
	_, e, code := run("view", "--addr", "127.0.0.1:0")
	if code != ExitUsage || !strings.Contains(e, path) || !strings.Contains(e, "row 0") || !strings.Contains(e, `field "conv_id"`) {
		t.Errorf("view: exit %d, %q; want 2 naming the file, row 0 and conv_id", code, e)
	}
	if _, err := os.Stat(filepath.Join(dir, "x")); !os.IsNotExist(err) {
		t.Error("the id ran")
	}
	if _, e, code := run("view", "--addr", "127.0.0.1:0", "--reviewer", " "); code != ExitUsage || !strings.Contains(e, "--reviewer") {
		t.Errorf("a blank reviewer name: exit %d, %q", code, e)
	}
}

// TestPlayerSeesTargetsAddedToTheConfig: a target added to config.yaml
// while the viewer runs can be played without a restart.
func TestPlayerSeesTargetsAddedToTheConfig(t *testing.T) {
	dir := t.TempDir()
	var out, errb bytes.Buffer
	if code := Main([]string{"init", dir}, strings.NewReader(""), &out, &errb); code != 0 {
		t.Fatal(errb.String())
	}
	cfgPath := filepath.Join(dir, "config.yaml")
	cfg, err := config.LoadWithOptions(cfgPath, config.LoadOptions{AllowMissingEnv: true})
	if err != nil {
		t.Fatal(err)
	}
	p, err := runner.NewPlayer(cfg, runner.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if got := p.Targets(); !slices.Equal(got, []string{"offline-careful", "offline-careless"}) {
		t.Fatalf("targets %v", got)
	}
	y, _ := os.ReadFile(cfgPath)
	added := bytes.Replace(y, []byte("  - id: offline-careless\n"), []byte("  - id: offline-newcomer\n    model: offline-newcomer\n    source: offline\n    offline: {care: 0.6}\n  - id: offline-careless\n"), 1)
	if bytes.Equal(added, y) {
		t.Fatal("fixture: config.yaml has no offline-careless target to insert before")
	}
	if err := os.WriteFile(cfgPath, added, 0o644); err != nil {
		t.Fatal(err)
	}
	if got := p.Targets(); !slices.Contains(got, "offline-newcomer") {
		t.Errorf("after adding a target: %v", got)
	}
	// A config.yaml that no longer loads keeps the last good one.
	if err := os.WriteFile(cfgPath, []byte("targets: [\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := p.Targets(); !slices.Contains(got, "offline-newcomer") {
		t.Errorf("after breaking config.yaml: %v", got)
	}
}

// TestViewBlindAndRevealContradict: --reveal (when blind review shows the
// judges' verdict) typed with --blind=false (which shows it from the
// start) is refused, exit 2 naming both flags; --reveal with blind review
// and --blind=false alone pass that check (and stop at a bad --overlap
// instead, so that nothing is served).
func TestViewBlindAndRevealContradict(t *testing.T) {
	dir := t.TempDir()
	if code, _, errs := run(t, dir, "init", dir); code != 0 {
		t.Fatalf("init: %s", errs)
	}
	cases := []struct {
		flags   []string
		refused bool
	}{
		{[]string{"--blind=false", "--reveal", "never"}, true},
		{[]string{"--reveal", "never", "--blind=false"}, true},
		{[]string{"--blind=false", "--reveal", "after"}, true},
		{[]string{"--blind=false", "--reveal=after", "--reviewer", "ana"}, true},
		{[]string{"--reveal", "never"}, false},
		{[]string{"--blind", "--reveal", "after"}, false},
		{[]string{"--blind=false"}, false},
	}
	for _, c := range cases {
		t.Run(strings.Join(c.flags, " "), func(t *testing.T) {
			args := append([]string{"view", "--addr", "127.0.0.1:0", "--overlap", "5"}, c.flags...)
			code, _, errs := run(t, dir, args...)
			if code != ExitUsage {
				t.Fatalf("exit %d, want %d\n%s", code, ExitUsage, errs)
			}
			both := strings.Contains(errs, "--blind=false") && strings.Contains(errs, "--reveal")
			if both != c.refused || strings.Contains(errs, "--overlap") == c.refused {
				t.Errorf("refused for --blind with --reveal: %v, want %v:\n%s", both, c.refused, errs)
			}
		})
	}
}
