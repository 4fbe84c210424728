package artifacts

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"unicode/utf8"
)

// The readers of the files a user may edit or receive (scenarios.json,
// conversations.json, scores.json), fuzzed. Seeds: the real files under
// testdata and ../export/testdata, and testdata/fuzz/<Fuzz…>/, which holds
// the files of cmd/impactbench's bad-input corpus (written there by
// `go test ./cmd/impactbench -run TestWriteFuzzSeeds -write-fuzz-seeds`)
// and every regression the fuzzers found. Properties:
//   - no input panics;
//   - what is not UTF-8 or not JSON is an error, never rows;
//   - rows read can be written, and what is written reads back as rows that
//     write the same bytes (nothing read is lost, invented or unwritable).

func addFileSeeds(f *testing.F, paths ...string) {
	f.Helper()
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
}

// fuzzRows runs one reader on data, then writes what it read (with the
// writers' encoder, MarshalPy, in memory: the atomic writers' fsyncs would
// slow the fuzzer a hundredfold) and reads that back.
// dir is the fuzzer's own directory (fuzzDir), reused by every input.
func fuzzRows[T any](t *testing.T, dir string, data []byte, read func(string) ([]T, error)) {
	in := filepath.Join(dir, "in.json")
	if err := os.WriteFile(in, data, 0o644); err != nil {
		t.Fatal(err)
	}
	rows, err := read(in)
	if err != nil {
		var fe *FileError
		if !errors.As(err, &fe) {
			t.Fatalf("error is not a *FileError naming the file: %T %v", err, err)
		}
		return
	}
	if !utf8.Valid(data) || !json.Valid(data) {
		t.Fatalf("accepted input that is not UTF-8 JSON: %d rows from %q", len(rows), data)
	}
	once, err := MarshalPy(normRows(rows))
	if err != nil {
		t.Fatalf("rows read cannot be written: %v", err)
	}
	if err := os.WriteFile(in, once, 0o644); err != nil {
		t.Fatal(err)
	}
	again, err := read(in)
	if err != nil {
		t.Fatalf("rows written cannot be read back: %v\n%s", err, once)
	}
	twice, err := MarshalPy(normRows(again))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(once, twice) {
		t.Fatalf("rows changed through write and read:\n%s\n%s", once, twice)
	}
}

// fuzzDir is a directory for one fuzz target's inputs, made once per
// process: a new one per input would cost more than the reading.
func fuzzDir(f *testing.F) string {
	dir := filepath.Join(f.TempDir(), "target") // conversations: the directory names the target
	if err := os.Mkdir(dir, 0o755); err != nil {
		f.Fatal(err)
	}
	return dir
}

// normRows: no rows write as [], as the writers do.
func normRows[T any](rows []T) []T {
	if rows == nil {
		return []T{}
	}
	return rows
}

func FuzzReadScenarios(f *testing.F) {
	addFileSeeds(f, "testdata/humanebench/scenarios.json", "../export/testdata/fx/scenarios.json")
	f.Add([]byte(`[]`))
	f.Add([]byte(`[{"id": "m01_s001_v01", "metric_id": "m01", "persona": "p", "user_goal": "g", "latent_adversarial_goal": "l", "landmarks": [{"turn": 1, "instruction": "i"}], "demographic": {"age": "adult", "n": 3}, "x": [1, {"y": null}]}]`))
	dir := fuzzDir(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		fuzzRows(t, dir, data, ReadScenarios)
	})
}

func FuzzReadConversations(f *testing.F) {
	addFileSeeds(f, "../export/testdata/fx/runs/t1/conversations.json", "../export/testdata/fx/runs/t2/conversations.json")
	f.Add([]byte(`[{"id": "m01_s001_v01", "metric_id": "m01", "conv_id": "m01_s001_v01__target__s0", "_sample": 0, "target_model": "target", "transcript": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello \"there\"\n"}], "_usage": {"cost": 0.001, "input_tokens": 3, "output_tokens": 4}, "status": "completed", "user_thoughts": ["t"]}]`))
	dir := fuzzDir(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		fuzzRows(t, dir, data, ReadConversations)
	})
}

func FuzzReadScores(f *testing.F) {
	addFileSeeds(f, "../export/testdata/fx/runs/t1/scores.json", "../export/testdata/fx/runs/t2/scores.json",
		"../export/testdata/fx/runs/t1/judges/jc/scores.json")
	f.Add([]byte(`[{"id": "m01_s001_v01", "metric_id": "m01", "conv_id": "m01_s001_v01__t__s0", "sample": 0, "present": true, "passed": false, "justification": "j", "evidence": [{"quote": "q", "message": 1}], "unverified": false}]`))
	dir := fuzzDir(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		fuzzRows(t, dir, data, ReadScores)
	})
}
