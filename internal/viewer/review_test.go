package viewer

import (
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/impactbench/impactbench/internal/report"
)

// writeHeaders are what the viewer's own page sends with a write.
func writeHeaders(s *Server, base string) map[string]string {
	return map[string]string{"Origin": base, "Content-Type": "application/json", "X-IB-Token": s.Token(), "Sec-Fetch-Site": "same-origin"}
}

func decodeInto(t *testing.T, body string, v any) {
	t.Helper()
	if err := json.Unmarshal([]byte(body), v); err != nil {
		t.Fatalf("%v: %s", err, body)
	}
}

// TestBlindReviewAPI checks the raw answers the review page uses, in blind
// mode: the queue, an item and a saved label name no target, verdict,
// stratum or other labeller; the reveal after saving has the judges'
// verdict but still no target; with reveal never it has none.
func TestBlindReviewAPI(t *testing.T) {
	project, bench := miniProject(t)
	other := `{"conv_id":"m01_s001_v01__alpha__s0","metric_id":"m01","present":true,"labeler":"bo","note":"BO-NOTE","at":"2026-01-01T00:00:00Z"}` + "\n"
	must(t, os.WriteFile(filepath.Join(bench, "labels.jsonl"), []byte(other), 0o644))
	forbidden := []string{"alpha", "beta", "__s0", "__s1", `"stratum"`, `"present"`, `"passed"`, "judge-a", "justification", `"bo"`, "BO-NOTE", `"conv_id"`, `"target"`}
	check := func(what, body string, skip ...string) {
		t.Helper()
		for _, f := range forbidden {
			if !slicesContains(skip, f) && strings.Contains(body, f) {
				t.Errorf("%s answered %s:\n%.300s", what, f, body)
			}
		}
	}
	for _, reveal := range []Reveal{RevealAfter, RevealNever} {
		s, base := StartForTest(t, Options{ProjectDir: project, Blind: true, Reveal: reveal, Seed: 3})
		code, body := do(t, base, req{"GET", "/api/b/mini/queue?kind=calibration&labeler=ana", "", nil})
		if code != 200 {
			t.Fatalf("queue: %d %s", code, body)
		}
		check("queue", body)
		var q struct {
			Items []map[string]any `json:"items"`
		}
		decodeInto(t, body, &q)
		if len(q.Items) == 0 {
			t.Fatal("empty queue")
		}
		for _, it := range q.Items {
			if len(it) != 2 || it["item"] == nil || it["metric_id"] == nil {
				t.Errorf("blind queue item %v: want only item and metric_id", it)
			}
		}
		item := q.Items[0]["item"].(string)
		code, body = do(t, base, req{"GET", "/api/b/mini/item?id=" + item + "&labeler=ana", "", nil})
		if code != 200 || !strings.Contains(body, `"transcript"`) {
			t.Fatalf("item: %d %s", code, body)
		}
		check("item", body)
		code, body = do(t, base, req{"POST", "/api/b/mini/labels", `{"item":"` + item + `","present":false,"labeler":"ana","note":""}`, writeHeaders(s, base)})
		if code != 201 {
			t.Fatalf("label: %d %s", code, body)
		}
		var saved map[string]any
		decodeInto(t, body, &saved)
		label := saved["label"].(map[string]any)
		if label["present"] != false || label["labeler"] != "ana" {
			t.Errorf("saved label %v", label)
		}
		delete(saved, "label")
		rest, _ := json.Marshal(saved)
		switch reveal {
		case RevealAfter:
			// The judges' verdict now, the target still not.
			check("saved (reveal after)", string(rest), `"present"`, `"passed"`, "judge-a", "justification")
			if saved["score"] == nil {
				t.Errorf("reveal after: no verdict in %s", rest)
			}
		case RevealNever:
			check("saved (reveal never)", string(rest))
		}
		// The item and the conversation are one: the label is on the file
		// under its conv_id.
		b, _ := os.ReadFile(filepath.Join(bench, "labels.jsonl"))
		lines := strings.Split(strings.TrimSpace(string(b)), "\n")
		var last Label
		decodeInto(t, lines[len(lines)-1], &last)
		if last.Labeler != "ana" || !strings.Contains(last.ConvID, "__") {
			t.Errorf("last line %s", lines[len(lines)-1])
		}
		// Unknown items, and an item with a conversation, are refused.
		if code, _ := do(t, base, req{"GET", "/api/b/mini/item?id=rxxxxxxxxxxxxxxxx", "", nil}); code != 404 {
			t.Errorf("unknown item: %d", code)
		}
		if code, _ := do(t, base, req{"POST", "/api/b/mini/labels", `{"item":"` + item + `","conv_id":"x","present":true,"labeler":"ana"}`, writeHeaders(s, base)}); code != 400 {
			t.Errorf("item and conv_id: %d", code)
		}
		// Writes by item need the page's own origin and token like any other.
		if code, _ := do(t, base, req{"POST", "/api/b/mini/labels", `{"item":"` + item + `","present":true,"labeler":"ana"}`, map[string]string{"Content-Type": "application/json"}}); code != 403 {
			t.Errorf("item write without origin and token: %d", code)
		}
	}
	// Outside blind mode the item carries the conversation, the judges and
	// the labels.
	_, base := StartForTest(t, Options{ProjectDir: project, Blind: false})
	_, body := do(t, base, req{"GET", "/api/b/mini/resolve?conv=m01_s001_v01__alpha__s0", "", nil})
	var r map[string]string
	decodeInto(t, body, &r)
	_, body = do(t, base, req{"GET", "/api/b/mini/item?id=" + r["item"], "", nil})
	for _, want := range []string{`"conv_id":"m01_s001_v01__alpha__s0"`, `"target":"alpha"`, "judge-a", "BO-NOTE"} {
		if !strings.Contains(body, want) {
			t.Errorf("open item lacks %s", want)
		}
	}
}

