package labels

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/impactbench/impactbench/internal/layout"
)

var known = Known{Conversations: map[string]string{
	"m01_s001_v01__a__s0": "m01",
	"m01_s001_v02__a__s0": "m01",
	"m02_s001__a__s0":     "m02",
}}

const good = `{"conv_id": "m01_s001_v01__a__s0", "metric_id": "m01", "present": true, "labeler": "ana", "note": "", "at": "2025-05-01T12:00:00Z"}`

func TestReadAcceptsHandWrittenLines(t *testing.T) {
	path := filepath.Join(t.TempDir(), layout.LabelsFile)
	content := good + "\n\n" +
		// keys in any order, no note, fractional seconds and an offset, no final newline
		`{"at":"2025-05-01T14:00:00.5+02:00","labeler":"bo","present":false,"metric_id":"m02","conv_id":"m02_s001__a__s0"}`
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	ls, err := Read(path, known)
	if err != nil {
		t.Fatal(err)
	}
	if len(ls) != 2 || ls[0].Line != 1 || ls[1].Line != 3 || ls[1].Present || ls[1].Labeler != "bo" {
		t.Fatalf("labels = %+v", ls)
	}
	if want := time.Date(2025, 5, 1, 12, 0, 0, 5e8, time.UTC); !ls[1].At.Equal(want) {
		t.Errorf("at = %v, want %v", ls[1].At, want)
	}
}

// TestAfterRevealRoundTrip: a label given after the verdict was shown
// carries "after_reveal": true, last; a blind one does not carry the key.
func TestAfterRevealRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), layout.LabelsFile)
	at := time.Date(2025, 5, 1, 12, 0, 0, 0, time.UTC)
	blind := Label{ConvID: "m01_s001_v01__a__s0", MetricID: "m01", Present: true, Labeler: "ana", At: at}
	late := blind
	late.Present, late.AfterReveal = false, true
	for _, l := range []Label{blind, late} {
		if err := Append(path, l, known); err != nil {
			t.Fatal(err)
		}
	}
	b, _ := os.ReadFile(path)
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) != 2 || strings.Contains(lines[0], "after_reveal") || !strings.HasSuffix(lines[1], `, "after_reveal": true}`) {
		t.Fatalf("file:\n%s", b)
	}
	ls, err := Read(path, known)
	if err != nil || len(ls) != 2 || ls[0].AfterReveal || !ls[1].AfterReveal {
		t.Fatalf("read back %+v, %v", ls, err)
	}
}

// TestVerdictShownRoundTrip: "verdict_shown" (whether the viewer had shown
// the labeller the judges' verdict) reads back as written, true or false,
// last; a line without it — by hand, or from before the key — reads as not
// recorded, and is written back, and appended, byte for byte as it was.
func TestVerdictShownRoundTrip(t *testing.T) {
	digest := strings.Repeat("c", 64)
	yes, no := true, false
	cases := []struct {
		name string
		line string
		want *bool
	}{
		{"not recorded", good, nil},
		{"not recorded, with a digest and after_reveal", strings.Replace(good, `}`, `, "transcript_sha256": "`+digest+`", "after_reveal": true}`, 1), nil},
		{"shown", strings.Replace(good, `}`, `, "verdict_shown": true}`, 1), &yes},
		{"not shown", strings.Replace(good, `}`, `, "verdict_shown": false}`, 1), &no},
		{"shown, with a digest and after_reveal", strings.Replace(good, `}`, `, "transcript_sha256": "`+digest+`", "after_reveal": true, "verdict_shown": true}`, 1), &yes},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), layout.LabelsFile)
			if err := os.WriteFile(path, []byte(tc.line+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			ls, err := Read(path, known)
			if err != nil || len(ls) != 1 {
				t.Fatalf("Read: %v, %v", ls, err)
			}
			if got := ls[0].VerdictShown; (got == nil) != (tc.want == nil) || got != nil && *got != *tc.want {
				t.Errorf("VerdictShown = %v, want %v", got, tc.want)
			}
			if b, err := ls[0].MarshalJSON(); err != nil || string(b) != tc.line {
				t.Errorf("written back as\n%s\nwant\n%s", b, tc.line)
			}
			again := filepath.Join(t.TempDir(), layout.LabelsFile)
			if err := Append(again, ls[0], known); err != nil {
				t.Fatal(err)
			}
			if b, _ := os.ReadFile(again); string(b) != tc.line+"\n" {
				t.Errorf("appended as\n%s\nwant\n%s", b, tc.line)
			}
		})
	}
}

