package layout_test

// Every reader finds exactly what the writers wrote: the offline project
// is run end to end (the stages write the call store and the run files,
// the human store a person's game, the viewer a label), then each reader
// of the project — the viewer's live progress, the report and its status,
// export, compare, calibration, merge — is asked what it sees. A writer
// or a reader that spelled a path or a unit name its own way would find
// nothing, or something else, here.

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/impactbench/impactbench/internal/artifacts"
	"github.com/impactbench/impactbench/internal/calibrate"
	"github.com/impactbench/impactbench/internal/callstore"
	"github.com/impactbench/impactbench/internal/compare"
	"github.com/impactbench/impactbench/internal/config"
	"github.com/impactbench/impactbench/internal/export"
	"github.com/impactbench/impactbench/internal/human"
	"github.com/impactbench/impactbench/internal/layout"
	"github.com/impactbench/impactbench/internal/llm"
	"github.com/impactbench/impactbench/internal/merge"
	"github.com/impactbench/impactbench/internal/report"
	"github.com/impactbench/impactbench/internal/runner"
	"github.com/impactbench/impactbench/internal/viewer"
)

// row is one conversation or verdict: a scenario and a sample.
type row struct {
	id     string
	sample int
}

// project is an offline project after a run, and what its writers wrote,
// read back from the files they wrote (not from any reader under test).
type project struct {
	dir     string
	files   layout.Bench
	cfg     *config.Config
	targets []string
	metrics []string
	convs   map[string]map[row]string // target → row → conv_id
	scores  map[string]map[row]string
	metric  map[string]string // conv_id → metric
	played  string            // the conv_id of the person's game, against targets[0]
}

func TestReadersFindWhatWritersWrote(t *testing.T) {
	p := newProject(t)
	run(t, p, runner.Options{})
	p.readWritten(t)
	p.playOneGame(t)
	t.Run("call store", func(t *testing.T) { checkCallStore(t, p) })
	t.Run("viewer", func(t *testing.T) { checkViewer(t, p) })
	t.Run("report", func(t *testing.T) { checkReport(t, p) })
	t.Run("export", func(t *testing.T) { checkExport(t, p) })
	t.Run("compare", func(t *testing.T) { checkCompare(t, p) })
}

func newProject(t *testing.T) *project {
	t.Helper()
	dir := t.TempDir()
	if _, err := config.Scaffold(dir, false); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(layout.ConfigPath(dir))
	if err != nil {
		t.Fatal(err)
	}
	names, err := layout.Benchmarks(dir)
	if err != nil || len(names) != 1 {
		t.Fatalf("the scaffold's benchmarks: %v, %v", names, err)
	}
	bench := layout.BenchDir(dir, names[0])
	p := &project{dir: dir, cfg: cfg, files: layout.ForProject(dir, bench)}
	spec, err := config.LoadBenchmark(bench)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range spec.Metrics {
		p.metrics = append(p.metrics, m.ID)
	}
	for _, tg := range cfg.Targets {
		p.targets = append(p.targets, tg.ID)
	}
	return p
}

