package viewer

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/impactbench/impactbench/internal/labels"
	"github.com/impactbench/impactbench/internal/layout"
)

// blindWorld is one copy of a project and its viewer, for comparing what
// a reviewer sees after the same label with two different verdicts.
type blindWorld struct {
	base           string
	ana, research  map[string]string
	file           string
	convOf, itemOf map[string]string // item ↔ conv_id
	metricOf       map[string]string // conv_id → its metric
	judge          map[string]bool   // conv_id → the judge's verdict
}

// newBlindWorld writes the project (the same every time) and starts a
// viewer on it with reviewers ana and bo.
func newBlindWorld(t *testing.T, overlap float64) *blindWorld {
	t.Helper()
	project := filepath.Join(t.TempDir(), "project")
	WriteSynth(t, project, SynthSpec{Name: "tiny", Metrics: 2, ScensPerMetric: 12, Targets: []string{"zebratarget", "yaktarget"}, Samples: 1, Msgs: 2, MsgLen: 60, Judges: 1})
	s, base := StartForTest(t, Options{ProjectDir: project, Reviewers: []string{"ana", "bo"}, Seed: 4, Overlap: overlap, OverlapSet: true})
	w := &blindWorld{base: base, ana: teamHeaders(base, tokenOf(t, s, "ana")), research: teamHeaders(base, tokenOf(t, s, "")),
		file: layout.Bench{Dir: layout.BenchDir(project, "tiny")}.Labels(), convOf: map[string]string{}, itemOf: map[string]string{}, metricOf: map[string]string{}, judge: map[string]bool{}}
	// Every row of every stratum (per= draws them all), to name items by
	// their conversation: item ids are keyed per server.
	for _, it := range getAs[struct {
		Items []studyItemView `json:"items"`
	}](t, base, "/api/queue?per=1000", w.research).Items {
		w.convOf[it.Item], w.itemOf[it.ConvID], w.metricOf[it.ConvID] = it.ConvID, it.Item, it.Metric
		w.judge[it.ConvID] = strings.HasSuffix(it.Stratum, "present")
	}
	return w
}

// label posts a label as hdr's principal.
func (w *blindWorld) label(t *testing.T, hdr map[string]string, item string, present bool, labeler string) {
	t.Helper()
	body := `{"item":"` + item + `","present":` + strconv.FormatBool(present)
	if labeler != "" {
		body += `,"labeler":"` + labeler + `"`
	}
	if code, resp := do(t, w.base, req{"POST", "/api/label", body + "}", hdr}); code != 201 {
		t.Fatalf("label: %d %s", code, resp)
	}
}

// labelBlind appends labeler's label on conv as a blind one given
// elsewhere (a line of the file, as a script writes it): the researcher's
// own review page shows the judges first, so a label given there is
// after_reveal and the plan leaves it out.
func (w *blindWorld) labelBlind(t *testing.T, conv string, present bool, labeler string) {
	t.Helper()
	must(t, labels.Append(w.file, labels.Label{ConvID: conv, MetricID: w.metricOf[conv], Present: present, Labeler: labeler}, labels.Known{}))
}

var itemRe = regexp.MustCompile(`"r[a-z2-7]{16}"`)

// get answers path as ana, with every item id replaced by its
// conversation (the same in both worlds).
func (w *blindWorld) get(t *testing.T, path string) string {
	t.Helper()
	code, body := do(t, w.base, req{"GET", path, "", w.ana})
	if code != 200 {
		t.Fatalf("GET %s: %d %s", path, code, body)
	}
	return itemRe.ReplaceAllStringFunc(body, func(s string) string {
		if c, ok := w.convOf[strings.Trim(s, `"`)]; ok {
			return `"` + c + `"`
		}
		return s
	})
}