// TestTranscriptDigestRoundTripAndStale: a label written with the digest
// of the transcript its labeller read carries "transcript_sha256" (before
// after_reveal), reads back with it, and is Stale exactly when Known holds
// another digest for its conversation; a line without a digest never is.
func TestTranscriptDigestRoundTripAndStale(t *testing.T) {
	path := filepath.Join(t.TempDir(), layout.LabelsFile)
	at := time.Date(2025, 5, 1, 12, 0, 0, 0, time.UTC)
	now, old := strings.Repeat("a", 64), strings.Repeat("b", 64)
	fresh := Label{ConvID: "m01_s001_v01__a__s0", MetricID: "m01", Present: true, Labeler: "ana", At: at, Transcript: now}
	gone := Label{ConvID: "m01_s001_v02__a__s0", MetricID: "m01", Labeler: "ana", At: at, Transcript: old, AfterReveal: true}
	bare := Label{ConvID: "m01_s001_v02__a__s0", MetricID: "m01", Labeler: "bo", At: at}
	for _, l := range []Label{fresh, gone, bare} {
		if err := Append(path, l, known); err != nil {
			t.Fatal(err)
		}
	}
	b, _ := os.ReadFile(path)
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) != 3 || !strings.HasSuffix(lines[0], `, "transcript_sha256": "`+now+`"}`) ||
		!strings.HasSuffix(lines[1], `, "transcript_sha256": "`+old+`", "after_reveal": true}`) || strings.Contains(lines[2], "transcript_sha256") {
		t.Fatalf("file:\n%s", b)
	}
	k := known
	k.Transcripts = map[string]string{"m01_s001_v01__a__s0": now, "m01_s001_v02__a__s0": now}
	ls, err := Read(path, k)
	if err != nil || len(ls) != 3 || ls[0].Transcript != now || ls[1].Transcript != old || ls[2].Transcript != "" {
		t.Fatalf("read back %+v, %v", ls, err)
	}
	if ls[0].Stale || !ls[1].Stale || ls[2].Stale {
		t.Errorf("stale: %v %v %v, want false true false", ls[0].Stale, ls[1].Stale, ls[2].Stale)
	}
	if ls, _ := Read(path, known); ls[1].Stale {
		t.Error("stale without the transcripts' digests")
	}
}

func TestReadMissingFileIsNoLabels(t *testing.T) {
	ls, err := Read(filepath.Join(t.TempDir(), "nope.jsonl"), known)
	if err != nil || ls != nil {
		t.Fatalf("Read = %v, %v", ls, err)
	}
}