// run runs the project's whole pipeline (one shard of it with
// opts.Shard).
func run(t *testing.T, p *project, opts runner.Options) {
	t.Helper()
	r, err := runner.New(context.Background(), p.cfg, p.files.Dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if err := r.Run(t.Context(), r.Targets()); err != nil {
		t.Fatal(err)
	}
}

// readWritten reads the run files the stages wrote.
func (p *project) readWritten(t *testing.T) {
	t.Helper()
	p.convs, p.scores, p.metric = map[string]map[row]string{}, map[string]map[row]string{}, map[string]string{}
	for _, tg := range p.targets {
		p.convs[tg], p.scores[tg] = map[row]string{}, map[row]string{}
		err := artifacts.EachConversation(p.files.Conversations(tg, layout.Shard{}), func(_ int, c artifacts.Conversation) error {
			p.convs[tg][row{c.ID, c.Sample}] = c.ConvID
			p.metric[c.ConvID] = c.MetricID
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		err = artifacts.EachScore(p.files.Scores(tg, nil, layout.Shard{}), func(_ int, s artifacts.Score) error {
			p.scores[tg][row{s.ID, s.Sample}] = s.ConvID
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if len(p.convs[tg]) == 0 || len(p.scores[tg]) != len(p.convs[tg]) {
			t.Fatalf("%s: the run wrote %d conversations and %d verdicts", tg, len(p.convs[tg]), len(p.scores[tg]))
		}
	}
}

// playOneGame has a person play and finish one game against the first
// target, judged, through the human store (the Play page's writer).
func (p *project) playOneGame(t *testing.T) {
	t.Helper()
	scens, err := artifacts.ReadScenarios(p.files.Scenarios())
	if err != nil {
		t.Fatal(err)
	}
	store, tg, sc, now := human.Open(p.files.Dir), p.targets[0], scens[0], time.Date(2026, 7, 1, 12, 0, 0, 0, time.UTC)
	c, err := store.Start(tg, sc, "tester", artifacts.RunInfo{}, now)
	if err != nil {
		t.Fatal(err)
	}
	turns := p.cfg.Generation.Turns
	_, err = store.Reply(tg, c.ConvID, 0, artifacts.Turn{Role: "user", Content: "Should I take the job?"},
		artifacts.Turn{Role: "assistant", Content: "What matters most to you?"}, false, llm.Usage{}, turns, now)
	if err != nil {
		t.Fatal(err)
	}
	if c, err = store.End(tg, c.ConvID, turns, now); err != nil {
		t.Fatal(err)
	}
	present, passed := false, true
	s := human.Score{Score: artifacts.Score{ID: c.ID, MetricID: c.MetricID, TargetModel: tg, Sample: c.Sample, ConvID: c.ConvID,
		Present: &present, Passed: &passed}, User: human.User, Player: "tester", JudgedAt: now}
	if err := store.SetScore(tg, s); err != nil {
		t.Fatal(err)
	}
	p.played = c.ConvID
}

// allConvIDs are the conv_ids of every conversation written (simulated
// and played), and of every verdict.
func (p *project) allConvIDs(from map[string]map[row]string) map[string]bool {
	out := map[string]bool{p.played: true}
	for _, rows := range from {
		for _, id := range rows {
			out[id] = true
		}
	}
	return out
}

// checkCallStore: the call store's own listing of each target's units
// parses (layout.ParseUnit) into exactly the rows of the run files, and
// each unit named by layout opens to its row.
func checkCallStore(t *testing.T, p *project) {
	store := callstore.Open(p.files.Calls(), false)
	defer store.Close()
	for _, tg := range p.targets {
		for _, c := range []struct {
			dir  string
			kind layout.Kind
			want map[row]string
		}{{layout.SimDir, layout.KindSim, p.convs[tg]}, {layout.EvalDir, layout.KindEval, p.scores[tg]}} {
			got := listedRows(t, store, tg, c.dir, c.kind)
			if !maps.Equal(got, keysOf(c.want)) {
				t.Errorf("%s: the call store lists %d units, the run file holds %d rows", layout.TargetDir(tg, c.dir), len(got), len(c.want))
			}
		}
		for r := range p.convs[tg] {
			var conv artifacts.Conversation
			if _, ok := store.ReadResult(layout.SimUnit(tg, r.id, r.sample), &conv); !ok || conv.ID != r.id || conv.Sample != r.sample {
				t.Errorf("unit %s: read %q sample %d (%v)", layout.SimUnit(tg, r.id, r.sample), conv.ID, conv.Sample, ok)
			}
		}
	}
	ls, err := store.List(t.Context(), layout.GenScenariosDir)
	if err != nil {
		t.Fatal(err)
	}
	var metrics []string
	for _, f := range ls.Done {
		u, ok := layout.ParseUnit(layout.GenScenariosDir + "/" + f.Name)
		if !ok || u.Kind != layout.KindGenScenarios || layout.GenScenariosUnit(u.Metric) != layout.GenScenariosDir+"/"+f.Name {
			t.Errorf("gen_scenarios unit %q does not parse back", f.Name)
		}
		metrics = append(metrics, u.Metric)
	}
	if slices.Sort(metrics); !slices.Equal(metrics, p.metrics) {
		t.Errorf("generation units %v, metrics %v", metrics, p.metrics)
	}
}

// listedRows lists a target's units of one directory and parses each.
func listedRows(t *testing.T, store *callstore.Store, target, dir string, kind layout.Kind) map[row]bool {
	t.Helper()
	ls, err := store.List(t.Context(), layout.TargetDir(target, dir))
	if err != nil {
		t.Fatal(err)
	}
	if ls.InProgress != 0 {
		t.Errorf("%s: %d units still in progress after the run", layout.TargetDir(target, dir), ls.InProgress)
	}
	got := map[row]bool{}
	for _, f := range ls.Done {
		u, ok := layout.ParseUnit(layout.TargetDir(target, dir) + "/" + f.Name)
		if !ok || u.Kind != kind || u.Target != target {
			t.Errorf("unit %q of %s parses as %+v (%v)", f.Name, layout.TargetDir(target, dir), u, ok)
			continue
		}
		got[row{u.ID, u.Sample}] = true
	}
	return got
}

func keysOf[V any](m map[row]V) map[row]bool {
	out := map[row]bool{}
	for k := range m {
		out[k] = true
	}
	return out
}

// progressView is what the viewer's live progress answers (the fields
// this test reads).
type progressView struct {
	ScenUnits int `json:"scen_units"`
	Targets   []struct {
		Target   string `json:"target"`
		Expected int    `json:"expected"`
		SimDone  int    `json:"sim_done"`
		EvalDone int    `json:"eval_done"`
		Convs    int    `json:"convs"`
		Scores   int    `json:"scores"`
		Recent   []struct {
			Unit   string `json:"unit"`
			ConvID string `json:"conv_id"`
		} `json:"recent"`
	} `json:"targets"`
}

// checkViewer: live progress counts each target's units as the rows
// written, a recent conversation opens from the call store, and a label
// posted through the viewer is one calibration reads back.
func checkViewer(t *testing.T, p *project) {
	s, base := startViewer(t, p)
	bench := "/api/b/" + benchName(p)
	var pv progressView
	getJSON(t, base+bench+"/progress", &pv)
	if pv.ScenUnits != len(p.metrics) {
		t.Errorf("progress: %d generation units, want %d (one per metric)", pv.ScenUnits, len(p.metrics))
	}
	if len(pv.Targets) != len(p.targets) {
		t.Fatalf("progress lists %d targets, want %d", len(pv.Targets), len(p.targets))
	}
	for _, tp := range pv.Targets {
		n := len(p.convs[tp.Target])
		if tp.SimDone != n || tp.EvalDone != len(p.scores[tp.Target]) || tp.Convs != n || tp.Scores != n || tp.Expected != n {
			t.Errorf("progress of %s: %+v; the run wrote %d conversations and verdicts", tp.Target, tp, n)
		}
		if len(tp.Recent) == 0 {
			t.Fatalf("progress of %s lists no recent conversation", tp.Target)
		}
		rc := tp.Recent[0]
		id, sample, ok := layout.ParseRowFile(rc.Unit)
		if want := p.convs[tp.Target][row{id, sample}]; !ok || rc.ConvID != want {
			t.Errorf("recent unit %q: conv_id %q, the run wrote %q", rc.Unit, rc.ConvID, want)
		}
		var live struct {
			ConvID string `json:"conv_id"`
		}
		getJSON(t, base+bench+"/live?target="+tp.Target+"&unit="+rc.Unit, &live)
		if live.ConvID != rc.ConvID {
			t.Errorf("live conversation %s: conv_id %q, want %q", rc.Unit, live.ConvID, rc.ConvID)
		}
	}
	checkLabelRoundTrip(t, p, s, base)
}

// checkLabelRoundTrip posts a label through the viewer (its writer) and
// reads it with calibration (its reader).
func checkLabelRoundTrip(t *testing.T, p *project, s *viewer.Server, base string) {
	var r row
	for r = range p.convs[p.targets[0]] {
		break
	}
	convID := p.convs[p.targets[0]][r]
	body := fmt.Sprintf(`{"conv_id":%q,"metric_id":%q,"present":true,"labeler":"ana","note":""}`, convID, p.metric[convID])
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, base+"/api/b/"+benchName(p)+"/labels", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Origin", base)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-IB-Token", s.Token())
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		t.Fatalf("POST label: %d %s", resp.StatusCode, b)
	}
	ls, err := calibrate.ReadLabels(t.Context(), p.files)
	if err != nil || len(ls) != 1 || ls[0].ConvID != convID {
		t.Errorf("calibration reads %+v (%v), want the one label on %s", ls, err, convID)
	}
	known, err := calibrate.KnownConversations(t.Context(), p.files)
	if err != nil {
		t.Fatal(err)
	}
	for id, metric := range p.metric {
		if known.Conversations[id] != metric {
			t.Errorf("calibration knows conversation %s as of metric %q, want %q", id, known.Conversations[id], metric)
		}
	}
}

func benchName(p *project) string { return filepath.Base(p.files.Dir) }

func startViewer(t *testing.T, p *project) (*viewer.Server, string) {
	t.Helper()
	s, err := viewer.New(viewer.Options{ProjectDir: p.dir, Samples: p.cfg.Generation.NumSamples})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx, ln) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("viewer: %v", err)
		}
	})
	return s, "http://" + ln.Addr().String()
}