// TestReviewerQueueSaysNoVerdict: everything a reviewer can read after a
// label — her queue (its count, its items and their order, plan_done),
// her next item — is the same whether the label agreed with the judge or
// not. The same project is built twice; ana labels the same row present in
// one and absent in the other, in several situations of the plan, and
// what she reads then is compared byte for byte (item ids named by their
// conversation). Before, her queue was redrawn from the plan after each
// label: near the end of a stratum's quota its count and items said
// whether the label agreed with the judge's verdict on the row.
func TestReviewerQueueSaysNoVerdict(t *testing.T) {
	type queue struct {
		Items []studyItemView `json:"items"`
		Total int             `json:"total"`
	}
	type row struct {
		item, conv string
		present    bool // the judge's verdict
	}
	// zedRows is the researcher's queue as zed (not blind: with strata).
	zedRows := func(t *testing.T, w *blindWorld) []row {
		var out []row
		for _, it := range getAs[queue](t, w.base, "/api/queue?labeler=zed", w.research).Items {
			out = append(out, row{it.Item, it.ConvID, strings.HasSuffix(it.Stratum, "present")})
		}
		return out
	}
	moved := map[bool]int{} // by lastOfBatch
	for _, tc := range []struct {
		name    string
		overlap float64
		// zed labels the first row of his queue (agree: as the judge did,
		// else the other way) until at most left rows are in it.
		agree bool
		left  int
		// lastOfBatch: ana labels all of her queue but its last row
		// (against the judge on about a third), and then that row, the
		// one whose label draws her next batch.
		lastOfBatch bool
		salt        string // which rows she labels against the judge
	}{
		{name: "a fresh plan", overlap: 0, left: -1},
		{name: "half the plan labelled, as the judge", overlap: 0, agree: true, left: 10},
		{name: "the end of the strata's quotas", overlap: 0, agree: true, left: 4},
		{name: "the end of the strata's quotas, against the judge", overlap: 0, agree: false, left: 6},
		{name: "the end of the strata's quotas, rows asked of two", overlap: 0.3, agree: true, left: 4},
		// Under these two, the plan after her first batch follows the
		// verdict of its last label (a refill drawn from it would say it).
		{name: "the last row of her first batch", overlap: 0, left: -1, lastOfBatch: true, salt: "7"},
		{name: "the last row of her first batch, other labels", overlap: 0, left: -1, lastOfBatch: true, salt: "10"},
		{name: "the last row of a batch, rows asked of two", overlap: 0.3, agree: true, left: 10, lastOfBatch: true, salt: "1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			worlds := [2]*blindWorld{newBlindWorld(t, tc.overlap), newBlindWorld(t, tc.overlap)}
			for _, w := range worlds {
				for tc.left >= 0 {
					rows := zedRows(t, w)
					if len(rows) <= tc.left {
						break
					}
					w.labelBlind(t, rows[0].conv, rows[0].present == tc.agree, "zed")
				}
			}
			if tc.lastOfBatch {
				for _, w := range worlds {
					for {
						q := getAs[queue](t, w.base, "/api/queue", w.ana)
						if q.Total <= 1 {
							break
						}
						conv := w.convOf[q.Items[0].Item]
						w.label(t, w.ana, q.Items[0].Item, w.judge[conv] != (mix(conv, tc.salt)%3 == 0), "")
					}
				}
			}
			saved := [2][]byte{}
			for k, w := range worlds {
				b, err := os.ReadFile(w.file)
				if err != nil && !os.IsNotExist(err) {
					t.Fatal(err)
				}
				saved[k] = b
			}
			before := [2]string{worlds[0].get(t, "/api/queue"), worlds[1].get(t, "/api/queue")}
			if before[0] != before[1] {
				t.Fatalf("the two worlds differ before any label:\n%s\n%s", before[0], before[1])
			}
			var q queue
			must(t, json.Unmarshal([]byte(before[0]), &q))
			rows := q.Items
			if !tc.lastOfBatch && len(rows) > 1 {
				rows = rows[:len(rows)-1] // the last one is its own case
			}
			if len(rows) == 0 || tc.lastOfBatch && len(rows) != 1 {
				t.Fatalf("fixture: ana's queue holds %d item(s)", q.Total)
			}
			for _, it := range rows {
				conv := it.Item // named by its conversation
				var seen [2][]string
				var plan [2]string
				for k, w := range worlds {
					w.label(t, w.ana, w.itemOf[conv], k == 0, "")
					for _, path := range []string{"/api/queue", "/api/next", "/api/next?after=" + w.itemOf[conv]} {
						seen[k] = append(seen[k], w.get(t, path))
					}
					// What ana's queue would be if it were drawn from the
					// plan after each label (the researcher's view of it):
					// the leak.
					for _, it := range getAs[queue](t, w.base, "/api/queue?labeler=ana", w.research).Items {
						plan[k] += it.ConvID + " "
					}
					if saved[k] == nil {
						must(t, os.Remove(w.file))
					} else {
						must(t, os.WriteFile(w.file, saved[k], 0o644))
					}
				}
				if tc.lastOfBatch {
					var after queue
					must(t, json.Unmarshal([]byte(seen[0][0]), &after))
					if after.Total == 0 {
						t.Fatal("fixture: the plan asked for nothing more after ana's batch")
					}
				}
				for n := range seen[0] {
					if seen[0][n] != seen[1][n] {
						t.Errorf("%s: after present ana reads\n%s\nafter absent\n%s", conv, seen[0][n], seen[1][n])
					}
				}
				if plan[0] != plan[1] {
					moved[tc.lastOfBatch]++
				}
			}
		})
	}
	if moved[false] == 0 || moved[true] == 0 {
		t.Fatalf("fixture: a queue drawn from the plan after a label moved with its verdict on %d row(s) within a batch, %d at its end; want some of each", moved[false], moved[true])
	}
	t.Logf("a queue drawn from the plan after a label moved with its verdict on %d row(s) within a batch, %d at its end", moved[false], moved[true])
}

