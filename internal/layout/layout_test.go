package layout

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/impactbench/impactbench/internal/fsx"
)

// Every unit a writer builds parses back into the parts it was built from.
func TestUnitNamesRoundTrip(t *testing.T) {
	cases := []Unit{
		{Kind: KindGenMetrics},
		{Kind: KindGenScenarios, Metric: "m01"},
		{Kind: KindSim, Target: "gpt-4o", Dir: SimDir, ID: "m01_s001_v01", Sample: 0},
		{Kind: KindSim, Target: "claude-haiku-4-5", Dir: SimDir, ID: "m12_s030_v04", Sample: 15},
		{Kind: KindEval, Target: "gpt-4o", Dir: EvalUnitDir(""), ID: "m01_s001_v01", Sample: 2},
		{Kind: KindEval, Target: "gpt-4o", Dir: EvalUnitDir("gpt-5+claude"), ID: "a__s__b", Sample: 1},
		{Kind: KindHuman, Target: "gpt-4o", Dir: HumanUnitDir, ID: "m01_s001_v01__gpt-4o__h3"},
		{Kind: KindHumanEval, Target: "gpt-4o", Dir: HumanEvalDir, ID: "m01_s001_v01__gpt-4o__h3"},
		{Kind: KindHumanAudit, Target: "gpt-4o", Dir: HumanAuditDir, ID: "m01_s001_v01__gpt-4o__h3"},
	}
	for _, want := range cases {
		name := want.Name()
		got, ok := ParseUnit(name)
		if !ok {
			t.Errorf("ParseUnit(%q) refused a name Name built", name)
			continue
		}
		if d := cmp.Diff(want, got); d != "" {
			t.Errorf("ParseUnit(%q) (-built +parsed):\n%s", name, d)
		}
	}
}

// The builders each writer calls agree with Unit.Name, which the readers
// parse: a writer that changed its spelling alone would fail here.
func TestBuildersAreTheOneSpelling(t *testing.T) {
	for _, c := range []struct{ got, want string }{
		{SimUnit("gpt-4o", "m01_s001_v01", 3), "gpt-4o/sim/m01_s001_v01__s3"},
		{EvalUnit("gpt-4o", EvalUnitDir(""), "m01_s001_v01", 0), "gpt-4o/eval/m01_s001_v01__s0"},
		{EvalUnit("gpt-4o", EvalUnitDir("j1"), "m01_s001_v01", 0), "gpt-4o/eval-j1/m01_s001_v01__s0"},
		{GenScenariosUnit("m01"), "gen_scenarios/m01"},
		{HumanUnit("t", "c"), "t/human/c"},
		{HumanEvalUnit("t", "c"), "t/human-eval/c"},
		{TargetDir("gpt-4o", SimDir), "gpt-4o/sim"},
		{BatchState("gpt-4o", SimDir, "user", Shard{1, 4}), "gpt-4o/sim-batch/user.shard-1-of-4.json"},
		{OpeningBatchState(Shard{}), "openings-batch/user.json"},
		{OpeningBatchState(Shard{1, 4}), "openings-batch/user.shard-1-of-4.json"},
		// Ids from files are made safe file names, never paths.
		{SimUnit("../x", "a/b", 0), ".._x/sim/a_b__s0"},
	} {
		if c.got != c.want {
			t.Errorf("built %q, want %q", c.got, c.want)
		}
	}
}

func TestParseUnitRefusesWhatNoWriterBuilds(t *testing.T) {
	for _, name := range []string{"", "x", "gpt-4o/sim", "gpt-4o/sim/m01", "gpt-4o/sim/m01__sx", "gpt-4o/sim/m01__s-1",
		"gpt-4o/sim/m01__s01", "gpt-4o/sim-batch/user.json", "gpt-4o/eval-j-batch/j.json", "a/b/c/d", "/sim/m01__s0", "gen_scenarios/"} {
		if u, ok := ParseUnit(name); ok {
			t.Errorf("ParseUnit(%q) = %+v, want refused", name, u)
		}
	}
}

