package viewer

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/impactbench/impactbench/internal/artifacts"
	"github.com/impactbench/impactbench/internal/labels"
	"github.com/impactbench/impactbench/internal/layout"
)

// keysInOrder returns a JSON object's keys in file order.
func keysInOrder(t *testing.T, line []byte) []string {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(line))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		t.Fatalf("not an object: %s", line)
	}
	var keys []string
	for dec.More() {
		k, err := dec.Token()
		if err != nil {
			t.Fatal(err)
		}
		keys = append(keys, k.(string))
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			t.Fatal(err)
		}
	}
	return keys
}

func TestFileLabelsConcurrentAppends(t *testing.T) {
	path := filepath.Join(t.TempDir(), "labels.jsonl")
	// Two stores on one file, as two viewers (or a viewer and a script) would be.
	stores := []*FileLabels{{Path: path}, {Path: path}}
	at := time.Date(2026, 3, 4, 5, 6, 7, 891, time.FixedZone("x", 3600))
	var wg sync.WaitGroup
	const n = 16
	for i := range n {
		wg.Go(func() {
			l := Label{ConvID: fmt.Sprintf("c%02d", i), MetricID: "m01", Present: i%2 == 0, Labeler: "ana",
				Note: strings.Repeat("n", 3000) + " \"quoted\" \n newline", At: at}
			if err := stores[i%2].Append(l); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	b, err := os.ReadFile(path)
	must(t, err)
	lines := bytes.Split(bytes.TrimSuffix(b, []byte("\n")), []byte("\n"))
	if len(lines) != n {
		t.Fatalf("%d lines, want %d", len(lines), n)
	}
	for _, line := range lines {
		if got := strings.Join(keysInOrder(t, line), ","); got != "conv_id,metric_id,present,labeler,note,at" {
			t.Fatalf("keys %s", got)
		}
		var raw map[string]any
		must(t, json.Unmarshal(line, &raw))
		if raw["at"] != "2026-03-04T04:06:07Z" {
			t.Errorf("at = %v, want RFC 3339 UTC seconds", raw["at"])
		}
	}
	got, err := stores[0].List()
	must(t, err)
	if len(got) != n {
		t.Errorf("List: %d labels", len(got))
	}
}

func TestFileLabelsHandWrittenLastLine(t *testing.T) {
	path := filepath.Join(t.TempDir(), "labels.jsonl")
	hand := `{"conv_id":"x","metric_id":"m01","present":false,"labeler":"bo","note":"","at":"2026-01-01T00:00:00Z"}`
	must(t, os.WriteFile(path, []byte(hand), 0o644)) // no final newline
	s := &FileLabels{Path: path}
	must(t, s.Append(Label{ConvID: "y", MetricID: "m02", Present: true, Labeler: "ana", At: time.Now()}))
	got, err := s.List()
	must(t, err)
	if len(got) != 2 || got[0].ConvID != "x" || got[1].ConvID != "y" {
		t.Fatalf("labels %+v", got)
	}
	b, _ := os.ReadFile(path)
	if !bytes.HasPrefix(b, []byte(hand+"\n")) {
		t.Errorf("hand-written line changed: %q", b)
	}
}

func TestFileLabelsRejectsBadLabels(t *testing.T) {
	path := filepath.Join(t.TempDir(), "labels.jsonl")
	s := &FileLabels{Path: path}
	good := Label{ConvID: "c", MetricID: "m01", Labeler: "ana", At: time.Now()}
	for name, mut := range map[string]func(*Label){
		"no labeler":   func(l *Label) { l.Labeler = "  " },
		"no conv":      func(l *Label) { l.ConvID = "" },
		"no metric":    func(l *Label) { l.MetricID = "" },
		"long note":    func(l *Label) { l.Note = strings.Repeat("x", maxNoteLen+1) },
		"control char": func(l *Label) { l.Labeler = "a\nb" },
		"bad utf8":     func(l *Label) { l.Note = "\xff" },
	} {
		l := good
		mut(&l)
		if err := s.Append(l); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Errorf("rejected labels created the file: %v", err)
	}
}

func TestReadLabelsNamesBadLine(t *testing.T) {
	path := filepath.Join(t.TempDir(), "labels.jsonl")
	in := `{"conv_id":"x","metric_id":"m01","present":false,"labeler":"bo","note":"","at":"2026-01-01T00:00:00Z"}` + "\n\n" +
		`{"conv_id":"y","present":"yes"}` + "\n"
	if err := os.WriteFile(path, []byte(in), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := (&FileLabels{Path: path}).List()
	if err == nil || !strings.Contains(err.Error(), "line 3") {
		t.Fatalf("err = %v, want one naming line 3", err)
	}
}

// TestALabelOnAConversationRunAgainCountsAsNone: a label records the
// digest of the transcript its labeller read; once the conversation is run
// again (another transcript under the same conv_id) the label no longer
// counts — not in the labeller's own labels, not in the plan — and the
// queue asks for the row again. Before, the row stayed labelled with a
// verdict on a transcript that no longer exists.
func TestALabelOnAConversationRunAgainCountsAsNone(t *testing.T) {
	project := filepath.Join(t.TempDir(), "project")
	dir, _ := WriteSynth(t, project, SynthSpec{Name: "tiny", Metrics: 1, ScensPerMetric: 2, Targets: []string{"t1"}, Samples: 1, Msgs: 2, MsgLen: 60, Judges: 1})
	s, base := StartForTest(t, Options{ProjectDir: project, Reviewers: []string{"ana", "bo"}, Seed: 5, Overlap: 0, OverlapSet: true})
	ana, bo := teamHeaders(base, tokenOf(t, s, "ana")), teamHeaders(base, tokenOf(t, s, "bo"))
	var items []string
	for n := getAs[nextAnswer](t, base, "/api/next", ana); n.Item != nil; n = getAs[nextAnswer](t, base, "/api/next", ana) {
		if code, body := do(t, base, req{"POST", "/api/label", `{"item":"` + *n.Item + `","present":true}`, ana}); code != 201 {
			t.Fatalf("label: %d %s", code, body)
		}
		items = append(items, *n.Item)
	}
	if len(items) != 2 {
		t.Fatalf("fixture: ana labelled %d items, want both", len(items))
	}
	if n := getAs[nextAnswer](t, base, "/api/next", bo); n.Item != nil {
		t.Fatalf("fixture: bo is asked for %s though both rows are labelled", *n.Item)
	}
	// Every line names the transcript ana read.
	convPath := filepath.Join(dir, "runs", "t1", "conversations.json")
	var convs []artifacts.Conversation
	raw, err := os.ReadFile(convPath)
	must(t, err)
	must(t, json.Unmarshal(raw, &convs))
	digest := map[string]string{}
	for _, c := range convs {
		digest[c.ConvID] = artifacts.TranscriptDigest(c.Transcript)
	}
	ls, err := labels.Read(layout.Bench{Dir: dir}.Labels(), labels.Known{})
	must(t, err)
	for _, l := range ls {
		if l.Transcript != digest[l.ConvID] {
			t.Errorf("label on %s records transcript %q, want %q", l.ConvID, l.Transcript, digest[l.ConvID])
		}
	}
	// The first conversation is run again: its assistant says otherwise.
	var rows []map[string]any
	must(t, json.Unmarshal(raw, &rows))
	tr := rows[0]["transcript"].([]any)
	tr[len(tr)-1].(map[string]any)["content"] = "an answer nobody labelled"
	writeJSONFile(t, convPath, rows)
	time.Sleep(staleCheck + 50*time.Millisecond)
	ix := s.bench("tiny").index(s)
	rerun := reviewQueue{s}.itemOfConv(ix, ix.byConvID[convs[0].ConvID])
	type mine struct {
		Labels []mineRow `json:"labels"`
		Notes  []string  `json:"notes"`
	}
	m := getAs[mine](t, base, "/api/mine", ana)
	if len(m.Labels) != 1 || m.Labels[0].Item == rerun {
		t.Errorf("ana's labels after the rerun: %+v, want only the one on %s", m.Labels, other(items, rerun))
	}
	// She is told why one is missing, and what happens to it.
	if len(m.Notes) != 1 || !strings.HasPrefix(m.Notes[0], "1 of your labels are not listed: their conversations were run again") {
		t.Errorf("ana's notes %q: want one saying a label is not listed because its conversation was run again", m.Notes)
	}
	if n := getAs[nextAnswer](t, base, "/api/next", bo); n.Item == nil || *n.Item != rerun {
		t.Errorf("bo's next after the rerun: %v, want the conversation run again (%s)", n.Item, rerun)
	}
}

// other is the item of two that is not x.
func other(items []string, x string) string {
	for _, it := range items {
		if it != x {
			return it
		}
	}
	return ""
}

// TestALabelWithoutAnItemSaysSo: a label sent to the study's queue without
// its item is told the item is missing, not that the viewer restarted.
func TestALabelWithoutAnItemSaysSo(t *testing.T) {
	project := filepath.Join(t.TempDir(), "project")
	WriteSynth(t, project, SynthSpec{Name: "tiny", Metrics: 1, ScensPerMetric: 2, Targets: []string{"t1"}, Samples: 1, Msgs: 2, MsgLen: 60, Judges: 1})
	s, base := StartForTest(t, Options{ProjectDir: project, Reviewers: []string{"ana"}, Seed: 5})
	ana := teamHeaders(base, tokenOf(t, s, "ana"))
	code, body := do(t, base, req{"POST", "/api/label", `{"present":true}`, ana})
	if code != 400 || !strings.Contains(body, "item is required") || strings.Contains(body, "restarted") {
		t.Errorf("a label without its item: %d %s", code, body)
	}
}
