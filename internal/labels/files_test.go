package labels

import (
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/impactbench/impactbench/internal/fsx"
	"github.com/impactbench/impactbench/internal/layout"
)

// TestAppendNeverWritesThroughALink: labels.jsonl linked to a shell's
// startup file (a dangling link too) is refused with an error naming it,
// and nothing is written anywhere.
func TestAppendNeverWritesThroughALink(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("symbolic links need privileges on Windows")
	}
	dir := t.TempDir()
	rc := filepath.Join(dir, ".bashrc")
	const before = "# rc\n"
	if err := os.WriteFile(rc, []byte(before), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, target := range []string{rc, filepath.Join(dir, ".profile")} {
		path := filepath.Join(t.TempDir(), layout.LabelsFile)
		if err := os.Symlink(target, path); err != nil {
			t.Fatal(err)
		}
		l := Label{ConvID: "m01_s001_v01__a__s0", MetricID: "m01", Present: true, Labeler: "ana"}
		err := Append(path, l, Known{})
		var nr *fsx.NotRegularError
		if !errors.As(err, &nr) || !strings.Contains(err.Error(), path) {
			t.Errorf("Append through a link to %s: %v, want a refusal naming %s", filepath.Base(target), err, path)
		}
	}
	if b, _ := os.ReadFile(rc); string(b) != before {
		t.Errorf("the link's target changed: %q", b)
	}
	if _, err := os.Lstat(filepath.Join(dir, ".profile")); !os.IsNotExist(err) {
		t.Errorf("a file was created through the dangling link (%v)", err)
	}
}

// TestHostileIDsAreRefused: a conv_id or metric_id that is not an id (a
// shell command substitution, a path) is refused on read, naming the line
// and the field, and never appended.
func TestHostileIDsAreRefused(t *testing.T) {
	for field, value := range map[string]string{
		"conv_id":   "m01_s001_v01__haiku__s0$(touch pwned)",
		"metric_id": "../m01",
	} {
		path := filepath.Join(t.TempDir(), layout.LabelsFile)
		line := strings.Replace(good, `"`+field+`": "`+map[string]string{"conv_id": "m01_s001_v01__a__s0", "metric_id": "m01"}[field]+`"`, `"`+field+`": "`+value+`"`, 1)
		if line == good {
			t.Fatal("the edit did not apply")
		}
		if err := os.WriteFile(path, []byte(good+"\n"+line+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := Read(path, Known{})
		var e *Error
		if !errors.As(err, &e) || len(e.Lines) != 1 || e.Lines[0].Line != 2 || e.Lines[0].Field != field ||
			!strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "not a valid") {
			t.Errorf("%s %q: Read = %v, want line 2, field %s refused", field, value, err, field)
		}
		l := Label{ConvID: "m01_s001_v01__a__s0", MetricID: "m01", Present: true, Labeler: "ana"}
		if field == "conv_id" {
			l.ConvID = value
		} else {
			l.MetricID = value
		}
		before, _ := os.ReadFile(path)
		if err := Append(path, l, Known{}); err == nil || !strings.Contains(err.Error(), field) {
			t.Errorf("%s %q: Append = %v, want a refusal naming the field", field, value, err)
		}
		if after, _ := os.ReadFile(path); string(after) != string(before) {
			t.Errorf("%s: a refused label changed the file", field)
		}
	}
}

// TestReadBoundsLineLength: a huge hand-written line (a pasted note) is
// refused with the file, the line and the limit, instead of being read
// whole on every read.
func TestReadBoundsLineLength(t *testing.T) {
	path := filepath.Join(t.TempDir(), layout.LabelsFile)
	huge := strings.Replace(good, `"note": ""`, `"note": "`+strings.Repeat("x", 4<<20)+`"`, 1)
	if err := os.WriteFile(path, []byte(good+"\n"+huge+"\n"+good+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_, err := Read(path, Known{})
	var e *Error
	if !errors.As(err, &e) || len(e.Lines) != 1 || e.Lines[0].Line != 2 ||
		!strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "64 KiB") {
		t.Fatalf("Read = %v, want line 2 refused as over the 64 KiB limit", err)
	}
	t.Logf("refused in %v", time.Since(start))

	// A line just within the limit is read.
	const limit = 64 << 10 // MaxLineBytes, as docs/config.md states it
	within := strings.Replace(good, `"note": ""`, `"note": "`+strings.Repeat("y", limit-len(good))+`"`, 1)
	if err := os.WriteFile(path, []byte(within+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Read(path, Known{}); err != nil {
		t.Errorf("a line of %d bytes: %v", len(within), err)
	}
	// Append never writes a line Read would refuse.
	l := Label{ConvID: "m01_s001_v01__a__s0", MetricID: "m01", Labeler: "ana", Note: strings.Repeat("z", limit)}
	if err := Append(path, l, Known{}); err == nil {
		t.Error("Append wrote a line over the limit")
	}
}
