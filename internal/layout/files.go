package layout

import (
	"fmt"
	"path/filepath"
	"strings"
)

// File names of a benchmark directory and of a run directory. Readers of
// one file name (a cache listing, a glob) take it from here.
const (
	BenchmarkFile     = "benchmark.yaml"
	ScenariosFile     = "scenarios.json"
	ResultsFile       = "results.json"
	RunManifestFile   = "run_manifest.json"
	ReportFile        = "report.html"
	CostFile          = "cost.json"
	LabelsFile        = "labels.jsonl"
	UntilFile         = "until.json"
	ConversationsFile = "conversations.json"
	ScoresFile        = "scores.json"
	RepeatsFile       = "repeats.json"
	// RunsDirName holds one directory per target; JudgesDirName, in a run
	// directory, one per alternative judge panel; HumanDirName the
	// conversations people played.
	RunsDirName = "runs"
	// SetsDirName holds a benchmark's scenario-set lineage (SetsFile) and
	// the files of every earlier set version (v<N>/).
	SetsDirName   = "sets"
	SetsFile      = "sets.json"
	JudgesDirName = "judges"
	HumanDirName  = "human"
	// CacheDirName is the project's cache directory (beside config.yaml):
	// one directory per benchmark, holding CallsDirName (the call store),
	// RecordsFile (the phase records) and LockFile.
	CacheDirName = ".cache"
	CallsDirName = "calls"
	RecordsFile  = "manifest.json"
	LockFile     = ".lock"
)

// Bench is where one benchmark's outputs go (its directory, or a
// validation run's copy) and where its cache is.
type Bench struct {
	Dir   string // outputs: scenarios.json, runs/, results.json, …
	Cache string // .cache/<bench>: calls/, manifest.json, .lock
}

// ForProject is the layout of the benchmark in benchDir in the project
// whose config.yaml is in projectDir: outputs beside benchmark.yaml, the
// cache under <project>/.cache/<benchmark directory name>.
func ForProject(projectDir, benchDir string) Bench {
	return Bench{Dir: benchDir, Cache: CacheDir(projectDir, benchDir)}
}

// InDir is the layout of a run whose every output and cache go under
// dir (a validation run's directory: dir/.cache).
func InDir(dir string) Bench { return Bench{Dir: dir, Cache: filepath.Join(dir, CacheDirName)} }

// CacheDir is where the benchmark in benchDir keeps its call store, phase
// records and lock: <project dir>/.cache/<benchmark directory name>.
func CacheDir(projectDir, benchDir string) string {
	return filepath.Join(projectDir, CacheDirName, filepath.Base(benchDir))
}

// BenchmarkFile is benchmark.yaml of the benchmark in dir.
func BenchmarkPath(dir string) string { return filepath.Join(dir, BenchmarkFile) }

func (b Bench) Scenarios() string   { return filepath.Join(b.Dir, ScenariosFile) }
func (b Bench) Results() string     { return filepath.Join(b.Dir, ResultsFile) }
func (b Bench) RunManifest() string { return filepath.Join(b.Dir, RunManifestFile) }
func (b Bench) Report() string      { return filepath.Join(b.Dir, ReportFile) }
func (b Bench) Cost() string        { return filepath.Join(b.Dir, CostFile) }
func (b Bench) Labels() string      { return filepath.Join(b.Dir, LabelsFile) }
func (b Bench) Until() string       { return filepath.Join(b.Dir, UntilFile) }
func (b Bench) RunsDir() string     { return filepath.Join(b.Dir, RunsDirName) }

// Sets is sets/sets.json, the lineage of the benchmark's scenario sets.
func (b Bench) Sets() string { return filepath.Join(b.Dir, SetsDirName, SetsFile) }

// SetVersionDir is where version v's files are kept once a later version
// replaces it, relative to the benchmark directory: sets/v<v>.
func SetVersionDir(v int) string { return filepath.Join(SetsDirName, fmt.Sprintf("v%d", v)) }

