package layout

import (
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
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

func TestPaths(t *testing.T) {
	b := ForProject("/p", "/p/benchmarks/ex")
	for _, c := range []struct{ got, want string }{
		{b.Cache, "/p/.cache/ex"},
		{b.Calls(), "/p/.cache/ex/calls"},
		{b.Records(), "/p/.cache/ex/manifest.json"},
		{b.Lock(Shard{}), "/p/.cache/ex/.lock"},
		{b.Lock(Shard{2, 8}), "/p/.cache/ex/.lock.shard-2-of-8"},
		{b.Scores("t", nil, Shard{}), "/p/benchmarks/ex/runs/t/scores.json"},
		{b.Scores("t", []string{"a", "b"}, Shard{1, 2}), "/p/benchmarks/ex/runs/t/judges/a+b/scores.shard-1-of-2.json"},
		{Repeats(b.Scores("t", nil, Shard{})), "/p/benchmarks/ex/runs/t/repeats.json"},
		{HumanDir(b.RunDir("t")), "/p/benchmarks/ex/runs/t/human"},
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
