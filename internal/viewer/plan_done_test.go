package viewer

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/impactbench/impactbench/internal/report"
)

// queueAnswer is the part of GET /api/queue this test reads.
type queueAnswer struct {
	Total    int  `json:"total"`
	PlanDone bool `json:"plan_done"`
}

// TestPlanDoneSaysWhetherMoreCanCome: plan_done on GET /api/queue and
// /api/next is true only when nothing more can come to the reviewer —
// not while conversations wait for their verdict, not while another
// reviewer's open form holds a row the plan asks for, not while a row
// waits for its second labeller — and true once everything is labelled.
func TestPlanDoneSaysWhetherMoreCanCome(t *testing.T) {
	project := filepath.Join(t.TempDir(), "project")
	spec := SynthSpec{Name: "tiny", Metrics: 1, ScensPerMetric: 2, Targets: []string{"t1"}, Samples: 1, Msgs: 2, MsgLen: 60, Judges: 1, Unscored: true}
	WriteSynth(t, project, spec)
	s, base := StartForTest(t, Options{ProjectDir: project, Reviewers: []string{"ana", "bo"}, Seed: 5, Overlap: 0, OverlapSet: true})
	ana, bo := teamHeaders(base, tokenOf(t, s, "ana")), teamHeaders(base, tokenOf(t, s, "bo"))
	// The plan asks for every row of each stratum (two here, fewer than it wants).
	queue := func(hdr map[string]string) queueAnswer { return getAs[queueAnswer](t, base, "/api/queue", hdr) }
	next := func(hdr map[string]string) nextAnswer { return getAs[nextAnswer](t, base, "/api/next", hdr) }
	label := func(hdr map[string]string, item string) {
		t.Helper()
		if code, body := do(t, base, req{"POST", "/api/label", `{"item":"` + item + `","present":true}`, hdr}); code != 201 {
			t.Fatalf("label: %d %s", code, body)
		}
	}
	want := func(step string, got queueAnswer, total int, done bool) {
		t.Helper()
		if got.Total != total || got.PlanDone != done {
			t.Errorf("%s: total %d, plan_done %v; want %d, %v", step, got.Total, got.PlanDone, total, done)
		}
	}

	want("no verdicts yet", queue(ana), 0, false)
	if n := next(ana); n.Item != nil || n.PlanDone {
		t.Errorf("no verdicts yet: next %+v", n)
	}
	spec.Unscored = false
	WriteSynth(t, project, spec) // the judges' verdicts arrive
	time.Sleep(staleCheck)       // the index notices them
	want("verdicts arrived", queue(bo), 2, false)

	first := next(ana)
	if first.Item == nil {
		t.Fatal("no first item")
	}
	label(ana, *first.Item)
	second := next(ana)
	if second.Item == nil {
		t.Fatal("no second item")
	}
	if code, body := do(t, base, req{"POST", "/api/hold", `{"item":"` + *second.Item + `"}`, ana}); code != 200 {
		t.Fatalf("hold: %d %s", code, body)
	}
	want("the last row held by ana's open form", queue(bo), 0, false)
	if n := next(bo); n.Item != nil || n.PlanDone {
		t.Errorf("the last row held: bo's next %+v", n)
	}
	label(ana, *second.Item)
	want("everything labelled, bo", queue(bo), 0, true)
	want("everything labelled, ana", queue(ana), 0, true)
	if n := next(bo); n.Item != nil || !n.PlanDone {
		t.Errorf("everything labelled: bo's next %+v", n)
	}

	// Every row asked of two: ana's labels wait for a second labeller.
	s2, base2 := StartForTest(t, Options{ProjectDir: project, Reviewers: []string{"ana", "bo"}, Seed: 5, Overlap: 1, OverlapSet: true})
	ana, bo, base = teamHeaders(base2, tokenOf(t, s2, "ana")), teamHeaders(base2, tokenOf(t, s2, "bo")), base2
	want("rows waiting for a second labeller, ana", queue(ana), 0, false)
	want("rows waiting for a second labeller, bo", queue(bo), 2, false)
	for range 2 {
		label(bo, *next(bo).Item)
	}
	want("second labels given, ana", queue(ana), 0, true)
	want("second labels given, bo", queue(bo), 0, true)

	// Another target's conversations arrive, their verdicts not yet: the
	// plan is open again although every row judged so far is labelled.
	spec.Targets = []string{"t1", "t2"}
	dir, _ := WriteSynth(t, project, spec)
	must(t, os.Remove(filepath.Join(dir, "runs", "t2", "scores.json")))
	time.Sleep(staleCheck)
	want("a target's verdicts still to come, ana", queue(ana), 0, false)
	if n := next(bo); n.Item != nil || n.PlanDone {
		t.Errorf("a target's verdicts still to come: bo's next %+v", n)
	}
}

// BenchmarkQueueWhileWaiting: what one poll of a waiting reviewer's page
// costs the server per benchmark of 4,000 judged conversations — the
// queue as every GET /api/queue draws it (the plan, then the labeller's
// rows) and, on top, stillOpen's pass over the rows anyone still owes,
// here in its worst case: nothing left to anyone, so no early return.
func BenchmarkQueueWhileWaiting(b *testing.B) {
	project := b.TempDir()
	dir, _ := WriteSynth(b, project, SynthSpec{Name: "w", Metrics: 10, ScensPerMetric: 40, Targets: []string{"a", "b", "c", "d", "e"}, Samples: 2, Msgs: 2, MsgLen: 20, Judges: 1})
	ix := loadIndex("w", dir, report.Settings{}, time.Now())
	p := queueParams{kind: "calibration", seed: 3, halfWidth: 0.1}
	// bo labelled every row the plan asks for, and again until it asks
	// for nothing more: ana's queue is empty and so is anyone's.
	var ls []Label
	for {
		rows := calibrationQueue(ix, newQueueState(ls, "bo", 0, p.seed), 0, quotaOf(planOf(ix, ls, p.halfWidth)))
		if len(rows) == 0 {
			break
		}
		for _, it := range rows {
			ls = append(ls, Label{ConvID: it.ConvID, MetricID: it.Metric, Labeler: "bo", Present: true})
		}
	}
	quota := quotaOf(planOf(ix, ls, p.halfWidth))
	b.Logf("%d conversations, %d labels", len(ix.convs), len(ls))
	b.Run("queue", func(b *testing.B) {
		for b.Loop() {
			q := quotaOf(planOf(ix, ls, p.halfWidth))
			if len(calibrationQueue(ix, newQueueState(ls, "ana", 0, p.seed), 0, q)) != 0 {
				b.Fatal("ana has work")
			}
		}
	})
	b.Run("stillOpen", func(b *testing.B) {
		for b.Loop() {
			if stillOpen(ix, ls, p, quota) {
				b.Fatal("open")
			}
		}
	})
}

// getAs GETs path with hdr and decodes its 200 answer.
func getAs[T any](t *testing.T, base, path string, hdr map[string]string) T {
	t.Helper()
	code, body := do(t, base, req{"GET", path, "", hdr})
	if code != 200 {
		t.Fatalf("GET %s: %d %s", path, code, body)
	}
	return decode[T](t, body)
}