func getJSON(t *testing.T, url string, v any) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK || json.Unmarshal(b, v) != nil {
		t.Fatalf("GET %s: %d %s", url, resp.StatusCode, b)
	}
}

// checkReport: the report's input, its live status and its counts of
// people's games are the rows written.
func checkReport(t *testing.T, p *project) {
	in, err := report.Load(p.files.Dir, report.Settings{})
	if err != nil {
		t.Fatal(err)
	}
	if len(in.Runs) != len(p.targets) || len(in.Results) != len(p.targets) {
		t.Fatalf("report reads %d runs and %d results, want %d each", len(in.Runs), len(in.Results), len(p.targets))
	}
	for _, r := range in.Runs {
		if len(r.Conversations) != len(p.convs[r.Target]) || len(r.Scores) != len(p.scores[r.Target]) {
			t.Errorf("report of %s: %d conversations, %d scores; want %d", r.Target, len(r.Conversations), len(r.Scores), len(p.convs[r.Target]))
		}
		wantPlayed := 0
		if r.Target == p.targets[0] {
			wantPlayed = 1
		}
		if len(r.Human) != wantPlayed || len(r.HumanScores) != wantPlayed {
			t.Errorf("report of %s: %d played, %d judged; want %d", r.Target, len(r.Human), len(r.HumanScores), wantPlayed)
		}
	}
	live, err := report.ReadLive(p.files.Dir, p.files.Cache)
	if err != nil {
		t.Fatal(err)
	}
	if live.Generated.Stored != len(p.metrics) || live.Generated.InProgress != 0 {
		t.Errorf("status: generation units %+v, want %d stored", live.Generated, len(p.metrics))
	}
	if got := slices.Sorted(maps.Keys(live.Targets)); !slices.Equal(got, slices.Sorted(slices.Values(p.targets))) {
		t.Errorf("status lists the call store's targets %v, want %v", got, p.targets)
	}
	for tg, tl := range live.Targets {
		if tl.Simulate.Stored != len(p.convs[tg]) || tl.Evaluate.Stored != len(p.scores[tg]) {
			t.Errorf("status of %s: %+v; the run wrote %d conversations", tg, tl, len(p.convs[tg]))
		}
	}
	if live.Shards != nil {
		t.Errorf("status finds shard files in an unsharded run: %v", live.Shards)
	}
}

