package results

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/impactbench/impactbench/internal/artifacts"
	"github.com/impactbench/impactbench/internal/labels"
)

// TestCalibrationSaysWhenLabelsAreNotARandomDraw: labels given only on the
// rows the viewer's triage queue lists (a split judge panel) are not the
// random draw within target × verdict that the weights assume, and the
// main judge's calibration on the metric says so, with what to do; labels
// on every row, or on rows drawn at random within each target × verdict,
// are not flagged. Before, calibrate took triage labels for a random
// sample without a word, though they bias sensitivity and specificity.
func TestCalibrationSaysWhenLabelsAreNotARandomDraw(t *testing.T) {
	rng := rand.New(rand.NewPCG(4, 4))
	var scores []artifacts.Score
	split := map[string]bool{}
	for _, target := range []string{"a", "b"} {
		for s := 1; s <= 60; s++ {
			id := fmt.Sprintf("m01_s%03d", s)
			present := rng.Float64() < 0.4
			js := make([]artifacts.JudgeVerdict, 3)
			for j := range js {
				js[j] = artifacts.JudgeVerdict{Judge: fmt.Sprintf("j%d", j), Present: ptr(present)}
			}
			conv := artifacts.ConvID(id, target, 0)
			if s%5 == 0 { // a 2–1 panel: a row the triage queue lists
				js[2].Present = ptr(!present)
				split[conv] = true
			}
			scores = append(scores, artifacts.Score{ID: id, MetricID: "m01", TargetModel: target, Present: ptr(present), Passed: ptr(present), ConvID: conv, Judges: js})
		}
	}
	label := func(keep func(i int, s artifacts.Score) bool) []labels.Label {
		var out []labels.Label
		for i, s := range scores {
			if keep(i, s) {
				// People disagree with the judge on the rows it split on.
				out = append(out, labels.Label{ConvID: s.ConvID, MetricID: "m01", Present: *s.Present != split[s.ConvID], Labeler: "ana"})
			}
		}
		return out
	}
	warning := func(ls []labels.Label) string {
		t.Helper()
		res, err := Aggregate(Input{Metrics: calibMetrics, Scores: scores, Calibration: &CalibrationInput{Labels: ls}}, Options{Seed: 1})
		if err != nil {
			t.Fatal(err)
		}
		mc, _ := res[0].JudgeCalibration.Judges[0].Value.ByMetric.Get("m01")
		return mc.Warning
	}
	draw := rand.New(rand.NewPCG(9, 9))
	for _, c := range []struct {
		name   string
		keep   func(int, artifacts.Score) bool
		flags  bool
		phrase string
	}{
		{"triage rows only", func(_ int, s artifacts.Score) bool { return split[s.ConvID] }, true, "24 of the 24 labelled rows are ones the triage queue lists"},
		{"every row", func(int, artifacts.Score) bool { return true }, false, ""},
		{"a random half", func(int, artifacts.Score) bool { return draw.Float64() < 0.5 }, false, ""},
	} {
		w := warning(label(c.keep))
		if got := strings.Contains(w, "not a random draw"); got != c.flags || !strings.Contains(w, c.phrase) ||
			c.flags && !strings.Contains(w, "label rows drawn at random (the viewer's calibration queue)") {
			t.Errorf("%s: warning %q; want flagged %v (%q)", c.name, w, c.flags, c.phrase)
		}
	}
}
