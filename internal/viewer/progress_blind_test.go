package viewer

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/impactbench/impactbench/internal/labels"
	"github.com/impactbench/impactbench/internal/layout"
)

// TestReviewerProgressSaysNoVerdict: what a reviewer's queue says of the
// plan after a label does not depend on whether the label agreed with the
// judge. Before, the progress lines (labelled, planned, more, corrected)
// moved one way after an agreeing label and another after a disagreeing
// one, so reading them after each label told the reviewer the judge's
// verdict on the row just labelled. A reviewer's progress is now what they
// answered, per benchmark and metric.
func TestReviewerProgressSaysNoVerdict(t *testing.T) {
	project := filepath.Join(t.TempDir(), "project")
	WriteSynth(t, project, SynthSpec{Name: "tiny", Metrics: 2, ScensPerMetric: 10, Targets: []string{"zebratarget", "yaktarget"}, Samples: 1, Msgs: 2, MsgLen: 60, Judges: 1})
	s, base := StartForTest(t, Options{ProjectDir: project, Reviewers: []string{"ana"}, Seed: 4, Overlap: 0, OverlapSet: true})
	ana, research := teamHeaders(base, tokenOf(t, s, "ana")), teamHeaders(base, tokenOf(t, s, ""))
	type answer struct {
		Items    []studyItemView `json:"items"`
		Progress json.RawMessage `json:"progress"`
		Total    int             `json:"total"`
	}
	// zed labels as the judge did until a few rows are left: where the
	// plan's needs depend on the labels. His labels are lines given blind
	// elsewhere (the researcher's own review page shows the judges first,
	// so a label given there is after_reveal and the plan leaves it out).
	file := layout.Bench{Dir: layout.BenchDir(project, "tiny")}.Labels()
	for {
		q := getAs[answer](t, base, "/api/queue?labeler=zed", research)
		if q.Total <= 4 {
			break
		}
		it := q.Items[0]
		must(t, labels.Append(file, labels.Label{ConvID: it.ConvID, MetricID: it.Metric, Present: strings.HasSuffix(it.Stratum, "present"), Labeler: "zed"}, labels.Known{}))
	}
	saved, err := os.ReadFile(file)
	must(t, err)
	moved := 0
	for _, it := range getAs[answer](t, base, "/api/queue", ana).Items {
		var seen, plan [2]string
		for k, present := range []string{"true", "false"} {
			must(t, os.WriteFile(file, saved, 0o644))
			if code, resp := do(t, base, req{"POST", "/api/label", `{"item":"` + it.Item + `","present":` + present + `}`, ana}); code != 201 {
				t.Fatalf("ana's label: %d %s", code, resp)
			}
			seen[k] = string(getAs[answer](t, base, "/api/queue", ana).Progress)
			// The plan's lines as a blind answer gave them before.
			var lines []progressLine
			must(t, json.Unmarshal(getAs[answer](t, base, "/api/queue?labeler=ana", research).Progress, &lines))
			b, err := json.Marshal(blindLines(lines))
			must(t, err)
			plan[k] = string(b)
		}
		if !strings.Contains(seen[0], `"answered":`) || strings.Contains(seen[0], `"more"`) {
			t.Errorf("item %s: ana's progress %s, want what she answered only", it.Item, seen[0])
		}
		if seen[0] != seen[1] {
			t.Errorf("item %s: after present ana's progress says %s, after absent %s", it.Item, seen[0], seen[1])
		}
		if plan[0] != plan[1] {
			moved++
		}
	}
	if moved == 0 {
		t.Fatal("fixture: the plan's blind lines never moved with a label's verdict")
	}
	t.Logf("the plan's blind lines moved with the label's verdict on %d item(s)", moved)
}