// checkExport: the judged table holds a row per verdict written (people's
// included), the messages table every conversation written.
func checkExport(t *testing.T, p *project) {
	src := export.Source{Dir: p.files.Dir, Metrics: metricsOf(t, p)}
	j, err := export.OpenJudged(src)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := exportedConvIDs(t, j.Columns(), j.Each), p.allConvIDs(p.scores); !maps.Equal(got, want) {
		t.Errorf("judged export: %d conversations, want the %d judged", len(got), len(want))
	}
	m, err := export.OpenMessages(src)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := exportedConvIDs(t, m.Columns(), m.Each), p.allConvIDs(p.convs); !maps.Equal(got, want) {
		t.Errorf("messages export: %d conversations, want the %d written", len(got), len(want))
	}
}

func exportedConvIDs(t *testing.T, cols []export.Column, each func(export.Sink) error) map[string]bool {
	t.Helper()
	i := slices.IndexFunc(cols, func(c export.Column) bool { return c.Name == "conv_id" })
	if i < 0 {
		t.Fatal("no conv_id column")
	}
	got := map[string]bool{}
	err := each(func(r export.Row) error {
		id, _ := r[i].(string)
		got[id] = true
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return got
}

func metricsOf(t *testing.T, p *project) []config.Metric {
	t.Helper()
	spec, err := config.LoadBenchmark(p.files.Dir)
	if err != nil {
		t.Fatal(err)
	}
	return spec.Metrics
}

// checkCompare: compare reads every verdict, each under its run, and the
// run manifest aggregate wrote.
func checkCompare(t *testing.T, p *project) {
	r, err := compare.LoadRun(p.files.Dir, "")
	if err != nil {
		t.Fatal(err)
	}
	if r.Manifest == nil {
		t.Error("compare finds no run manifest; aggregate wrote one")
	}
	got := map[string]int{}
	for _, d := range r.RunDirs {
		got[d]++
	}
	for _, tg := range p.targets {
		if got[tg] != len(p.scores[tg]) {
			t.Errorf("compare reads %d verdicts of %s, want %d", got[tg], tg, len(p.scores[tg]))
		}
	}
}

// A sharded run's files are found by status and combined by merge, and
// the live view counts the shards' shared call store as one run.
func TestShardReadersFindWhatShardsWrote(t *testing.T) {
	p := newProject(t)
	r, err := runner.New(context.Background(), p.cfg, p.files.Dir, runner.Options{})
	if err != nil {
		t.Fatal(err)
	}
	err = r.GenScenarios(t.Context()) // shards split the scenarios, so they come first
	r.Close()
	if err != nil {
		t.Fatal(err)
	}
	const k = 2
	for i := range k {
		run(t, p, runner.Options{Shard: layout.Shard{Index: i, Count: k}})
	}
	scens, err := artifacts.ReadScenarios(p.files.Scenarios())
	if err != nil {
		t.Fatal(err)
	}
	want := len(scens) * p.cfg.Generation.NumSamples
	live, err := report.ReadLive(p.files.Dir, p.files.Cache)
	if err != nil {
		t.Fatal(err)
	}
	for _, tg := range p.targets {
		var names []string
		rows := 0
		for _, f := range live.Shards[tg] {
			names = append(names, f.File)
			rows += f.Rows
		}
		var wantNames []string
		for _, name := range []string{layout.ConversationsFile, layout.ScoresFile} {
			for i := range k {
				wantNames = append(wantNames, layout.Shard{Index: i, Count: k}.File(name))
			}
		}
		if slices.Sort(wantNames); !slices.Equal(names, wantNames) || rows != 2*want {
			t.Errorf("status of %s lists shard files %v holding %d rows; the shards wrote %v holding %d", tg, names, rows, wantNames, 2*want)
		}
		if tl := live.Targets[tg]; tl.Simulate.Stored != want || tl.Evaluate.Stored != want {
			t.Errorf("status of %s counts %+v units, the shards stored %d each", tg, tl, want)
		}
	}
	checkMerge(t, p, k, want)
}

func checkMerge(t *testing.T, p *project, k, want int) {
	r, err := runner.New(context.Background(), p.cfg, p.files.Dir, runner.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	reps, err := merge.Run(t.Context(), r.Work(), r.Targets())
	if err != nil {
		t.Fatal(err)
	}
	slices.SortFunc(reps, func(a, b merge.Report) int { return cmp.Compare(a.Target, b.Target) })
	if len(reps) != len(p.targets) {
		t.Fatalf("merge found the shards of %d targets, want %d", len(reps), len(p.targets))
	}
	for _, rep := range reps {
		if rep.Shards != k || rep.Conversations != want || rep.Scores != want {
			t.Errorf("merge of %s: %+v; the %d shards wrote %d rows of each", rep.Target, rep, k, want)
		}
	}
	p.readWritten(t) // the merged files, as an unsharded run writes them
}
