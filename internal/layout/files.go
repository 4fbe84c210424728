package layout

import (
	"errors"
	"fmt"
	"io/fs"
	"path"
	"path/filepath"
	"strings"

	"github.com/impactbench/impactbench/internal/fsx"
)

// File names of a benchmark directory and of a run directory. Readers of
// one file name (a cache listing, a glob) take it from here.
const (
	// ConfigFile is the project's configuration, at the top of the
	// project beside EnvFile (its secrets; init writes EnvExampleFile);
	// BenchmarksDirName holds one directory per benchmark.
	ConfigFile        = "config.yaml"
	EnvFile           = ".env"
	EnvExampleFile    = EnvFile + ".example"
	BenchmarksDirName = "benchmarks"
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
	// StaleShardsDirName, in a run directory, is where the refusal of a
	// merge of two splits tells the user to move the older split's shard
	// files (nothing reads it: shard files are looked for beside it).
	StaleShardsDirName = "stale-shards"
	// CacheDirName is the project's cache directory (beside config.yaml):
	// one directory per benchmark, holding CallsDirName (the call store),
	// RecordsFile (the phase records), LockFile and HoldsFile (the review
	// forms open on every view server of the project, with its lock).
	CacheDirName = ".cache"
	CallsDirName = "calls"
	RecordsFile  = "manifest.json"
	LockFile     = ".lock"
	HoldsFile    = "holds.json"
)

// A study's files, in the project's benchmarks/ directory beside the
// benchmark folders (where upstream's publish script reads its inputs):
// its taxonomy, nutrition label and models (inputs) and study.json, what
// `impactbench study` writes.
const (
	StudyTaxonomyFile  = "taxonomy.json"
	StudyNutritionFile = "nutrition-label.json"
	StudyModelsFile    = "models.yaml"
	StudyResultFile    = "study.json"
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

// ConfigPath is the project's config.yaml.
func ConfigPath(projectDir string) string { return filepath.Join(projectDir, ConfigFile) }

// StudyPath is one of a study's files (StudyTaxonomyFile, …) in the
// project's benchmarks/ directory.
func StudyPath(projectDir, name string) string { return filepath.Join(BenchmarksDir(projectDir), name) }

// BenchmarksDir is the project's benchmarks/ directory.
func BenchmarksDir(projectDir string) string { return filepath.Join(projectDir, BenchmarksDirName) }

// BenchDir is the directory of the project's benchmark called name:
// benchmarks/<name>.
func BenchDir(projectDir, name string) string { return filepath.Join(BenchmarksDir(projectDir), name) }

// BenchmarkPath is benchmark.yaml of the benchmark in dir.
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
		return filepath.Join(b.RunDir(target), JudgesDirName, PanelDir(panel), s.File(ScoresFile))
	}
	return filepath.Join(b.RunDir(target), s.File(ScoresFile))
}

// PanelDir is the directory name of an alternative judge panel under
// runs/<target>/judges: its judges' safe names joined by '+' ("" for the
// configured judges).
func PanelDir(panel []string) string { return strings.Join(panel, panelSep) }

// ParsePanelDir reads a panel's directory name back into its judges.
func ParsePanelDir(dir string) []string { return strings.Split(dir, panelSep) }

const panelSep = "+"

// Repeats is the judge-consistency file beside a scores file.
func Repeats(scoresPath string) string { return filepath.Join(filepath.Dir(scoresPath), RepeatsFile) }

// RunCost is runs/<target>/cost.json.
func (b Bench) RunCost(target string) string { return filepath.Join(b.RunDir(target), CostFile) }

// JudgesDir is runs/<target>/judges (one directory per alternative panel).
func (b Bench) JudgesDir(target string) string {
	return filepath.Join(b.RunDir(target), JudgesDirName)
}

// RunDirRel is a run directory's path relative to the project,
// '/'-separated, as messages and scaffolds show it: RunDirRel("<bench>",
// "<id>") is "benchmarks/<bench>/runs/<id>".
func RunDirRel(bench, target string) string {
	return path.Join(BenchmarksDirName, bench, RunsDirName, target)
}

// RunFileRel is a run file's path relative to the benchmark directory,
// '/'-separated, as messages show it: RunFileRel("<target>", ScoresFile)
// is "runs/<target>/scores.json", RunFileRel("*", …) a glob.
func RunFileRel(target, name string) string {
	return path.Join(RunsDirName, target, name)
}

// ValidationDirName holds the runs of `impactbench validate`, one
// directory per swapped model, never over the main run.
const ValidationDirName = "validation"

// Validation is where the validation run that swaps role's model for
// model writes: validation/<role>-<model>, the model's '/', '\', ':' and
// ' ' made '_'.
func (b Bench) Validation(role, model string) string {
	label := strings.NewReplacer("/", "_", "\\", "_", ":", "_", " ", "_").Replace(model)
	return filepath.Join(b.Dir, ValidationDirName, role+"-"+label)
}

// Run is runs/<target> as a Run, for readers that list run directories.
func (b Bench) Run(target string) Run { return Run{Dir: b.RunDir(target)} }

// Run is one run directory (runs/<target>), for readers that hold the
// directory (from ListRunDirs or RunTargets) rather than a benchmark and a
// target. Its files are the unsharded ones, of the configured judges.
type Run struct{ Dir string }

func (r Run) Conversations() string { return filepath.Join(r.Dir, ConversationsFile) }
func (r Run) Scores() string        { return filepath.Join(r.Dir, ScoresFile) }
func (r Run) Cost() string          { return filepath.Join(r.Dir, CostFile) }
func (r Run) Repeats() string       { return filepath.Join(r.Dir, RepeatsFile) }

