package report

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/impactbench/impactbench/internal/artifacts"
	"github.com/impactbench/impactbench/internal/results"
)

// TestSafetyStopsUnderLeaderboard: a model whose provider stopped some of
// its replies for safety is named under the leaderboard with how many of
// its conversations hold one (from results.json, or recounted from
// scores.json for a provisional row), beside what such a stop means; its
// name is text. A model without any is not listed, and a report in which
// no model has one is the page it was (no trace of the note).
func TestSafetyStopsUnderLeaderboard(t *testing.T) {
	const evil = `<img src=x onerror=alert(1)>`
	stopped := func(id string, idx ...int) artifacts.Score {
		return artifacts.Score{ID: id, MetricID: "m01", Refused: idx}
	}
	cases := []struct {
		name    string
		in      Input
		want    []string
		notWant []string
	}{
		{
			name: "none",
			in: Input{
				Results: []results.ModelResult{{TargetModel: "calm", NTotal: 8}},
				Runs:    []Run{{Target: "prov", Scores: []artifacts.Score{stopped("m01_s001_v01"), stopped("m01_s001_v02")}, HasScores: true}},
			},
			want:    []string{"</canvas></div>\n  </div>\n  <div id=\"lb-unverified\"></div>\n</section>"},
			notWant: []string{"safety-stops", "Provider safety stops", "safety stop is"},
		},
		{
			name: "results and provisional",
			in: Input{
				Results: []results.ModelResult{
					{TargetModel: evil, NTotal: 14, Validity: &results.ValidityStats{N: 16}, Refused: &results.RefusedStats{Conversations: 2, Replies: 3}},
					{TargetModel: "calm", NTotal: 8},
				},
				Runs: []Run{{Target: "prov<b>", Scores: []artifacts.Score{stopped("m01_s001_v01", 1, 1), stopped("m01_s001_v02")}, HasScores: true}},
			},
			want: []string{
				`<div id="lb-safety-stops" data-testid="safety-stops">`,
				"It is the model’s answer: the conversation went on, was judged like any other, and its verdict counts in the rates above.",
				`<li data-testid="safety-stops-row"><b>&lt;img src=x onerror=alert(1)&gt;</b>: safety stops in 2 of 16 conversations (3 target replies)</li>`,
				`<li data-testid="safety-stops-row"><b>prov&lt;b&gt;</b>: safety stops in 1 of 2 conversations (1 target reply), recounted from scores.json</li>`,
				"</ul>\n  </div>\n  <div id=\"lb-unverified\"></div>",
			},
			notWant: []string{evil, "<b>calm</b>", "prov<b>"},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			c.in.Benchmark = Benchmark{Name: "stops", Metrics: []Metric{{ID: "m01", Name: "m01", Type: "positive"}}}
			var buf bytes.Buffer
			if err := build(context.Background(), &c.in, &buf, fixedTime); err != nil {
				t.Fatal(err)
			}
			html := buf.String()
			for _, w := range c.want {
				if !strings.Contains(html, w) {
					t.Errorf("report lacks %q", w)
				}
			}
			for _, w := range c.notWant {
				if strings.Contains(html, w) {
					t.Errorf("report holds %q", w)
				}
			}
		})
	}
}
