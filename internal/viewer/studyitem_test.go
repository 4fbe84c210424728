package viewer

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/impactbench/impactbench/internal/labels"
	"github.com/impactbench/impactbench/internal/layout"
)

// TestAfterRevealFollowsWhatWasShown: cy labels one row, the viewer is
// started again with other settings, and cy labels it again. Each line
// records whether the verdict was shown to cy with it (verdict_shown), and
// a label is after_reveal when the verdict had been shown to cy before it —
// by an earlier label's answer or, blind review off, on the page itself —
// whatever the viewer's settings are when it is given. A line from before
// verdict_shown (no key) is left byte for byte and read as it always was:
// shown when the viewer shows the verdict now.
func TestAfterRevealFollowsWhatWasShown(t *testing.T) {
	settings := map[string]Options{
		"open":     {Blind: false},                     // --blind=false: the verdict is on the page
		"after":    {Blind: true, Reveal: RevealAfter}, // shown once the label is saved
		"never":    {Blind: true, Reveal: RevealNever}, // never shown
		"reviewer": {Reviewers: []string{"cy"}},        // cy's own link: never shown
	}
	const (
		none     = ""
		byHand   = "by hand"      // a hand-written line: no digest, no verdict_shown
		asBefore = "as before it" // as the viewer wrote it before verdict_shown
	)
	cases := []struct {
		name      string
		old       string   // a line already in the file
		steps     []string // the settings of each start; cy labels once in each
		wantShown []bool   // verdict_shown of each line written
		wantAfter []bool   // after_reveal of each line written
	}{
		// (a) never shown, then a viewer that shows it after the label:
		// the second label is still blind.
		{"reveal never, then reveal after", none, []string{"never", "after"}, []bool{false, true}, []bool{false, false}},
		// ... then one with blind review off: the page shows it first.
		{"reveal never, then blind review off", none, []string{"never", "open"}, []bool{false, true}, []bool{false, true}},
		// (b) shown with the first label, then a viewer that shows it
		// never: the second label is not blind.
		{"reveal after, then reveal never", none, []string{"after", "never"}, []bool{true, false}, []bool{false, true}},
		{"reveal after, then cy's reviewer link", none, []string{"after", "reviewer"}, []bool{true, false}, []bool{false, true}},
		{"blind review off, then reveal never", none, []string{"open", "never"}, []bool{true, false}, []bool{true, true}},
		// Lines from before verdict_shown: the rule they were always read by.
		{"hand-written line, then reveal after", byHand, []string{"after"}, []bool{true}, []bool{true}},
		{"hand-written line, then reveal never", byHand, []string{"never"}, []bool{false}, []bool{false}},
		{"line as written before, then reveal never", asBefore, []string{"never"}, []bool{false}, []bool{false}},
		{"line as written before, then cy's reviewer link", asBefore, []string{"reviewer"}, []bool{false}, []bool{false}},
		{"line as written before, then reveal after", asBefore, []string{"after"}, []bool{true}, []bool{true}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			project := filepath.Join(t.TempDir(), "project")
			bench, _ := WriteSynth(t, project, SynthSpec{Name: "first", Metrics: 1, ScensPerMetric: 2, Targets: teamTargets, Samples: 1, Msgs: 2, MsgLen: 40, Judges: 1})
			path := filepath.Join(bench, layout.LabelsFile)
			var before []byte
			for k, set := range tc.steps {
				opts := settings[set]
				opts.ProjectDir, opts.Seed = project, 1
				s, base := StartForTest(t, opts)
				ix := s.bench("first").index(s)
				if k == 0 && tc.old != none {
					c := &ix.convs[0]
					line := fmt.Sprintf(`{"conv_id": %q, "metric_id": %q, "present": false, "labeler": "cy", "note": "", "at": "2026-11-01T00:00:00Z"`, c.convID, c.metric)
					if tc.old == asBefore {
						d, _ := ix.digestOf(0)
						line += fmt.Sprintf(`, "transcript_sha256": %q`, d)
					}
					before = []byte(line + "}\n")
					must(t, os.WriteFile(path, before, 0o644))
				}
				hdr := writeHeaders(s, base)
				if set == "reviewer" {
					hdr = teamHeaders(base, tokenOf(t, s, "cy"))
				}
				item := reviewQueue{s}.itemOfConv(ix, 0)
				if code, body := do(t, base, req{"POST", "/api/label", `{"item":"` + item + `","present":true,"labeler":"cy"}`, hdr}); code != 201 {
					t.Fatalf("label %d (%s): %d %s", k+1, set, code, body)
				}
			}
			b, err := os.ReadFile(path)
			must(t, err)
			if !strings.HasPrefix(string(b), string(before)) {
				t.Errorf("the line already there changed:\n%s", b)
			}
			ls, err := labels.Read(path, labels.Known{})
			must(t, err)
			if before != nil {
				if ls[0].VerdictShown != nil || ls[0].AfterReveal {
					t.Errorf("the old line reads as verdict_shown %v, after_reveal %v", ls[0].VerdictShown, ls[0].AfterReveal)
				}
				ls = ls[1:]
			}
			if len(ls) != len(tc.steps) {
				t.Fatalf("%d lines written, want %d:\n%s", len(ls), len(tc.steps), b)
			}
			for k, l := range ls {
				if l.VerdictShown == nil || *l.VerdictShown != tc.wantShown[k] || l.AfterReveal != tc.wantAfter[k] {
					shown := "(no key)"
					if l.VerdictShown != nil {
						shown = fmt.Sprint(*l.VerdictShown)
					}
					t.Errorf("label %d (%s): verdict_shown %s, after_reveal %v; want %v, %v", k+1, tc.steps[k], shown, l.AfterReveal, tc.wantShown[k], tc.wantAfter[k])
				}
			}
		})
	}
}