// Rel is p relative to the run directory, '/'-separated (p as it was
// given when it is not under it): scores.json, judges/<panel>/scores.json.
func (r Run) Rel(p string) string {
	rel, err := filepath.Rel(r.Dir, p)
	if err != nil {
		return p
	}
	return filepath.ToSlash(rel)
}

// PanelScores is judges/<panel dir>/scores.json.
func (r Run) PanelScores(panelDir string) string {
	return filepath.Join(r.Dir, JudgesDirName, panelDir, ScoresFile)
}

// Human is runs/<target>/human: the conversations people played against
// the target (HumanConversations), the verdicts on them (HumanScores) and
// the lock of both (HumanLock).
func (r Run) Human() string              { return filepath.Join(r.Dir, HumanDirName) }
func (r Run) HumanConversations() string { return filepath.Join(r.Human(), ConversationsFile) }
func (r Run) HumanScores() string        { return filepath.Join(r.Human(), ScoresFile) }
func (r Run) HumanLock() string          { return filepath.Join(r.Human(), LockFile) }

// Calls is the call store's directory.
func (b Bench) Calls() string { return filepath.Join(b.Cache, CallsDirName) }

// Records is the phase records' file.
func (b Bench) Records() string { return filepath.Join(b.Cache, RecordsFile) }

// ShardRecords is the file of the phase records a shard's run writes
// (manifest.shard-i-of-K.json; Records for the zero Shard), beside the
// benchmark's, so shards running at once never rewrite one file.
func (b Bench) ShardRecords(s Shard) string { return filepath.Join(b.Cache, s.File(RecordsFile)) }

// Holds is the file of the benchmark's rows held by an open review form,
// shared by every view server on the project; HoldsLock is its lock
// (holds.json.lock: the file itself is replaced whole, so it cannot carry
// the lock).
func (b Bench) Holds() string     { return filepath.Join(b.Cache, HoldsFile) }
func (b Bench) HoldsLock() string { return b.Holds() + LockFile }

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
	return fmt.Sprintf(shardMark+"%d-of-%d", s.Index, s.Count)
}

// File is name with the shard's suffix before its extension
// (conversations.shard-0-of-4.json).
func (s Shard) File(name string) string {
	ext := filepath.Ext(name)
	return strings.TrimSuffix(name, ext) + s.Suffix() + ext
}

// SplitPattern is the shell pattern of every JSON file of a split of
// count shards: "*.shard-*-of-<count>.json".
func SplitPattern(count int) string {
	return fmt.Sprintf("*"+shardMark+"*-of-%d.json", count)
}

// CutShard reads a name a shard's run suffixed (Suffix) back into the
// name and the shard: "simulate.shard-1-of-4" is ("simulate", 1 of 4).
// ok is false for a name no shard wrote.
func CutShard(name string) (base string, s Shard, ok bool) {
	i := strings.LastIndex(name, shardMark)
	if i < 0 {
		return name, Shard{}, false
	}
	if _, err := fmt.Sscanf(name[i:], shardMark+"%d-of-%d", &s.Index, &s.Count); err != nil || s.Index >= s.Count || s.Suffix() != name[i:] {
		return name, Shard{}, false
	}
	return name[:i], s, true
}

const shardMark = ".shard-"

// LeaseName names the shard's lease in an object store: "shard-i-of-K",
// its Suffix without the dot. The workers take it; a merge reads the
// leases back (CutLeaseName) to learn which shards ran.
func (s Shard) LeaseName() string { return strings.TrimPrefix(s.Suffix(), ".") }

// CutLeaseName reads a lease's name back into its shard; ok is false for
// a name LeaseName did not make.
func CutLeaseName(name string) (Shard, bool) {
	_, s, ok := CutShard("." + name)
	return s, ok && s.LeaseName() == name
}

// ShardFiles finds the shard files of name in dir (conversations.json →
// conversations.shard-*-of-*.json), with each one's shard. A missing or
// unreadable dir has none; one holding more than MaxRunEntries entries is
// an *fsx.TooManyEntriesError, read no further.
func ShardFiles(dir, name string) (map[string]Shard, error) {
	ext := filepath.Ext(name)
	stem := strings.TrimSuffix(name, ext)
	out := map[string]Shard{}
	_, err := fsx.ReadDir(dir, MaxRunEntries, func(e fs.DirEntry) bool {
		n := e.Name()
		if !strings.HasPrefix(n, stem+shardMark) || !strings.HasSuffix(n, ext) {
			return false
		}
		if base, s, ok := CutShard(strings.TrimSuffix(n, ext)); ok && base == stem {
			out[filepath.Join(dir, n)] = s
		}
		return false
	})
	var many *fsx.TooManyEntriesError
	if errors.As(err, &many) {
		return nil, err
	}
	return out, nil
}

// ShardLocks lists the benchmark's shard lock files (.lock.shard-i-of-K)
// in its cache folder, with their shards. A missing cache folder has none;
// one holding more than MaxBenchmarkEntries entries is an
// *fsx.TooManyEntriesError (exit 2 naming it), read no further.
func (b Bench) ShardLocks() (map[string]Shard, error) {
	base := LockFile + shardMark
	out := map[string]Shard{}
	_, err := fsx.ReadDir(b.Cache, MaxBenchmarkEntries, func(e fs.DirEntry) bool {
		if n := e.Name(); strings.HasPrefix(n, base) {
			if name, s, ok := CutShard(n); ok && name == LockFile {
				out[filepath.Join(b.Cache, n)] = s
			}
		}
		return false
	})
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	return out, nil
}
