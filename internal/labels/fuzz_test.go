package labels

import (
	"bytes"
	"encoding/json"
	"errors"
	"testing"
	"time"
	"unicode/utf8"
)

// labels.jsonl is written by people (by hand, from a spreadsheet) as well
// as by the viewer, fuzzed. Seeds: the lines of labels_test.go and
// testdata/fuzz/FuzzParse/, which holds every regression the fuzzer found.
// Properties: no input panics; a non-blank line that is not UTF-8 JSON is
// an error naming its line, never a label; and the labels read, written
// back as the viewer writes them, read as the same labels.
func FuzzParse(f *testing.F) {
	good := `{"conv_id": "m01_s001_v01__gpt-4o__s0", "metric_id": "m01", "present": true, "labeler": "ana", "note": "", "at": "2025-05-01T12:00:00Z"}`
	for _, s := range []string{
		"", "\n", good + "\n", good, good + "\n\n  \n" + good + "\n",
		`{"conv_id": "c", "metric_id": "m", "present": "yes", "labeler": "a", "at": "2025-05-01T12:00:00Z"}` + "\n",
		`{"conv_id": "c", "metric_id": "m", "present": false, "labeler": "a", "note": "é \u2028 \"q\"", "at": "2025-05-01T12:00:00.123456789+02:00"}` + "\n",
		`{"conv_id": "c", "metric_id": "m", "present": true, "labeler": "a", "at": "2025-05-01T12:00:00Z", "extra": 1}` + "\n",
		`{"conv_id": null, "metric_id": "m", "present": true, "labeler": "a", "at": "yesterday"}` + "\n",
		`{"conv_id": "c", "metric_id": "m", "present": true, "labeler": "a", "note": "", "at": "2025-05-01T12:00:00Z", "after_reveal": true, "verdict_shown": false}` + "\n",
		"not json\n", "[]\n", "{}\n", `{"conv_id": "c"` + "\n",
		"{\"conv_id\": \"c\xff\", \"metric_id\": \"m\", \"present\": true, \"labeler\": \"a\", \"at\": \"2025-05-01T12:00:00Z\"}\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		ls, err := parse("labels.jsonl", bytes.NewReader(data), Known{})
		if err != nil {
			var le *Error
			if !errors.As(err, &le) || le.Path != "labels.jsonl" || len(le.Lines) == 0 {
				t.Fatalf("error does not name the file and a line: %T %v", err, err)
			}
			for _, l := range le.Lines {
				if l.Line < 1 {
					t.Fatalf("error names line %d", l.Line)
				}
			}
			return
		}
		for i, line := range bytes.Split(data, []byte("\n")) {
			if len(bytes.TrimSpace(line)) > 0 && (!utf8.Valid(line) || !json.Valid(line)) {
				t.Fatalf("line %d is not UTF-8 JSON, yet read as a label: %q", i+1, line)
			}
		}
		var out bytes.Buffer
		for _, l := range ls {
			if l.Line < 1 {
				t.Fatalf("label without its line: %+v", l)
			}
			b, err := l.MarshalJSON()
			if err != nil {
				t.Fatalf("label read cannot be written: %v", err)
			}
			out.Write(b)
			out.WriteByte('\n')
		}
		again, err := parse("labels.jsonl", bytes.NewReader(out.Bytes()), Known{})
		if err != nil {
			t.Fatalf("labels written back do not read: %v\n%s", err, out.Bytes())
		}
		if len(again) != len(ls) {
			t.Fatalf("%d labels became %d", len(ls), len(again))
		}
		for i := range ls {
			a, b := ls[i], again[i]
			if a.ConvID != b.ConvID || a.MetricID != b.MetricID || a.Present != b.Present || a.Labeler != b.Labeler ||
				a.Note != b.Note || !a.At.Equal(b.At) || a.At.Format(time.RFC3339Nano) != b.At.Format(time.RFC3339Nano) ||
				a.AfterReveal != b.AfterReveal || (a.VerdictShown == nil) != (b.VerdictShown == nil) || a.VerdictShown != nil && *a.VerdictShown != *b.VerdictShown {
				t.Fatalf("label %d changed through write and read:\n%+v\n%+v", i, a, b)
			}
		}
	})
}