// TestReviewerWorkThroughFinishesThePlan: a reviewer who labels
// everything she is given — here against the judge on about a third of
// the rows, so that the plan keeps asking for more — reaches plan_done,
// and the plan is then complete: every metric × target has a corrected
// rate or is out of reach. On the way, each label takes exactly its row
// out of her queue; only when it runs out does a new batch come (a
// refill), drawn from the plan as it stands.
func TestReviewerWorkThroughFinishesThePlan(t *testing.T) {
	w := newBlindWorld(t, 0)
	judge := map[string]bool{}
	for _, it := range getAs[struct {
		Items []studyItemView `json:"items"`
	}](t, w.base, "/api/queue?per=1000", w.research).Items {
		judge[it.ConvID] = strings.HasSuffix(it.Stratum, "present")
	}
	type queue struct {
		Total    int  `json:"total"`
		PlanDone bool `json:"plan_done"`
	}
	total := getAs[queue](t, w.base, "/api/queue", w.ana).Total
	labels, refills := 0, 0
	for {
		n := getAs[nextAnswer](t, w.base, "/api/next", w.ana)
		if n.Item == nil {
			if !n.PlanDone {
				t.Fatalf("after %d labels: no item and the plan not done, with nobody else at work", labels)
			}
			break
		}
		if labels > 500 {
			t.Fatal("more than 500 labels")
		}
		conv := w.convOf[*n.Item]
		disagree := mix(conv)%3 == 0
		w.label(t, w.ana, *n.Item, judge[conv] != disagree, "")
		labels++
		q := getAs[queue](t, w.base, "/api/queue", w.ana)
		switch {
		case total == 1:
			refills++
		case q.Total != total-1:
			t.Errorf("label %d: ana's queue went from %d to %d, not one fewer", labels, total, q.Total)
		}
		total = q.Total
	}
	done := getAs[struct {
		Total    int            `json:"total"`
		PlanDone bool           `json:"plan_done"`
		Progress []progressLine `json:"progress"`
	}](t, w.base, "/api/queue?labeler=ana", w.research)
	if done.Total != 0 || !done.PlanDone {
		t.Errorf("the researcher's view of ana's queue: %d left, plan_done %v", done.Total, done.PlanDone)
	}
	for _, l := range done.Progress {
		if l.More != 0 || l.Corrected+l.Unreachable != l.Targets {
			t.Errorf("%s: %d more asked, %d of %d targets corrected, %d out of reach", l.Metric, l.More, l.Corrected, l.Targets, l.Unreachable)
		}
	}
	if refills == 0 {
		t.Error("fixture: ana's queue never ran out before the plan was done")
	}
	t.Logf("%d labels, %d refills", labels, refills)
}