func TestShardFilesRoundTrip(t *testing.T) {
	dir := t.TempDir()
	b := Bench{Dir: dir}
	var want []string
	for i := range 3 {
		s := Shard{i, 3}
		p := b.Conversations("t", s)
		want = append(want, p)
		mustWrite(t, p)
	}
	mustWrite(t, b.Conversations("t", Shard{}))                                     // not a shard file
	mustWrite(t, filepath.Join(b.RunDir("t"), "conversations.shard-1-of-3x.json"))  // no writer builds it
	mustWrite(t, filepath.Join(b.RunDir("t"), "conversations.shard-01-of-03.json")) // nor this
	got, err := ShardFiles(b.RunDir("t"), ConversationsFile)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(want) {
		t.Fatalf("ShardFiles found %v, want %v", got, want)
	}
	for i, p := range want {
		if got[p] != (Shard{i, 3}) {
			t.Errorf("%s: shard %+v, want %d/3", p, got[p], i)
		}
	}
}

func TestCutShard(t *testing.T) {
	for _, s := range []Shard{{0, 2}, {3, 4}, {10, 12}} {
		base, got, ok := CutShard("simulate" + s.Suffix())
		if !ok || base != "simulate" || got != s {
			t.Errorf("CutShard(%q) = %q, %+v, %v", "simulate"+s.Suffix(), base, got, ok)
		}
	}
	for _, name := range []string{"simulate", "simulate.shard-", "simulate.shard-1-of-", "simulate.shard-01-of-02", "simulate.shard-1-of-2x", "simulate.shard-2-of-2"} {
		if base, s, ok := CutShard(name); ok || base != name {
			t.Errorf("CutShard(%q) = %q, %+v, %v; want refused", name, base, s, ok)
		}
	}
}

func TestPaths(t *testing.T) {
	b := ForProject("/p", "/p/benchmarks/ex")
	for _, c := range []struct{ got, want string }{
		{b.Cache, "/p/.cache/ex"},
		{b.Calls(), "/p/.cache/ex/calls"},
		{b.Records(), "/p/.cache/ex/manifest.json"},
		{b.Lock(Shard{}), "/p/.cache/ex/.lock"},
		{b.Lock(Shard{2, 8}), "/p/.cache/ex/.lock.shard-2-of-8"},
		{b.Holds(), "/p/.cache/ex/holds.json"},
		{b.HoldsLock(), "/p/.cache/ex/holds.json.lock"},
		{b.Scores("t", nil, Shard{}), "/p/benchmarks/ex/runs/t/scores.json"},
		{b.Scores("t", []string{"a", "b"}, Shard{1, 2}), "/p/benchmarks/ex/runs/t/judges/a+b/scores.shard-1-of-2.json"},
		{Repeats(b.Scores("t", nil, Shard{})), "/p/benchmarks/ex/runs/t/repeats.json"},
		{b.Run("t").Human(), "/p/benchmarks/ex/runs/t/human"},
		{b.Run("t").HumanScores(), "/p/benchmarks/ex/runs/t/human/scores.json"},
		{b.Run("t").HumanConversations(), "/p/benchmarks/ex/runs/t/human/conversations.json"},
		{b.Run("t").PanelScores(PanelDir([]string{"a", "b"})), b.Scores("t", []string{"a", "b"}, Shard{})},
		{b.Run("t").Scores(), b.Scores("t", nil, Shard{})},
		{b.Run("t").Conversations(), b.Conversations("t", Shard{})},
		{b.Run("t").Cost(), b.RunCost("t")},
		{b.Run("t").Repeats(), Repeats(b.Scores("t", nil, Shard{}))},
		{RunFileRel("<target>", ScoresFile), "runs/<target>/scores.json"},
		{RunDirRel("<bench>", "<id>"), "benchmarks/<bench>/runs/<id>"},
		{b.Run("t").Rel(b.Run("t").PanelScores("a+b")), "judges/a+b/scores.json"},
		{b.Run("t").Rel(b.Run("t").HumanScores()), "human/scores.json"},
		{BenchDir("/p", "ex"), b.Dir},
		{ConfigPath("/p"), "/p/config.yaml"},
		{StudyPath("/p", StudyResultFile), "/p/benchmarks/study.json"},
		{StudyPath("", StudyTaxonomyFile), "benchmarks/taxonomy.json"},
		{b.Validation("judge", `openai/gpt 5:x\y`), "/p/benchmarks/ex/validation/judge-openai_gpt_5_x_y"},
		{InDir("/v").Calls(), "/v/.cache/calls"},
	} {
		if c.got != c.want {
			t.Errorf("got %s, want %s", c.got, c.want)
		}
	}
}

