package viewer

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/impactbench/impactbench/internal/report"
)

func miniIndex(t *testing.T, sp SynthSpec) *benchIndex {
	t.Helper()
	project := t.TempDir()
	dir, _ := WriteSynth(t, project, sp)
	ix := loadIndex(sp.Name, dir, report.Settings{}, time.Now())
	if len(ix.notes) > 0 {
		t.Fatalf("notes: %q", ix.notes)
	}
	return ix
}

func stratumOf(ix *benchIndex, it queueItem) string {
	c := ix.convs[ix.byConvID[it.ConvID]]
	return c.metric + " · " + ix.runs[c.target].target + " · " + verdictName(c.present)
}

func TestCalibrationQueueStratified(t *testing.T) {
	ix := miniIndex(t, SynthSpec{Name: "q", Metrics: 3, ScensPerMetric: 10, Targets: []string{"a", "b"}, Samples: 2, Msgs: 2, MsgLen: 20, Judges: 1})
	strata := map[string]int{}
	for _, c := range ix.convs {
		strata[c.metric+" · "+ix.runs[c.target].target+" · "+verdictName(c.present)]++
	}
	const per = 4
	st := func(me string, ls []Label) queueState { return newQueueState(ls, me, 0.2, 7) }
	q := calibrationQueue(ix, st("ana", nil), per, nil)
	got := map[string]int{}
	seen := map[string]bool{}
	for _, it := range q {
		got[it.Stratum]++
		if seen[it.ConvID] {
			t.Errorf("%s drawn twice", it.ConvID)
		}
		seen[it.ConvID] = true
		if want := stratumOf(ix, it); want != it.Stratum {
			t.Errorf("%s in stratum %q, is %q", it.ConvID, it.Stratum, want)
		}
	}
	if len(got) != len(strata) || len(strata) < 12 {
		t.Fatalf("strata drawn %v, exist %v", got, strata)
	}
	for k, n := range strata {
		if got[k] != min(per, n) {
			t.Errorf("stratum %s: drew %d of %d, want %d", k, got[k], n, min(per, n))
		}
	}
	// Shuffled, not interleaved: the order of strata does not repeat a
	// fixed cycle (the old queue alternated strata, which told a reviewer
	// the next item's verdict).
	cycle := true
	for i := len(strata); i < len(q); i++ {
		cycle = cycle && q[i].Stratum == q[i-len(strata)].Stratum
	}
	if cycle {
		t.Error("the queue cycles through the strata in a fixed order")
	}
	// Seeded: same seed and labeller, same queue; another labeller, the
	// same rows in another order; another seed, another draw.
	again := calibrationQueue(ix, st("ana", nil), per, nil)
	bo := calibrationQueue(ix, st("bo", nil), per, nil)
	other := calibrationQueue(ix, newQueueState(nil, "ana", 0.2, 8), per, nil)
	same, reordered, diff := true, false, false
	boSet := map[string]bool{}
	for i := range q {
		same = same && q[i].ConvID == again[i].ConvID
		reordered = reordered || q[i].ConvID != bo[i].ConvID
		boSet[bo[i].ConvID] = true
	}
	otherSet := map[string]bool{}
	for _, it := range other {
		otherSet[it.ConvID] = true
	}
	for id := range seen {
		diff = diff || !otherSet[id]
		if !boSet[id] {
			t.Errorf("%s is in ana's queue, not bo's", id)
		}
	}
	if !same || !reordered || !diff {
		t.Errorf("seeding: same seed identical %v, another labeller reordered %v, other seed differs %v", same, reordered, diff)
	}
	// What the labeller already did drops out without promoting the next draw.
	done := []Label{{ConvID: q[0].ConvID, MetricID: q[0].Metric, Labeler: "ana"}}
	rest := calibrationQueue(ix, st("ana", done), per, nil)
	if len(rest) != len(q)-1 {
		t.Errorf("after labelling %s: %d items, want %d", q[0].ConvID, len(rest), len(q)-1)
	}
	for _, it := range rest {
		if !seen[it.ConvID] {
			t.Errorf("%s promoted into the draw", it.ConvID)
		}
	}
}

