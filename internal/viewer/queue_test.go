package viewer

import (
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

func TestCalibrationQueueStratified(t *testing.T) {
	ix := miniIndex(t, SynthSpec{Name: "q", Metrics: 3, ScensPerMetric: 10, Targets: []string{"a", "b"}, Samples: 2, Msgs: 2, MsgLen: 20, Judges: 1})
	strata := map[string]int{}
	for _, c := range ix.convs {
		strata[c.metric+" · "+verdictName(c.present)]++
	}
	const per = 4
	q := calibrationQueue(ix, 7, per, nil, nil)
	got := map[string]int{}
	seen := map[string]bool{}
	for _, it := range q {
		got[it.Stratum]++
		if seen[it.ConvID] {
			t.Errorf("%s drawn twice", it.ConvID)
		}
		seen[it.ConvID] = true
		c := ix.convs[ix.byConvID[it.ConvID]]
		if want := c.metric + " · " + verdictName(c.present); want != it.Stratum {
			t.Errorf("%s in stratum %q, is %q", it.ConvID, it.Stratum, want)
		}
	}
	if len(got) != len(strata) || len(strata) < 6 {
		t.Fatalf("strata drawn %v, exist %v", got, strata)
	}
	for k, n := range strata {
		if got[k] != min(per, n) {
			t.Errorf("stratum %s: drew %d of %d, want %d", k, got[k], n, min(per, n))
		}
	}
	// Interleaved: the first len(strata) items cover every stratum.
	first := map[string]bool{}
	for _, it := range q[:len(strata)] {
		first[it.Stratum] = true
	}
	if len(first) != len(strata) {
		t.Errorf("first %d items cover %d strata", len(strata), len(first))
	}
	// Seeded: same seed, same queue; another seed, another draw.
	again := calibrationQueue(ix, 7, per, nil, nil)
	other := calibrationQueue(ix, 8, per, nil, nil)
	same, diff := true, false
	for i := range q {
		same = same && q[i].ConvID == again[i].ConvID
		diff = diff || q[i].ConvID != other[i].ConvID
	}
	if !same || !diff {
		t.Errorf("seeding: same seed identical %v, other seed differs %v", same, diff)
	}
	// What the labeler already did drops out without promoting the next draw.
	done := map[string]bool{q[0].ConvID: true}
	rest := calibrationQueue(ix, 7, per, done, nil)
	if len(rest) != len(q)-1 || rest[0].ConvID != q[1].ConvID {
		t.Errorf("after labelling %s: %d items (want %d), first %s", q[0].ConvID, len(rest), len(q)-1, rest[0].ConvID)
	}
}

func TestTriageQueue(t *testing.T) {
	ix := miniIndex(t, SynthSpec{Name: "tq", Metrics: 2, ScensPerMetric: 8, Targets: []string{"a", "b"}, Samples: 2, Msgs: 2, MsgLen: 20, Judges: 3})
	q := triageQueue(ix, nil)
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
