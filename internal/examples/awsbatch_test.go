package examples

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/impactbench/impactbench/internal/cluster"
)

// TestAWSBatchArrayRun: an AWS Batch array job of 4 children on one
// shared file system (EFS), 2 running at once (IMPACTBENCH_WORKERS, as
// docs/workers.md says; AWS Batch sets only the index and the array's
// size), merged byte-identical to one unsharded run.
func TestAWSBatchArrayRun(t *testing.T) {
	proj := filepath.Join(t.TempDir(), "proj")
	if err := os.CopyFS(proj, os.DirFS(imageDir)); err != nil {
		t.Fatal(err)
	}
	home := t.TempDir()
	sem := make(chan struct{}, smallParallelism)
	var wg sync.WaitGroup
	outs := make([]string, smallCompletions)
	errs := make([]error, smallCompletions)
	for i := range smallCompletions {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			env := []string{
				cluster.EnvAWSIndex + "=" + strconv.Itoa(i),
				cluster.EnvAWSSize + "=" + strconv.Itoa(smallCompletions),
				cluster.EnvWorkers + "=" + strconv.Itoa(smallParallelism),
			}
			outs[i], errs[i] = runIn(proj, home, env, "impactbench", "run", "all", "--no-report")
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("child %d: %v", i, err)
		}
		if want := "shard " + strconv.Itoa(i) + "/" + strconv.Itoa(smallCompletions) + " done"; !strings.Contains(outs[i], want) {
			t.Errorf("child %d did not run its shard (%q):\n%s", i, want, outs[i])
		}
	}
	if out, err := runIn(proj, home, nil, "impactbench", "merge", "all"); err != nil {
		t.Fatalf("merge: %v\n%s", err, out)
	}
	sameAsReference(t, proj)
}

// TestShardsNeedScenariosFirst: a worker started before the scenarios
// were generated refuses to run (exit 2, saying what to run) and writes
// nothing, not even a lock or presence file in .cache/ (docs/workers.md:
// "writing nothing"): every shard must run one scenario set.
func TestShardsNeedScenariosFirst(t *testing.T) {
	proj := filepath.Join(t.TempDir(), "proj")
	if err := os.CopyFS(proj, os.DirFS(initDir)); err != nil {
		t.Fatal(err)
	}
	env := []string{cluster.EnvAWSIndex + "=0", cluster.EnvAWSSize + "=4", cluster.EnvWorkers + "=2"}
	before := treeDigest(t, proj)
	out, err := runIn(proj, t.TempDir(), env, "impactbench", "run", "all", "--no-report")
	if code := exitCode(err); code != 2 || !strings.Contains(out, "impactbench gen-scenarios example") {
		t.Errorf("a shard without scenarios.json: exit %d, want 2 naming gen-scenarios\n%s", code, out)
	}
	if after := treeDigest(t, proj); after != before {
		t.Errorf("the refused shard wrote in the project:\nbefore:\n%s\nafter:\n%s", before, after)
	}
}