// TestCalibrationQueueFollowsThePlanAndOverlaps: without per, each metric ×
// target × verdict gets the number of new rows the plan asks for; a row someone
// else labelled drops out unless it is an overlap row, which a second
// person is asked to label too (about the configured share).
func TestCalibrationQueueFollowsThePlanAndOverlaps(t *testing.T) {
	ix := miniIndex(t, SynthSpec{Name: "qp", Metrics: 2, ScensPerMetric: 30, Targets: []string{"a", "b", "c"}, Samples: 2, Msgs: 2, MsgLen: 20, Judges: 1})
	quota := map[quotaKey][2]int{{"m01", "a"}: {7, 5}, {"m01", "b"}: {2, 1}, {"m02", "a"}: {3, 9}, {"m02", "c"}: {4, 0}}
	q := calibrationQueue(ix, newQueueState(nil, "ana", 0.25, 3), 0, quota)
	got := map[quotaKey][2]int{}
	for _, it := range q {
		c := ix.convs[ix.byConvID[it.ConvID]]
		k := quotaKey{c.metric, ix.runs[c.target].target}
		n := got[k]
		n[b2i(c.present)]++
		got[k] = n
	}
	if len(got) != len(quota) {
		t.Fatalf("drawn %v, plan %v", got, quota)
	}
	for k, n := range quota {
		if got[k] != n {
			t.Errorf("%v: drawn %v, plan %v", k, got[k], n)
		}
	}
	// ana labels all of hers; bo then gets the overlap share of them, and
	// new rows for the plan.
	var ls []Label
	for _, it := range q {
		ls = append(ls, Label{ConvID: it.ConvID, MetricID: it.Metric, Labeler: "ana"})
	}
	mine := calibrationQueue(ix, newQueueState(ls, "ana", 0.25, 3), 0, quota)
	for _, it := range mine {
		if slices.ContainsFunc(q, func(x queueItem) bool { return x.ConvID == it.ConvID }) {
			t.Errorf("ana is asked for %s again", it.ConvID)
		}
	}
	bo := calibrationQueue(ix, newQueueState(ls, "bo", 0.25, 3), 0, quota)
	second := 0
	for _, it := range bo {
		if it.Overlap {
			second++
			if !slices.ContainsFunc(q, func(x queueItem) bool { return x.ConvID == it.ConvID }) {
				t.Errorf("overlap row %s was not ana's", it.ConvID)
			}
		}
	}
	if second == 0 || second > len(q)/2 {
		t.Errorf("bo gets %d of ana's %d rows to label again; want about a quarter", second, len(q))
	}
	// With every overlap row labelled by two, nobody gets it again.
	for _, it := range bo {
		if it.Overlap {
			ls = append(ls, Label{ConvID: it.ConvID, MetricID: it.Metric, Labeler: "bo"})
		}
	}
	for _, it := range calibrationQueue(ix, newQueueState(ls, "cy", 0.25, 3), 0, quota) {
		if it.Overlap {
			t.Errorf("a third labeller is asked for %s", it.ConvID)
		}
	}
}

func TestTriageQueue(t *testing.T) {
	ix := miniIndex(t, SynthSpec{Name: "tq", Metrics: 2, ScensPerMetric: 8, Targets: []string{"a", "b"}, Samples: 2, Msgs: 2, MsgLen: 20, Judges: 3})
	q := triageQueue(ix, newQueueState(nil, "", 0, 1))
	inQueue := map[string]string{}
	for _, it := range q {
		inQueue[it.ConvID] = it.Reason
	}
	nSplit, nSamples := 0, 0
	for _, c := range ix.convs {
		split := judgesSplit(c.judges)
		other := artifactsSampleOther(ix, c)
		samplesSplit := other != nil && c.present != nil && *other != *c.present
		if split {
			nSplit++
		}
		if samplesSplit {
			nSamples++
		}
		reason, ok := inQueue[c.convID]
		if ok != (split || samplesSplit) {
			t.Errorf("%s: in queue %v (%q), judges split %v, samples split %v", c.convID, ok, reason, split, samplesSplit)
		}
	}
	if nSplit == 0 || nSamples == 0 {
		t.Fatalf("fixture has %d split panels and %d split samples: the test would prove nothing", nSplit, nSamples)
	}
}

// artifactsSampleOther returns the verdict of c's other sample (2 samples).
func artifactsSampleOther(ix *benchIndex, c conv) *bool {
	for _, o := range ix.convs {
		if o.id == c.id && o.target == c.target && o.sample != c.sample {
			return o.present
		}
	}
	return nil
}

// TestTriageQueueSaysItsRowsAreNotARandomDraw: the triage queue's answer
// heads its notes with why its labels do not calibrate the judge (they
// count in calibrate like any other); the calibration queue's has no such
// note.
func TestTriageQueueSaysItsRowsAreNotARandomDraw(t *testing.T) {
	project := filepath.Join(t.TempDir(), "project")
	WriteSynth(t, project, SynthSpec{Name: "tri", Metrics: 1, ScensPerMetric: 6, Targets: []string{"a"}, Samples: 2, Msgs: 2, MsgLen: 20, Judges: 3})
	_, base := StartForTest(t, Options{ProjectDir: project, Seed: 3})
	type answer struct {
		Items []studyItemView `json:"items"`
		Notes []string        `json:"notes"`
	}
	tri := getAs[answer](t, base, "/api/queue?kind=triage&labeler=ana", nil)
	if len(tri.Items) == 0 {
		t.Fatal("fixture: nothing in the triage queue")
	}
	if len(tri.Notes) == 0 || !strings.Contains(tri.Notes[0], "not drawn at random") || !strings.Contains(tri.Notes[0], "label from the calibration queue") {
		t.Errorf("triage notes %q: want the first to say its rows are not a random draw and where to calibrate", tri.Notes)
	}
	if cal := getAs[answer](t, base, "/api/queue?labeler=ana", nil); len(cal.Notes) != 0 {
		t.Errorf("calibration queue notes %q, want none", cal.Notes)
	}
}
