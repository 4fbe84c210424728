package report

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/impactbench/impactbench/internal/artifacts"
)

// loadFull is Load holding every row whole in memory: the reference the
// streaming path (rows kept without their bulk, bulk read back per chunk)
// must reproduce byte for byte.
func loadFull(t *testing.T, dir string) Input {
	t.Helper()
	in, err := Load(dir, Settings{Generated: fixedTime})
	if err != nil {
		t.Fatal(err)
	}
	in.scenarioFile = ""
	if in.Scenarios != nil {
		if in.Scenarios, _, err = readArray[Scenario](filepath.Join(dir, "scenarios.json")); err != nil {
			t.Fatal(err)
		}
	}
	for i := range in.Runs {
		run := &in.Runs[i]
		if run.convSrc != nil && run.Conversations != nil {
			if run.Conversations, _, err = readArray[artifacts.Conversation](run.convSrc.path); err != nil {
				t.Fatal(err)
			}
		}
		if run.scoreSrc != nil && run.Scores != nil {
			if run.Scores, _, err = readArray[artifacts.Score](run.scoreSrc.path); err != nil {
				t.Fatal(err)
			}
		}
		run.convSrc, run.scoreSrc = nil, nil
	}
	return in
}

// streamedDir is a synthetic run that crosses chunk boundaries (480
// conversations over 2 targets, 240 scenarios) and has the odd rows the
// store must place right: conversations whose
// scenario is missing from scenarios.json (stubs), a score row without
// conv_id, and a run without scores.json.
func streamedDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	sp := synthSpec{Targets: []string{"model-a", "model-b"}, Care: []float64{0.7, 0.4},
		Metrics: 10, Bases: 3, Samples: 1, Turns: 2, UserLen: 60, AsstLen: 120, Seed: 3,
		Axes: [][2]any{{"age", []string{"young", "old"}}, {"gender", []string{"f", "m", "x", "u"}}}}
	writeSynth(t, dir, sp)
	scens, _, err := readArray[map[string]any](filepath.Join(dir, "scenarios.json"))
	if err != nil {
		t.Fatal(err)
	}
	// (A duplicated scenario id used to be placed here too; it is now
	// refused as bad input, see TestLoadRefusesDamagedFiles.)
	writeJSON(t, filepath.Join(dir, "scenarios.json"), scens)

	convPath := filepath.Join(dir, "runs", "model-b", "conversations.json")
	convs, _, err := readArray[artifacts.Conversation](convPath)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		c := convs[i]
		c.ID = "m99_s00" + string(rune('1'+i)) + "_v01"
		c.ConvID = artifacts.ConvID(c.ID, "model-b", 0)
		c.Validity = &artifacts.Validity{Valid: ptr(false), Reason: "skipped landmark 2"}
		convs = append(convs, c)
	}
	writeJSON(t, convPath, convs)
	scorePath := filepath.Join(dir, "runs", "model-b", "scores.json")
	scores, _, err := readArray[artifacts.Score](scorePath)
	if err != nil {
		t.Fatal(err)
	}
	// An upstream-style row: no conv_id (and none of our additions).
	scores[0].ConvID, scores[0].Usage, scores[0].NullReason, scores[0].Judges = "", nil, "", nil
	writeJSON(t, scorePath, scores)
	if err := os.Remove(filepath.Join(dir, "runs", "model-a", "scores.json")); err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestStreamedReportEqualsInMemoryReport(t *testing.T) {
	for name, dir := range map[string]string{
		"mini":        miniBench(t),
		"humanebench": "testdata/humanebench",
		"synthetic":   streamedDir(t),
	} {
		t.Run(name, func(t *testing.T) {
			lite, err := Load(dir, Settings{Generated: fixedTime})
			if err != nil {
				t.Fatal(err)
			}
			if len(lite.Notes) != 0 {
				t.Fatalf("notes: %v", lite.Notes)
			}
			for _, run := range lite.Runs {
				for _, c := range run.Conversations {
					if c.Transcript != nil {
						t.Fatal("Load kept a transcript in memory")
					}
				}
			}
			full := loadFull(t, dir)
			var a, b bytes.Buffer
			if err := build(context.Background(), &lite, &a, fixedTime); err != nil {
				t.Fatal(err)
			}
			if err := build(context.Background(), &full, &b, fixedTime); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(a.Bytes(), b.Bytes()) {
				t.Fatalf("streamed report (%d bytes) differs from the in-memory one (%d bytes)", a.Len(), b.Len())
			}
			if name == "synthetic" {
				html := a.String()
				if !strings.Contains(html, `id="ibc-4"`) || !strings.Contains(html, `id="ibs-1"`) {
					t.Error("the synthetic run should span 5 conversation and 2 scenario chunks")
				}
				var ch []scenRec
				inflateChunk(t, island(t, html, "ibs-1"), &ch)
				if n := len(ch); n != 43 || !ch[n-1].Stub || ch[n-4].Stub {
					t.Errorf("second scenario chunk: %d rows, want 40 real + 3 stubs", n)
				}
				for _, sc := range ch {
					if sc.Persona == "a later duplicate that must not show" {
						t.Error("the duplicate scenario row replaced the first")
					}
				}
			}
		})
	}
}

// A conversations.json rewritten between Load and Build (a run still
// writing) fails the build with the file's name; it never writes another
// row's transcript in its place.
func TestStreamedReportNoticesAChangedFile(t *testing.T) {
	dir := miniBench(t)
	in, err := Load(dir, Settings{Generated: fixedTime})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "runs", "alpha", "conversations.json")
	if err := os.WriteFile(path, []byte("[]"), 0o644); err != nil {
		t.Fatal(err)
	}
	err = Build(context.Background(), in, &bytes.Buffer{})
	if err == nil || !strings.Contains(err.Error(), path) {
		t.Fatalf("Build = %v, want an error naming %s", err, path)
	}
}

// A scenarios.json grown between Load and Build is streamed again no
// further than Load read it: a row made larger than the limits Load
// checked fails the build with the file's name instead of being read into
// memory whole, however large it is.
func TestStreamedReportReadsNoFurtherThanLoad(t *testing.T) {
	dir := miniBench(t)
	in, err := Load(dir, Settings{Generated: fixedTime})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "scenarios.json")
	var rows []map[string]any
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &rows); err != nil {
		t.Fatal(err)
	}
	rows[0]["persona"] = strings.Repeat("x", 2*artifacts.MaxFieldBytes)
	writeJSON(t, path, rows)
	err = Build(context.Background(), in, &bytes.Buffer{})
	if err == nil || !strings.Contains(err.Error(), path) {
		t.Fatalf("Build = %v, want an error naming %s", err, path)
	}
}
