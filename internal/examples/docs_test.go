package examples

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/impactbench/impactbench/internal/cluster"
	"github.com/impactbench/impactbench/internal/config"
)

// TestWorkersDocNamesRealTests: every test docs/workers.md cites for a
// promise exists, so a promise cannot outlive the test that keeps it.
func TestWorkersDocNamesRealTests(t *testing.T) {
	doc := string(repoFile(t, "docs/workers.md"))
	cited := regexp.MustCompile("`(Test[A-Za-z0-9_]+)`").FindAllStringSubmatch(doc, -1)
	if len(cited) < 10 {
		t.Fatalf("docs/workers.md cites %d tests", len(cited))
	}
	defined := map[string]bool{}
	decl := regexp.MustCompile(`(?m)^func (Test[A-Za-z0-9_]+)\(`)
	err := filepath.WalkDir(filepath.Join("..", ".."), func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == ".git" || d.Name() == "node_modules") {
			return filepath.SkipDir
		}
		if !strings.HasSuffix(p, "_test.go") {
			return nil
		}
		b, err := os.ReadFile(p)
		for _, m := range decl.FindAllStringSubmatch(string(b), -1) {
			defined[m[1]] = true
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cited {
		if !defined[c[1]] {
			t.Errorf("docs/workers.md cites %s, which no test defines", c[1])
		}
	}
}

// TestWorkersDocVariables: the Variables table lists exactly the
// variables impactbench reads to place a worker and find its store and
// rate backend.
func TestWorkersDocVariables(t *testing.T) {
	doc := string(repoFile(t, "docs/workers.md"))
	_, table, ok := strings.Cut(doc, "\n## Variables\n")
	table, _, _ = strings.Cut(table, "\n## ")
	if !ok {
		t.Fatal("docs/workers.md has no Variables section")
	}
	listed := map[string]bool{}
	for _, m := range regexp.MustCompile("(?m)^\\| `([A-Z_]+)`(?:, `([A-Z_]+)`)? \\|").FindAllStringSubmatch(table, -1) {
		for _, v := range m[1:] {
			if v != "" {
				listed[v] = true
			}
		}
	}
	want := []string{
		cluster.EnvK8sIndex, cluster.EnvSlurmID, cluster.EnvSlurmCount, cluster.EnvSlurmMin, cluster.EnvSlurmStep, cluster.EnvSlurmMax,
		cluster.EnvAWSIndex, cluster.EnvAWSSize, cluster.EnvShards, cluster.EnvWorkers, config.EnvStore, config.EnvRateBackend,
	}
	for _, v := range want {
		if !listed[v] {
			t.Errorf("docs/workers.md's Variables table lacks %s", v)
		}
		delete(listed, v)
	}
	for v := range listed {
		t.Errorf("docs/workers.md's Variables table lists %s, which impactbench does not read for workers", v)
	}
}

// TestWorkersDocKubectlSteps: the steps docs/workers.md applies for the
// shared-volume example are the manifest's own, in its order (the order
// TestKubernetesExamplesRun runs them in).
func TestWorkersDocKubectlSteps(t *testing.T) {
	const file = "docs/examples/kubernetes/indexed-job.yaml"
	want := steps(t, file, repoFile(t, file))
	re := regexp.MustCompile(`(?m)^kubectl apply -f indexed-job\.yaml -l ` + regexp.QuoteMeta(componentLabel) + `=(\S+)$`)
	var got []string
	for _, m := range re.FindAllStringSubmatch(string(repoFile(t, "docs/workers.md")), -1) {
		got = append(got, m[1])
	}
	if !slices.Equal(got, want) {
		t.Errorf("docs/workers.md applies %v, the manifest %v", got, want)
	}
}