func slicesContains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

// TestItemIDsAreOpaque: an item id is the same for the same server and
// conversation, differs across servers (a fresh key), and holds nothing of
// the conversation id.
func TestItemIDsAreOpaque(t *testing.T) {
	a, b := itemID([]byte("key-one"), "mini", "m01_s001_v01__alpha__s0"), itemID([]byte("key-two"), "mini", "m01_s001_v01__alpha__s0")
	if a == b || a != itemID([]byte("key-one"), "mini", "m01_s001_v01__alpha__s0") || len(a) != 1+itemIDLen || strings.Contains(a, "alpha") {
		t.Errorf("item ids %q %q", a, b)
	}
}

// TestListFiltersAndTranscriptSearch: the conversation list shows what
// people disagree with the judge on, unverified verdicts, split panels,
// unlabelled or labelled rows, and finds words in the transcripts.
func TestListFiltersAndTranscriptSearch(t *testing.T) {
	project, bench := miniProject(t)
	// ana says the opposite of the judge on one row, agrees on another.
	ix := loadIndex("mini", bench, report.Settings{}, time.Now())
	var lines []string
	for i, c := range ix.convs[:2] {
		p := *c.present
		if i == 0 {
			p = !p
		}
		lines = append(lines, fmt.Sprintf(`{"conv_id":%q,"metric_id":%q,"present":%v,"labeler":"ana","note":"","at":"2026-01-01T00:00:00Z"}`, c.convID, c.metric, p))
	}
	must(t, os.WriteFile(filepath.Join(bench, "labels.jsonl"), []byte(strings.Join(lines, "\n")+"\n"), 0o644))
	_, base := StartForTest(t, Options{ProjectDir: project})
	count := func(q string) (int, []listRow) {
		t.Helper()
		code, body := do(t, base, req{"GET", "/api/b/mini/convs?" + q, "", nil})
		if code != 200 {
			t.Fatalf("%s: %d %s", q, code, body)
		}
		var r struct {
			Matched int       `json:"matched"`
			Rows    []listRow `json:"rows"`
		}
		decodeInto(t, body, &r)
		return r.Matched, r.Rows
	}
	if n, rows := count("show=disagree"); n != 1 || rows[0].ConvID != ix.convs[0].convID || rows[0].Human == "" {
		t.Errorf("disagree: %d %+v", n, rows)
	}
	if n, _ := count("show=labelled"); n != 2 {
		t.Errorf("labelled: %d", n)
	}
	if n, _ := count("show=unlabelled"); n != len(ix.convs)-2 {
		t.Errorf("unlabelled: %d of %d", n, len(ix.convs))
	}
	split := 0
	for _, c := range ix.convs {
		if judgesSplit(c.judges) {
			split++
		}
	}
	if n, _ := count("show=split"); n != split || split == 0 {
		t.Errorf("split: %d, want %d", n, split)
	}
	if n, _ := count("show=unverified"); n != 0 {
		t.Errorf("unverified: %d (the fixture has none)", n)
	}
	// The XSS payload is in one transcript only; "User turn 1:" in every one.
	if n, rows := count("text=" + url.QueryEscape("window.__xss=1</script>")); n != 1 || rows[0].ConvID != "m01_s001_v01__alpha__s0" {
		t.Errorf("transcript search for the payload: %d %+v", n, rows)
	}
	if n, _ := count("text=user+TURN+1%3A"); n != len(ix.convs) {
		t.Errorf("transcript search, case-insensitive: %d of %d", n, len(ix.convs))
	}
	if code, _ := do(t, base, req{"GET", "/api/b/mini/convs?show=nonsense", "", nil}); code != 400 {
		t.Errorf("bad show: %d", code)
	}
}

// TestABadFieldTypeIsNamedInTheRequestsWords: a request with a field of
// the wrong JSON type is answered with the field and what it wants, not
// Go's "cannot unmarshal … into Go struct field studyLabel.present".
func TestABadFieldTypeIsNamedInTheRequestsWords(t *testing.T) {
	for _, c := range []struct{ body, want string }{
		{`{"item":"r1","present":"yes"}`, "present: want true or false, got a JSON string"},
		{`{"item":7,"present":true}`, "item: want a string, got a JSON number"},
		{`{"item":"r1","present":true,"note":[]}`, "note: want a string, got a JSON array"},
	} {
		var v studyLabel
		r := httptest.NewRequest("POST", "/api/label", strings.NewReader(c.body))
		if err := decodeStrict(r, &v); err == nil || err.Error() != c.want {
			t.Errorf("%s: %v, want %q", c.body, err, c.want)
		}
	}
}
