package benchcli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/impactbench/impactbench/internal/benchharness"
)

// The pipeline preset's shape flags: readable usage errors, and only with
// the preset they shape.
func TestBenchPipelineFlagErrors(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--preset", "pipeline", "--demographics", "2,x"}, `--demographics "2,x": want the number of values of each demographic axis, each ≥ 1, e.g. 2,2`},
		{[]string{"--preset", "pipeline", "--demographics", "2,0"}, `--demographics "2,0": want`},
		{[]string{"--preset", "pipeline", "--metrics", "0"}, "--metrics 0, --scenarios-per-metric 9: want at least 1 each"},
		{[]string{"--preset", "pipeline", "--conversations", "10"}, "--conversations: the pipeline preset's conversations are --metrics × --scenarios-per-metric × the --demographics variants"},
		{[]string{"--preset", "small", "--metrics", "3"}, "shape the pipeline preset only (--preset pipeline)"},
	} {
		var out, errb bytes.Buffer
		code := Main(c.args, &out, &errb)
		if code != 2 || !strings.Contains(errb.String(), c.want) || out.String() != "" {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want usage error %q", c.args, code, out.String(), errb.String(), c.want)
		}
	}
}

// Flag values get the same readable errors as impactbench's.
func TestBenchFlagErrors(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--turns", "x"}, `--turns "x": want a whole number`},
		{[]string{"--latency", "5"}, `--latency "5": want a duration such as 500ms, 30s or 2m`},
		{[]string{"stray"}, "unknown command"},
	} {
		var out, errb bytes.Buffer
		if code := Main(c.args, &out, &errb); code != 2 || !strings.Contains(errb.String(), c.want) || strings.Contains(errb.String(), "strconv") {
			t.Errorf("%v: exit %d, stderr %q, want %q", c.args, code, errb.String(), c.want)
		}
	}
}

// --caching --json prints the CachingResult docs/json.md describes.
func TestBenchCachingJSON(t *testing.T) {
	var out, errb bytes.Buffer
	if code := Main([]string{"--caching", "--turns", "2", "--json"}, &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	dec := json.NewDecoder(&out)
	dec.DisallowUnknownFields()
	var res benchharness.CachingResult
	if err := dec.Decode(&res); err != nil {
		t.Fatalf("--caching --json: %v", err)
	}
}

// The harness profiles itself beside its child when the path names the
// process, as docs/performance.md says; without "%p" only the child does.
func TestHarnessProfile(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("IMPACTBENCH_CPUPROFILE", filepath.Join(dir, "cpu-%p.prof"))
	if code := Main([]string{"--help"}, io.Discard, io.Discard); code != 0 {
		t.Fatalf("exit %d", code)
	}
	want := filepath.Join(dir, fmt.Sprintf("cpu-%d.prof", os.Getpid()))
	if fi, err := os.Stat(want); err != nil || fi.Size() == 0 {
		t.Fatalf("no harness profile at %s: %v", want, err)
	}
	shared := filepath.Join(dir, "shared.prof")
	t.Setenv("IMPACTBENCH_CPUPROFILE", shared)
	if code := Main([]string{"--help"}, io.Discard, io.Discard); code != 0 {
		t.Fatalf("exit %d", code)
	}
	if _, err := os.Stat(shared); !os.IsNotExist(err) {
		t.Fatalf("the harness wrote the child's profile path %s (%v)", shared, err)
	}
}
