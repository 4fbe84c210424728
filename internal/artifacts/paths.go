package artifacts

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// Paths names the files of one benchmark directory (benchmarks/<slug>).
type Paths struct {
	Dir string
}

// BenchPaths returns the file layout of the benchmark in dir.
func BenchPaths(dir string) Paths { return Paths{Dir: dir} }

// Benchmark is benchmark.yaml.
func (p Paths) Benchmark() string { return filepath.Join(p.Dir, "benchmark.yaml") }

// Scenarios is scenarios.json (gen_scenarios output).
func (p Paths) Scenarios() string { return filepath.Join(p.Dir, "scenarios.json") }

// Results is results.json (aggregate output).
func (p Paths) Results() string { return filepath.Join(p.Dir, "results.json") }

// Cost is the benchmark-level cost.json (gen_metrics, gen_scenarios).
func (p Paths) Cost() string { return filepath.Join(p.Dir, "cost.json") }

// RunsDir is runs/.
func (p Paths) RunsDir() string { return filepath.Join(p.Dir, "runs") }

// RunDir is runs/<target>.
func (p Paths) RunDir(target string) string { return filepath.Join(p.Dir, "runs", target) }

// Conversations is runs/<target>/conversations.json.
func (p Paths) Conversations(target string) string {
	return filepath.Join(p.RunDir(target), "conversations.json")
}

// Scores is runs/<target>/scores.json.
func (p Paths) Scores(target string) string { return filepath.Join(p.RunDir(target), "scores.json") }

// RunCost is runs/<target>/cost.json.
func (p Paths) RunCost(target string) string { return filepath.Join(p.RunDir(target), "cost.json") }

// ListRunDirs returns the run directories (runs/<name>) that hold a
// scores.json, in upstream's order: sorted by the scores.json path string
// (so "runs/a-b" sorts before "runs/a", since '-' < '/'), hidden directories
// skipped as Python's glob does. A missing runs/ directory is no runs.
func ListRunDirs(benchDir string) ([]string, error) {
	runs := filepath.Join(benchDir, "runs")
	entries, err := os.ReadDir(runs)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var scores []string
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".") {
			continue
		}
		sp := filepath.Join(runs, e.Name(), "scores.json")
		if st, err := os.Stat(sp); err == nil && !st.IsDir() {
			scores = append(scores, sp)
		}
	}
	sort.Strings(scores)
	dirs := make([]string, len(scores))
	for i, s := range scores {
		dirs[i] = filepath.Dir(s)
	}
	return dirs, nil
}

// SafeName is an id's form as a file name in the call store and run
// directories (ids come from files people edit): path separators, ':' and
// control characters become '_', and "", "." and ".." get a leading '_'.
func SafeName(s string) string {
	b := []byte(s)
	for i, c := range b {
		if c == '/' || c == '\\' || c < 0x20 || c == ':' {
			b[i] = '_'
		}
	}
	if len(b) == 0 || string(b) == "." || string(b) == ".." {
		return "_" + string(b)
	}
	return string(b)
}
