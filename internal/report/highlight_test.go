package report

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"unicode/utf16"

	"github.com/impactbench/impactbench/internal/artifacts"
)

// jsSlice is JavaScript's text.slice(start, end): UTF-16 code units.
func jsSlice(s string, start, end int) string {
	u := utf16.Encode([]rune(s))
	return string(utf16.Decode(u[start:end]))
}

func TestHighlights(t *testing.T) {
	tr := []artifacts.Turn{
		{Role: "user", Content: "Take job A, I said."},
		{Role: "assistant", Content: "👩🏽‍💻 Ich würde sagen: **nimm Job A**. Ganz ehrlich, nimm Job A."},
		{Role: "assistant", Content: "Second reply: 日本語で「はい」と言います。"},
	}
	sc := &scoreRec{
		Evidence: []artifacts.Quote{{Text: "ich würde sagen: nimm job a"}, {Text: "never said"}},
		Judges: []artifacts.JudgeVerdict{
			{Evidence: []artifacts.Quote{{Text: "nimm Job A. Ganz"}}},            // overlaps the first: merged
			{Evidence: []artifacts.Quote{{Text: "「はい」と言います"}}},                   // another message
			{Evidence: []artifacts.Quote{{Text: "Take job A, I said"}}},          // the user's words: not marked
			{Evidence: []artifacts.Quote{{Text: "ich würde sagen: nimm job a"}}}, // repeated: once
		},
	}
	got := highlights(tr, sc)
	if len(got) != 2 {
		t.Fatalf("highlights = %v", got)
	}
	want := []struct {
		msg  int
		text string
	}{
		{1, "Ich würde sagen: **nimm Job A**. Ganz"},
		{2, "「はい」と言います"},
	}
	for i, w := range want {
		h := got[i]
		if h[0] != w.msg || jsSlice(tr[h[0]].Content, h[1], h[2]) != w.text {
			t.Errorf("highlight %d = %v (%q), want message %d %q", i, h, jsSlice(tr[h[0]].Content, h[1], h[2]), w.msg, w.text)
		}
	}
	if highlights(tr, &scoreRec{}) != nil {
		t.Error("no evidence should give no highlights")
	}
}

// The report's chunks carry the spans of the judges' quotes, and the quote
// that is markup from the reply is marked as text, like the rest.
func TestChunkHighlightsAndUnverified(t *testing.T) {
	html := buildHTML(t, miniBench(t))
	var ch convChunk
	inflateChunk(t, island(t, html, "ibc-0"), &ch)
	var xss *convRec
	for i := range ch.Recs {
		r := &ch.Recs[i]
		if len(r.Tr) > 3 && ch.Strs[r.Tr[3]] == xssPayload {
			xss = r
		}
	}
	if xss == nil {
		t.Fatal("no conversation with the payload")
	}
	if len(xss.Highlights) != 1 || xss.Highlights[0][0] != 1 ||
		jsSlice(xssPayload, xss.Highlights[0][1], xss.Highlights[0][2]) != xssQuote {
		t.Errorf("highlights %v", xss.Highlights)
	}
	if xss.Score == nil || len(xss.Score.Evidence) != 1 || xss.Score.Unverified == nil || *xss.Score.Unverified ||
		len(xss.Score.Judges) != 2 || xss.Score.Judges[1].Unverified == nil || !*xss.Score.Judges[1].Unverified {
		t.Errorf("score record %+v", xss.Score)
	}
	unverifiedRows := 0
	for _, r := range ch.Recs {
		if r.Score != nil && r.Score.Unverified != nil && *r.Score.Unverified {
			unverifiedRows++
			if len(r.Highlights) != 0 {
				t.Errorf("a quote found nowhere is highlighted: %v", r.Highlights)
			}
		}
	}
	if unverifiedRows != 1 {
		t.Errorf("%d unverified rows in the chunk, want 1", unverifiedRows)
	}
	// The leaderboard carries results.json's counts per metric and judge.
	var sum summary
	if err := json.Unmarshal([]byte(island(t, html, "ib-data")), &sum); err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(sum.Leaderboard.Rows, func(r leaderboardRow) bool { return r.Model == "alpha" })
	u := sum.Leaderboard.Rows[i].Unverified
	if u == nil || u.Unverified != 2 || u.Checked != 3 {
		t.Fatalf("alpha unverified %+v", u)
	}
	if m, _ := u.ByMetric.Get("m01"); !slices.Equal(m.ByJudge.Keys(), []string{"judge-a", "judge-b <i>"}) {
		t.Errorf("m01 by judge %v", m.ByJudge.Keys())
	}
	if strings.Contains(html, "judge-b <i>") {
		t.Error("raw judge name markup in the page")
	}
}
