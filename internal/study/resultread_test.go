package study

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"testing"

	"github.com/impactbench/impactbench/internal/artifacts"
)

func writeResult(t *testing.T, tail string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), ResultFile)
	r := &Result{Version: ResultVersion, Models: []ModelInfo{{ID: "m"}}}
	if err := r.WriteFile(p); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(p, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(tail); err != nil {
		t.Fatal(err)
	}
	return p
}

// A study.json with data after its object is refused naming the file, as
// json.Unmarshal refuses it; white space after it is not data.
func TestReadResultRefusesTrailingData(t *testing.T) {
	for _, tail := range []string{"", " \n\t\n"} {
		if r, err := ReadResult(writeResult(t, tail)); err != nil || len(r.Models) != 1 {
			t.Errorf("%q after the object: %v", tail, err)
		}
	}
	for _, tail := range []string{"[]", "{}", `{"version": 1}`, "garbage", "\x00"} {
		p := writeResult(t, tail)
		_, err := ReadResult(p)
		var fe *artifacts.FileError
		if !errors.As(err, &fe) || fe.Path != p || !strings.Contains(err.Error(), "after the JSON object") {
			t.Errorf("%q after the object: %v, want a *FileError naming the file and the data after the object", tail, err)
		}
	}
}

// A study.json padded far past its object (a sparse file: nothing is
// written) is refused without being read whole: over MaxResultBytes by
// its size, under it at the first byte after the object. Read whole, a
// study.json padded to 1 GiB took 2.2 GB.
func TestReadResultPaddedIsNotReadWhole(t *testing.T) {
	for _, size := range []int64{MaxResultBytes - 1, 1 << 30} {
		p := writeResult(t, "")
		if err := os.Truncate(p, size); err != nil {
			t.Skip(err)
		}
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		_, err := ReadResult(p)
		runtime.ReadMemStats(&after)
		var fe *artifacts.FileError
		if !errors.As(err, &fe) {
			t.Errorf("padded to %d bytes: %v, want a *FileError", size, err)
		}
		if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 16<<20 {
			t.Errorf("padded to %d bytes: allocated %d MB to refuse it", size, alloc>>20)
		}
	}
}

// A study.json with bytes that are not UTF-8 is refused naming the file,
// not read with U+FFFD in their place.
func TestReadResultRefusesBytesThatAreNotUTF8(t *testing.T) {
	p := filepath.Join(t.TempDir(), ResultFile)
	r := &Result{Version: ResultVersion, Models: []ModelInfo{{ID: "m", Name: "Caf\xe9"}}}
	var b strings.Builder
	if err := r.Encode(&b); err != nil {
		t.Fatal(err)
	}
	data := strings.Replace(b.String(), `Caf\ufffd`, "Caf\xe9", 1)
	if !strings.Contains(data, "Caf\xe9") {
		t.Fatalf("the file holds no bad byte:\n%s", data)
	}
	if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := ReadResult(p)
	var fe *artifacts.FileError
	if !errors.As(err, &fe) || fe.Path != p || !strings.Contains(err.Error(), "not UTF-8") {
		t.Errorf("%v, want a *FileError naming the file and the bytes that are not UTF-8", err)
	}
	good := filepath.Join(t.TempDir(), ResultFile)
	r.Models[0].Name = "Café, 東京, 🙂"
	if err := r.WriteFile(good); err != nil {
		t.Fatal(err)
	}
	if got, err := ReadResult(good); err != nil || got.Models[0].Name != r.Models[0].Name {
		t.Errorf("a UTF-8 name: %+v, %v", got, err)
	}
}

// Every top-level field of study.json survives a write and a read back
// (status --study and compare --study read the file, not the study): the
// reader walks the object key by key and would silently skip a field it
// has no case for.
func TestReadResultReadsEveryField(t *testing.T) {
	r := &Result{Version: ResultVersion, Conf: 0.95, Methods: Methods{Score: "mean"}, Ages: []string{"current"},
		Models: []ModelInfo{{ID: "m"}}, Nodes: []*Node{{ID: "all", Kind: "root"}},
		Cells: []Cell{{Node: "all", Age: "current", Model: "m"}}, Pairs: []Pair{{Node: "all", Age: "current", A: "m", B: "n"}},
		JudgeError: "corrected for m", Warnings: []string{"thin"}}
	v := reflect.ValueOf(*r)
	for i := range v.NumField() {
		if v.Field(i).IsZero() {
			t.Fatalf("the fixture leaves Result.%s empty: set it, so the round trip checks it", v.Type().Field(i).Name)
		}
	}
	p := filepath.Join(t.TempDir(), ResultFile)
	if err := r.WriteFile(p); err != nil {
		t.Fatal(err)
	}
	back, err := ReadResult(p)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := json.Marshal(r)
	got, _ := json.Marshal(back)
	if !bytes.Equal(got, want) {
		t.Errorf("read back:\n%s\nwritten:\n%s", got, want)
	}
}