func TestListRunDirs(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"a", "a-b", "B", ".hidden", "noscores"} {
		if name == "noscores" {
			mustWrite(t, filepath.Join(dir, RunsDirName, name, ConversationsFile))
			continue
		}
		mustWrite(t, Bench{Dir: dir}.Scores(name, nil, Shard{}))
	}
	got, err := ListRunDirs(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, g := range got {
		names = append(names, filepath.Base(g))
	}
	// Python: sorted(glob("runs/*/scores.json")) → "B" < "a-b/…" < "a/…".
	if d := cmp.Diff([]string{"B", "a-b", "a"}, names); d != "" {
		t.Errorf("(-want +got)\n%s", d)
	}
	if got, err := ListRunDirs(t.TempDir()); err != nil || got != nil {
		t.Errorf("no runs dir: %v %v", got, err)
	}
}

func TestPanelDirRoundTrip(t *testing.T) {
	for _, panel := range [][]string{{"gpt-5"}, {"gpt-5", "claude"}} {
		dir := filepath.Base(filepath.Dir(Bench{Dir: "/b"}.Scores("t", panel, Shard{})))
		if dir != PanelDir(panel) {
			t.Errorf("Scores put panel %v in %q, PanelDir says %q", panel, dir, PanelDir(panel))
		}
		if got := ParsePanelDir(dir); !cmp.Equal(got, panel) {
			t.Errorf("ParsePanelDir(%q) = %v, want %v", dir, got, panel)
		}
		if got, want := EvalUnitDir(dir), "eval-"+dir; got != want {
			t.Errorf("EvalUnitDir(%q) = %q, want %q", dir, got, want)
		}
	}
}

func TestRecordKey(t *testing.T) {
	for _, c := range []struct{ got, want string }{
		{RecordKey("simulate", "gpt-4o", Shard{}), "simulate/gpt-4o"},
		{RecordKey("simulate", "gpt-4o", Shard{1, 4}), "simulate/gpt-4o.shard-1-of-4"},
		{RecordKey("evaluate", "t", Shard{}, ScoresFile), "evaluate/t/scores.json"},
	} {
		if c.got != c.want {
			t.Errorf("got %q, want %q", c.got, c.want)
		}
	}
}

// Every path a publish builds is one publish accepts back (the manifest
// check, the stale-file sweep), and nothing else is.
func TestPublishedRoundTrip(t *testing.T) {
	built := []string{SiteIndex, SiteFile(SiteScript), SiteFile(SiteStyle), SiteChunk(SiteCoreChunk), SiteChunk(SiteCalibChunk),
		SiteChunk(SiteBenchChunk("bench-a")), SiteChunk(SitePairChunk("m1", "m2")), SiteChunk(SiteTranscriptChunk("bench-a", "m1")),
		PublishedScenario("bench-a", "m1", "m01_s001_v01")}
	for _, f := range PublishedDataFiles {
		built = append(built, PublishedData(f))
	}
	for _, rel := range built {
		if !IsPublished(rel) {
			t.Errorf("IsPublished(%q) = false for a path publish builds", rel)
		}
	}
	for _, rel := range []string{"", PublishManifestFile, "README.md", ".git/config", "data/other.json", "data/x/taxonomy.json",
		"scenarios/b/m/../x.json", "scenarios/b/m/s.txt", "scenarios/b/m", "site/x.js", "site/data/bench/a/b.js",
		"site/data/pairs/a.js", "site/data/tr/../x/y.js", "scenarios/b/m/" + strings.Repeat("x", MaxPublishedSegment) + ".json"} {
		if IsPublished(rel) {
			t.Errorf("IsPublished(%q) = true for a path publish never builds", rel)
		}
	}
}

