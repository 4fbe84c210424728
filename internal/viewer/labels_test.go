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