func TestReadBadLinesNameLineAndField(t *testing.T) {
	tests := []struct {
		name, line, field, msg string
	}{
		{"non-JSON", `conv_id,metric_id,present`, "", "not a JSON object"},
		{"JSON array", `["m01"]`, "", "not a JSON object"},
		{"unknown conversation", strings.Replace(good, "v01__a", "v09__a", 1), "conv_id", "unknown conversation"},
		{"wrong metric", strings.Replace(good, `"metric_id": "m01"`, `"metric_id": "m02"`, 1), "metric_id", "not the metric"},
		{"present as string", strings.Replace(good, `"present": true`, `"present": "yes"`, 1), "present", "want true or false"},
		{"present as number", strings.Replace(good, `"present": true`, `"present": 1`, 1), "present", "want true or false"},
		{"present null", strings.Replace(good, `"present": true`, `"present": null`, 1), "present", "want true or false"},
		{"present missing", strings.Replace(good, `"present": true, `, ``, 1), "present", "missing"},
		{"labeler missing", strings.Replace(good, `"labeler": "ana", `, ``, 1), "labeler", "missing"},
		{"labeler empty", strings.Replace(good, `"labeler": "ana"`, `"labeler": " "`, 1), "labeler", "empty"},
		{"conv_id number", strings.Replace(good, `"m01_s001_v01__a__s0"`, `17`, 1), "conv_id", "want a string"},
		{"note number", strings.Replace(good, `"note": ""`, `"note": 3`, 1), "note", "want a string"},
		{"bad time", strings.Replace(good, `2025-05-01T12:00:00Z`, `1 May 2025`, 1), "at", "RFC 3339"},
		{"time missing", strings.Replace(good, `, "at": "2025-05-01T12:00:00Z"`, ``, 1), "at", "missing"},
		{"typo key", strings.Replace(good, `"note"`, `"notes"`, 1), "notes", "unknown field"},
		{"duplicate key", strings.Replace(good, `"present": true`, `"present": true, "present": false`, 1), "", "appears twice"},
		{"trailing data", good + ` {"x": 1}`, "", "data after the JSON object"},
		{"after_reveal as string", strings.Replace(good, `}`, `, "after_reveal": "yes"}`, 1), "after_reveal", "want true or false"},
		{"verdict_shown as string", strings.Replace(good, `}`, `, "verdict_shown": "yes"}`, 1), "verdict_shown", "want true or false"},
		{"verdict_shown null", strings.Replace(good, `}`, `, "verdict_shown": null}`, 1), "verdict_shown", "want true or false"},
		{"transcript_sha256 short", strings.Replace(good, `}`, `, "transcript_sha256": "abc"}`, 1), "transcript_sha256", "64 lowercase hexadecimal"},
		{"transcript_sha256 upper case", strings.Replace(good, `}`, `, "transcript_sha256": "`+strings.Repeat("A", 64)+`"}`, 1), "transcript_sha256", "64 lowercase hexadecimal"},
		{"transcript_sha256 null", strings.Replace(good, `}`, `, "transcript_sha256": null}`, 1), "transcript_sha256", "want a string"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), layout.LabelsFile)
			if err := os.WriteFile(path, []byte(good+"\n"+tt.line+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			_, err := Read(path, known)
			var le *Error
			if !errors.As(err, &le) || len(le.Lines) != 1 {
				t.Fatalf("err = %v, want one bad line", err)
			}
			got := le.Lines[0]
			if got.Line != 2 || got.Field != tt.field || !strings.Contains(got.Msg, tt.msg) {
				t.Errorf("got line %d field %q msg %q; want line 2 field %q msg ~%q", got.Line, got.Field, got.Msg, tt.field, tt.msg)
			}
			if !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "line 2") {
				t.Errorf("message %q does not name file and line", err)
			}
		})
	}
}