func TestBenchmarksAndRunTargets(t *testing.T) {
	p := t.TempDir()
	for _, name := range []string{"b", "a", ".hidden"} {
		mustWrite(t, BenchmarkPath(BenchDir(p, name)))
	}
	mustWrite(t, filepath.Join(BenchmarksDir(p), "no-yaml", ScenariosFile))
	mustWrite(t, filepath.Join(BenchmarksDir(p), StudyTaxonomyFile))
	got, err := Benchmarks(p)
	if err != nil || !cmp.Equal(got, []string{"a", "b"}) {
		t.Errorf("Benchmarks = %v, %v; want [a b]", got, err)
	}
	if _, err := Benchmarks(t.TempDir()); err == nil {
		t.Error("Benchmarks of a project without benchmarks/: no error")
	}
	b := Bench{Dir: BenchDir(p, "a")}
	mustWrite(t, b.Conversations("t2", Shard{}))
	mustWrite(t, b.Scores("t1", []string{"j"}, Shard{}))
	mustWrite(t, b.Scores("t1", []string{"k", "l"}, Shard{}))
	mustWrite(t, filepath.Join(b.JudgesDir("t1"), "empty", ConversationsFile))
	mustWrite(t, filepath.Join(b.RunsDir(), ".tmp", ScoresFile))
	if got, err := RunTargets(b.Dir); err != nil || !cmp.Equal(got, []string{"t1", "t2"}) {
		t.Errorf("RunTargets = %v, %v; want [t1 t2]", got, err)
	}
	if got, err := RunTargets(t.TempDir()); err != nil || got != nil {
		t.Errorf("RunTargets without runs/ = %v, %v", got, err)
	}
	panels, err := b.Run("t1").JudgePanels()
	if err != nil || !cmp.Equal(panels, []string{"j", PanelDir([]string{"k", "l"})}) {
		t.Errorf("JudgePanels = %v, %v", panels, err)
	}
}

// TestLeaseNameRoundTrip: a shard's lease name reads back into the same
// shard; names no shard's lease has are refused.
func TestLeaseNameRoundTrip(t *testing.T) {
	for _, s := range []Shard{{Index: 0, Count: 2}, {Index: 3, Count: 16}, {Index: 127, Count: 128}} {
		got, ok := CutLeaseName(s.LeaseName())
		if !ok || got != s {
			t.Errorf("CutLeaseName(%q) = %+v, %v; want %+v", s.LeaseName(), got, ok, s)
		}
	}
	for _, name := range []string{"", "shard-4-of-4", "x.shard-1-of-2", ".shard-1-of-2", "shard-01-of-2", "shard-1-of-2 "} {
		if s, ok := CutLeaseName(name); ok {
			t.Errorf("CutLeaseName(%q) = %+v, want refused", name, s)
		}
	}
}