// RunDir is runs/<target>.
func (b Bench) RunDir(target string) string { return filepath.Join(b.Dir, RunsDirName, target) }

// Conversations is runs/<target>/conversations.json, or a shard's file.
func (b Bench) Conversations(target string, s Shard) string {
	return filepath.Join(b.RunDir(target), s.File(ConversationsFile))
}

// Scores is runs/<target>/scores.json, or a shard's file; with judge
// labels (an alternative panel: evaluate --judge) it is
// runs/<target>/judges/<label+label…>/scores.json, so the main scores
// stay intact.
func (b Bench) Scores(target string, panel []string, s Shard) string {
	if len(panel) > 0 {
		return filepath.Join(b.RunDir(target), JudgesDirName, strings.Join(panel, "+"), s.File(ScoresFile))
	}
	return filepath.Join(b.RunDir(target), s.File(ScoresFile))
}

// Repeats is the judge-consistency file beside a scores file.
func Repeats(scoresPath string) string { return filepath.Join(filepath.Dir(scoresPath), RepeatsFile) }

// RunCost is runs/<target>/cost.json.
func (b Bench) RunCost(target string) string { return filepath.Join(b.RunDir(target), CostFile) }

// JudgesDir is runs/<target>/judges (one directory per alternative panel).
func (b Bench) JudgesDir(target string) string {
	return filepath.Join(b.RunDir(target), JudgesDirName)
}

// HumanDir is runs/<target>/human: the conversations people played.
func HumanDir(runDir string) string { return filepath.Join(runDir, HumanDirName) }

// Calls is the call store's directory.
func (b Bench) Calls() string { return filepath.Join(b.Cache, CallsDirName) }

// Records is the phase records' file.
func (b Bench) Records() string { return filepath.Join(b.Cache, RecordsFile) }

// ShardRecords is the file of the phase records a shard's run writes
// (manifest.shard-i-of-K.json; Records for the zero Shard), beside the
// benchmark's, so shards running at once never rewrite one file.
func (b Bench) ShardRecords(s Shard) string { return filepath.Join(b.Cache, s.File(RecordsFile)) }

// Lock is the benchmark's lock file; a shard's run locks its own
// (.lock.shard-i-of-K), so shards of one benchmark run side by side.
func (b Bench) Lock(s Shard) string { return filepath.Join(b.Cache, LockFile+s.Suffix()) }

// Shard selects a deterministic slice of a benchmark's rows and names the
// files that slice writes; the zero Shard is every row.
type Shard struct{ Index, Count int }

// Active reports whether sharding is on.
func (s Shard) Active() bool { return s.Count > 1 }

// Suffix is what a shard's files carry: ".shard-i-of-K" ("" unsharded).
func (s Shard) Suffix() string {
	if !s.Active() {
		return ""
	}
	return fmt.Sprintf(".shard-%d-of-%d", s.Index, s.Count)
}

// File is name with the shard's suffix before its extension
// (conversations.shard-0-of-4.json).
func (s Shard) File(name string) string {
	ext := filepath.Ext(name)
	return strings.TrimSuffix(name, ext) + s.Suffix() + ext
}

// ShardFiles finds the shard files of name in dir (conversations.json →
// conversations.shard-*-of-*.json), with each one's shard.
func ShardFiles(dir, name string) (map[string]Shard, error) {
	ext := filepath.Ext(name)
	stem := strings.TrimSuffix(name, ext)
	paths, err := filepath.Glob(filepath.Join(dir, stem+".shard-*-of-*"+ext))
	if err != nil {
		return nil, err
	}
	out := map[string]Shard{}
	for _, p := range paths {
		var s Shard
		rest := strings.TrimSuffix(strings.TrimPrefix(filepath.Base(p), stem), ext)
		if _, err := fmt.Sscanf(rest, ".shard-%d-of-%d", &s.Index, &s.Count); err == nil && s.Suffix() == rest {
			out[p] = s
		}
	}
	return out, nil
}