func TestReadReportsTornLastLine(t *testing.T) {
	path := filepath.Join(t.TempDir(), layout.LabelsFile)
	if err := os.WriteFile(path, []byte(good+"\n"+good[:40]), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := Read(path, known)
	if err == nil || !strings.Contains(err.Error(), "line 2: incomplete last line") {
		t.Fatalf("err = %v", err)
	}
}

func TestAppendWritesOneLineAndReadsBack(t *testing.T) {
	path := filepath.Join(t.TempDir(), layout.LabelsFile)
	at := time.Date(2025, 5, 2, 9, 30, 0, 0, time.UTC)
	for i, l := range []Label{
		{ConvID: "m01_s001_v01__a__s0", MetricID: "m01", Present: true, Labeler: "ana", Note: "quotes \" and\nnewline", At: at},
		{ConvID: "m01_s001_v01__a__s0", MetricID: "m01", Present: false, Labeler: "bo"},
	} {
		if err := Append(path, l, known); err != nil {
			t.Fatalf("append %d: %v", i, err)
		}
	}
	data, _ := os.ReadFile(path)
	lines := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	if len(lines) != 2 {
		t.Fatalf("file has %d lines:\n%s", len(lines), data)
	}
	want := `{"conv_id": "m01_s001_v01__a__s0", "metric_id": "m01", "present": true, "labeler": "ana", "note": "quotes \" and\nnewline", "at": "2025-05-02T09:30:00Z"}`
	if lines[0] != want {
		t.Errorf("line 1 =\n%s\nwant\n%s", lines[0], want)
	}
	ls, err := Read(path, known)
	if err != nil || len(ls) != 2 || ls[0].Note != "quotes \" and\nnewline" || ls[1].At.IsZero() {
		t.Fatalf("Read = %+v, %v", ls, err)
	}
}

func TestAppendRefusesBadLabelAndLeavesFileAlone(t *testing.T) {
	path := filepath.Join(t.TempDir(), layout.LabelsFile)
	if err := os.WriteFile(path, []byte(good+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name  string
		l     Label
		field string
	}{
		{"unknown conv", Label{ConvID: "zzz", MetricID: "m01", Labeler: "ana"}, "conv_id"},
		{"no labeler", Label{ConvID: "m01_s001_v01__a__s0", MetricID: "m01"}, "labeler"},
		{"wrong metric", Label{ConvID: "m01_s001_v01__a__s0", MetricID: "m02", Labeler: "ana"}, "metric_id"},
	}
	for _, tt := range tests {
		err := Append(path, tt.l, known)
		if err == nil || !strings.Contains(err.Error(), `field "`+tt.field+`"`) {
			t.Errorf("%s: err = %v, want field %s", tt.name, err, tt.field)
		}
	}
	if data, _ := os.ReadFile(path); string(data) != good+"\n" {
		t.Errorf("file changed:\n%s", data)
	}
}

func TestAppendAfterHandWrittenLastLine(t *testing.T) {
	tests := []struct {
		name    string
		content string
		wantErr bool
	}{
		{"whole line without newline", good, false},
		{"torn line", good + "\n" + good[:30], true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), layout.LabelsFile)
			if err := os.WriteFile(path, []byte(tt.content), 0o644); err != nil {
				t.Fatal(err)
			}
			err := Append(path, Label{ConvID: "m02_s001__a__s0", MetricID: "m02", Labeler: "cy"}, known)
			data, _ := os.ReadFile(path)
			if tt.wantErr {
				if err == nil || !strings.Contains(err.Error(), "incomplete") {
					t.Fatalf("err = %v, want incomplete last line", err)
				}
				if string(data) != tt.content {
					t.Fatal("a refused append changed the file")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !strings.HasPrefix(string(data), tt.content+"\n{") {
				t.Fatalf("file =\n%s", data)
			}
			if ls, err := Read(path, known); err != nil || len(ls) != 2 {
				t.Fatalf("Read = %v, %v", ls, err)
			}
		})
	}
}

func TestConcurrentAppendsNeverInterleave(t *testing.T) {
	path := filepath.Join(t.TempDir(), layout.LabelsFile)
	const n = 64
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			note := strings.Repeat(fmt.Sprint(i%10), 3000) // long lines, to catch torn writes
			if err := Append(path, Label{ConvID: "m01_s001_v02__a__s0", MetricID: "m01", Labeler: fmt.Sprint("l", i), Note: note}, known); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	ls, err := Read(path, known)
	if err != nil || len(ls) != n {
		t.Fatalf("Read: %d labels, %v", len(ls), err)
	}
}

func TestConsensusesLatestPerLabelerThenMajority(t *testing.T) {
	k1, k2 := Key{"c1", "m01"}, Key{"c2", "m01"}
	ls := []Label{
		{ConvID: "c1", MetricID: "m01", Labeler: "ana", Present: false},
		{ConvID: "c1", MetricID: "m01", Labeler: "bo", Present: true},
		{ConvID: "c1", MetricID: "m01", Labeler: "ana", Present: true}, // ana changes her mind
		{ConvID: "c2", MetricID: "m01", Labeler: "ana", Present: true},
		{ConvID: "c2", MetricID: "m01", Labeler: "bo", Present: false},
	}
	cs := Consensuses(ls)
	if len(cs) != 2 || cs[0].Key != k1 || cs[1].Key != k2 {
		t.Fatalf("keys = %+v", cs)
	}
	if cs[0].Present == nil || !*cs[0].Present || len(cs[0].Votes) != 2 {
		t.Errorf("c1 = %+v, want present by 2 votes", cs[0])
	}
	if cs[1].Present != nil {
		t.Errorf("c2 tie = %v, want nil", *cs[1].Present)
	}
}