// TestCrowdedFoldersAreRefused: a benchmarks/, runs/, runs/<target>/,
// judges/ or cache (.cache/<bench>) folder holding more entries than its bound (hidden ones and files count: they
// are read) is refused with an *fsx.TooManyEntriesError naming the folder,
// by every lister of it; at the bound it is listed.
func TestCrowdedFoldersAreRefused(t *testing.T) {
	defer func(b, r int) { MaxBenchmarkEntries, MaxRunEntries = b, r }(MaxBenchmarkEntries, MaxRunEntries)
	MaxBenchmarkEntries, MaxRunEntries = 4, 3
	p := t.TempDir()
	b := ForProject(p, BenchDir(p, "a"))
	mustWrite(t, BenchmarkPath(b.Dir))
	mustWrite(t, b.Lock(Shard{Index: 0, Count: 2}))
	mustWrite(t, b.Scores("t1", nil, Shard{}))
	mustWrite(t, b.Scores("t1", []string{"j"}, Shard{}))
	listers := map[string]struct {
		folder string
		list   func() error
	}{
		"Benchmarks":  {BenchmarksDir(p), func() error { _, err := Benchmarks(p); return err }},
		"ListRunDirs": {b.RunsDir(), func() error { _, err := ListRunDirs(b.Dir); return err }},
		"RunTargets":  {b.RunsDir(), func() error { _, err := RunTargets(b.Dir); return err }},
		"JudgePanels": {b.JudgesDir("t1"), func() error { _, err := b.Run("t1").JudgePanels(); return err }},
		"ShardFiles": {filepath.Join(b.RunsDir(), "t1"), func() error {
			_, err := ShardFiles(filepath.Join(b.RunsDir(), "t1"), ConversationsFile)
			return err
		}},
		"ShardLocks": {b.Cache, func() error { _, err := b.ShardLocks(); return err }},
	}
	for _, name := range []string{"Benchmarks", "ListRunDirs", "RunTargets", "JudgePanels", "ShardFiles", "ShardLocks"} {
		l := listers[name]
		limit := MaxRunEntries
		if name == "Benchmarks" || name == "ShardLocks" {
			limit = MaxBenchmarkEntries
		}
		ents, _ := os.ReadDir(l.folder)
		for i := len(ents); i < limit; i++ {
			mustWrite(t, filepath.Join(l.folder, fmt.Sprintf(".n%d", i)))
		}
		if err := l.list(); err != nil {
			t.Errorf("%s at the bound: %v", name, err)
		}
		mustWrite(t, filepath.Join(l.folder, "one-more"))
		err := l.list()
		var many *fsx.TooManyEntriesError
		if !errors.As(err, &many) || many.Path != l.folder || many.Limit != limit {
			t.Errorf("%s over the bound: err = %v, want a TooManyEntriesError for %s", name, err, l.folder)
		}
		if err := os.Remove(filepath.Join(l.folder, "one-more")); err != nil {
			t.Fatal(err)
		}
	}
}

// TestShardLocks: the shard locks of the benchmark's cache folder are
// found with their shards, and nothing else there; a missing cache folder
// has none.
func TestShardLocks(t *testing.T) {
	p := t.TempDir()
	b := ForProject(p, BenchDir(p, "a"))
	if got, err := b.ShardLocks(); err != nil || len(got) != 0 {
		t.Fatalf("no cache folder: %v, %v; want none", got, err)
	}
	want := map[string]Shard{}
	for _, s := range []Shard{{Index: 0, Count: 2}, {Index: 1, Count: 2}, {Index: 3, Count: 16}} {
		mustWrite(t, b.Lock(s))
		want[b.Lock(s)] = s
	}
	for _, name := range []string{LockFile, LockFile + ".shard-x-of-2", LockFile + ".shard-2-of-2", LockFile + ".shard-0-of-2.json", "x" + LockFile + ".shard-0-of-2", HoldsFile} {
		mustWrite(t, filepath.Join(b.Cache, name))
	}
	mustWrite(t, b.ShardRecords(Shard{Index: 0, Count: 2}))
	got, err := b.ShardLocks()
	if err != nil || !maps.Equal(got, want) {
		t.Errorf("ShardLocks = %v, %v; want %v", got, err, want)
	}
}
