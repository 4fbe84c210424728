package viewer

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
)

// studyBenches × studySpec is a study-sized project: 17 benchmarks of
// 8,640 conversations each (6 metrics × 60 scenarios × 4 targets × 6
// samples), short transcripts (the queue never reads them).
const studyBenches = 17

var studySpec = SynthSpec{Metrics: 6, ScensPerMetric: 60, Targets: []string{"t1", "t2", "t3", "t4"}, Samples: 6, Msgs: 2, MsgLen: 20, Judges: 1}

// WriteStudy writes a study-sized project (studyBenches × studySpec)
// under project.
func WriteStudy(tb testing.TB, project string) {
	tb.Helper()
	for k := range studyBenches {
		sp := studySpec
		sp.Name = fmt.Sprintf("b%02d", k)
		WriteSynth(tb, project, sp)
	}
}

// benchCall sends r and answers its status and body.
func benchCall(b testing.TB, base string, r req) (int, []byte) {
	b.Helper()
	hr, err := http.NewRequest(r.method, base+r.path, strings.NewReader(r.body))
	must(b, err)
	for k, v := range r.hdr {
		hr.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(hr)
	must(b, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	must(b, err)
	return resp.StatusCode, body
}

// BenchmarkReviewerHoldAndLabel: what a reviewer's requests cost the
// server on a study-sized project, through HTTP: opening an item's form
// (hold: is it hers? reviewerMay draws her queue in its benchmark), the
// form's renewal every 30 s (she holds it already), a label whose hold
// lapsed (reviewerMay again; with the labels file's fsync), and the
// study's queue and next item (what the page asks after each label), and
// a label followed by the study's next item.
//
//	go test -run '^$' -bench BenchmarkReviewerHoldAndLabel -benchtime 20x ./internal/viewer/
func BenchmarkReviewerHoldAndLabel(b *testing.B) {
	project := b.TempDir()
	WriteStudy(b, project)
	s, base := StartForTest(b, Options{ProjectDir: project, Reviewers: []string{"ana", "bo"}, Seed: 3})
	s.Warm()
	ana := teamHeaders(base, tokenOf(b, s, "ana"))
	// nextItem: ana's next item in one benchmark after the last one.
	last := ""
	nextItem := func() string {
		code, body := benchCall(b, base, req{"GET", "/api/next?bench=b07&after=" + last, "", ana})
		var n nextAnswer
		if code != 200 || json.Unmarshal(body, &n) != nil || n.Item == nil {
			b.Fatalf("next: %d %.200s", code, body)
		}
		last = *n.Item
		return last
	}
	hold := func(item string) {
		if code, body := benchCall(b, base, req{"POST", "/api/hold", `{"item":"` + item + `"}`, ana}); code != 200 {
			b.Fatalf("hold: %d %s", code, body)
		}
	}
	b.Run("hold", func(b *testing.B) {
		for b.Loop() {
			b.StopTimer()
			item := nextItem()
			b.StartTimer()
			hold(item)
		}
	})
	b.Run("renew", func(b *testing.B) {
		item := nextItem()
		for b.Loop() {
			hold(item)
		}
	})
	b.Run("label", func(b *testing.B) {
		for b.Loop() {
			b.StopTimer()
			item := nextItem()
			b.StartTimer()
			if code, body := benchCall(b, base, req{"POST", "/api/label", `{"item":"` + item + `","present":true}`, ana}); code != 201 {
				b.Fatalf("label: %d %s", code, body)
			}
		}
	})
	// What the page does at each label: the label, then the study's next
	// item (the labelled benchmark's queue is drawn again, the others'
	// are kept).
	b.Run("label+next", func(b *testing.B) {
		for b.Loop() {
			b.StopTimer()
			item := nextItem()
			b.StartTimer()
			if code, body := benchCall(b, base, req{"POST", "/api/label", `{"item":"` + item + `","present":false}`, ana}); code != 201 {
				b.Fatalf("label: %d %s", code, body)
			}
			if code, body := benchCall(b, base, req{"GET", "/api/next?after=" + item, "", ana}); code != 200 {
				b.Fatalf("next: %d %.200s", code, body)
			}
		}
	})
	_, body := benchCall(b, base, req{"GET", "/api/queue", "", ana})
	var q struct{ Total int }
	must(b, json.Unmarshal(body, &q))
	b.Logf("%d benchmarks of %d conversations; ana's queue: %d items", studyBenches, len(studySpec.Targets)*studySpec.Samples*studySpec.Metrics*studySpec.ScensPerMetric, q.Total)
	for _, path := range []string{"/api/next", "/api/queue"} {
		b.Run(path[len("/api/"):], func(b *testing.B) {
			for b.Loop() {
				if code, body := benchCall(b, base, req{"GET", path, "", ana}); code != 200 {
					b.Fatalf("%s: %d %.200s", path, code, body)
				}
			}
		})
	}
}
