package runner

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/impactbench/impactbench/internal/fault"
	"github.com/impactbench/impactbench/internal/layout"
	"github.com/impactbench/impactbench/internal/merge"
)

// TestMergeOfTwoSplitsSaysWhatToMoveAside: a study merged from 2 shards,
// then run again in 3, leaves both splits' shard files beside the merged
// outputs. The merge refuses (exit 2, no file changed) naming, for every
// target's run directory, each split's files and when they were last
// written, and gives the commands that move the older split aside (not
// delete it); run as printed, they let the merge of the 3 shards succeed.
func TestMergeOfTwoSplitsSaysWhatToMoveAside(t *testing.T) {
	if _, err := exec.LookPath("sh"); err != nil {
		t.Skip("no sh to run the printed commands")
	}
	ctx := t.Context()
	cfg, bench := project(t)
	r := newRunner(t, cfg, bench, Options{})
	if err := r.GenScenarios(ctx); err != nil {
		t.Fatal(err)
	}
	targets := r.Targets()
	r.Close()
	split := func(k int) {
		for i := range k {
			r := newRunner(t, cfg, bench, Options{Shard: layout.Shard{Index: i, Count: k}})
			if err := r.Run(ctx, targets); err != nil {
				t.Fatalf("shard %d/%d: %v", i, k, err)
			}
			r.Close()
		}
	}
	mergeAll := func() error {
		m := newRunner(t, cfg, bench, Options{})
		defer m.Close()
		_, err := merge.Run(ctx, m.Work(), targets)
		return err
	}
	split(2)
	if err := mergeAll(); err != nil {
		t.Fatal(err)
	}
	// The 2 workers' processes have ended: their lock files would name
	// this test's process, still alive.
	locks, err := r.Layout().ShardLocks()
	if err != nil {
		t.Fatal(err)
	}
	for p := range locks {
		if err := os.Remove(p); err != nil {
			t.Fatal(err)
		}
	}
	split(3)
	before := snapshot(t, bench)
	err = mergeAll()
	if err == nil || fault.KindOf(err) != fault.Input {
		t.Fatalf("merge of two splits: %v, want an input error", err)
	}
	msg := err.Error()
	for _, tg := range targets {
		dir := filepath.Join(bench, layout.RunsDirName, tg)
		for _, want := range []string{
			dir + ": 6 files *.shard-*-of-2.json (2 shards, last written ",
			", 9 files *.shard-*-of-3.json (3 shards, last written ",
			"mkdir -p '" + filepath.Join(dir, layout.StaleShardsDirName) + "' && mv '" + dir + "'/*.shard-*-of-2.json '" + filepath.Join(dir, layout.StaleShardsDirName) + "'/",
		} {
			if !strings.Contains(msg, want) {
				t.Errorf("the refusal lacks %q:\n%s", want, msg)
			}
		}
	}
	if strings.Contains(msg, "rm ") || strings.Contains(msg, "of-3.json '") {
		t.Errorf("the refusal would delete files, or move the newest split:\n%s", msg)
	}
	if after := snapshot(t, bench); after != before {
		t.Errorf("the refused merge changed files")
	}
	// The commands, as printed.
	var cmds []string
	for _, ln := range strings.Split(msg, "\n") {
		if c, ok := strings.CutPrefix(ln, "  mkdir -p "); ok {
			cmds = append(cmds, "mkdir -p "+c)
		}
	}
	if len(cmds) != len(targets) {
		t.Fatalf("%d commands for %d targets:\n%s", len(cmds), len(targets), msg)
	}
	for _, c := range cmds {
		if out, err := exec.Command("sh", "-c", c).CombinedOutput(); err != nil {
			t.Fatalf("%s: %v\n%s", c, err, out)
		}
	}
	if err := mergeAll(); err != nil {
		t.Fatalf("merge after the printed commands: %v", err)
	}
}

// snapshot is every file under dir with its contents, as one string.
func snapshot(t *testing.T, dir string) string {
	t.Helper()
	var b strings.Builder
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(p)
		b.WriteString(p + "\n" + string(data) + "\n")
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return b.String()
}
