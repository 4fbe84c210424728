// Package hostile holds the hostile inputs the readers' bound tests feed
// every reader of a file a user may write or receive (docs/security.md),
// and the harness that runs each one in a child process of the test binary
// and measures its peak memory (RSS) and time. A child that passes 1 GiB
// of heap or 15 s is stopped by a watchdog, so that a reader without
// bounds fails its test quickly instead of taking the machine down.
// Only tests import it.
package hostile

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"strings"
	"testing"
	"time"
)

// The goal every reader meets for any input of at most MaxInput bytes.
const (
	MaxInput = 1 << 20
	MaxRSS   = 100 << 20
	MaxTime  = 2 * time.Second
)

// Watchdog limits of a child: far past the goal, short of harm.
const (
	watchHeap = 1 << 30
	watchTime = 15 * time.Second
)

// Case is one reader fed one hostile input.
type Case struct {
	Reader string // the file and how it is read, e.g. "benchmark.yaml"
	Shape  string // the input, e.g. "alias bomb"
	// Files are written into a fresh directory before Run (parent side).
	Files func() map[string][]byte
	// Run reads the input in dir. Its error is reported, not judged:
	// refusing the input is the usual outcome.
	Run func(dir string) error
}

func (c Case) name() string { return c.Reader + "/" + c.Shape }

// Result is what one child measured.
type Result struct {
	Case     string        `json:"case"`
	Bytes    int           `json:"bytes"`
	RSS      int64         `json:"rss"` // peak resident set, bytes
	Elapsed  time.Duration `json:"elapsed"`
	Outcome  string        `json:"outcome"` // the reader's error, cut, or "accepted"
	Watchdog string        `json:"watchdog,omitempty"`
}

const childEnv = "IMPACTBENCH_HOSTILE_CASE"

// Run runs every case in a child process, or, inside a child, the one case
// it was started for. Call it from a test named by testName (the -test.run
// pattern that reaches this call). It returns the results in case order.
func Run(t *testing.T, testName string, cases []Case) []Result {
	t.Helper()
	if name := os.Getenv(childEnv); name != "" {
		runChild(cases, name)
		return nil
	}
	if testing.Short() {
		t.Skip("hostile inputs are measured in child processes: not in -short")
	}
	if raceBuild {
		t.Skip("the race detector multiplies memory and time: peaks are measured without -race")
	}
	var out []Result
	for _, c := range cases {
		r := runParent(t, testName, c)
		out = append(out, r)
		t.Logf("%-40s %8d B  %6.1f MB  %8v  %s", r.Case, r.Bytes, float64(r.RSS)/(1<<20), r.Elapsed.Round(time.Millisecond), r.Outcome)
	}
	return out
}

// Check fails t for every result over the goal.
func Check(t *testing.T, results []Result) {
	t.Helper()
	for _, r := range results {
		switch {
		case r.Watchdog != "":
			t.Errorf("%s: stopped by the watchdog: %s", r.Case, r.Watchdog)
		case r.Bytes > MaxInput:
			t.Errorf("%s: the input is %d bytes, over the %d the goal is for", r.Case, r.Bytes, MaxInput)
		case r.RSS == 0:
			t.Logf("%s: peak memory not measured on this system", r.Case)
		case r.RSS > MaxRSS:
			t.Errorf("%s: peak memory %.1f MB, over %d MB", r.Case, float64(r.RSS)/(1<<20), MaxRSS>>20)
		}
	}
}

func runParent(t *testing.T, testName string, c Case) Result {
	t.Helper()
	dir := t.TempDir()
	size := 0
	for name, data := range c.Files() {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		size = max(size, len(data))
	}
	cmd := exec.Command(os.Args[0], "-test.run=^"+testName+"$", "-test.count=1")
	cmd.Env = append(os.Environ(), childEnv+"="+c.name(), "IMPACTBENCH_HOSTILE_DIR="+dir, "GOMAXPROCS=2")
	start := time.Now()
	stdout, err := cmd.Output()
	elapsed := time.Since(start)
	r := Result{Case: c.name(), Bytes: size, Elapsed: elapsed}
	line := lastLine(stdout, "HOSTILE ")
	if line == "" {
		r.Watchdog = fmt.Sprintf("child failed (%v): %s", err, tail(stdout))
		return r
	}
	var child Result
	if jerr := json.Unmarshal([]byte(line), &child); jerr != nil {
		t.Fatalf("%s: %v in %q", c.name(), jerr, line)
	}
	r.Outcome, r.Watchdog, r.RSS = child.Outcome, child.Watchdog, child.RSS
	if child.Elapsed > 0 {
		r.Elapsed = child.Elapsed // the read alone, without the process's start
	}
	return r
}

func runChild(cases []Case, name string) {
	for _, c := range cases {
		if c.name() != name {
			continue
		}
		go watch()
		start := time.Now()
		err := c.Run(os.Getenv("IMPACTBENCH_HOSTILE_DIR"))
		r := Result{Case: name, Elapsed: time.Since(start), Outcome: outcome(err), RSS: peakRSS()}
		report(r)
		os.Exit(0)
	}
	report(Result{Case: name, Watchdog: "no such case"})
	os.Exit(0)
}

func outcome(err error) string {
	if err == nil {
		return "accepted"
	}
	s := strings.ReplaceAll(err.Error(), "\n", " | ")
	if len(s) > 160 {
		s = s[:160] + "…"
	}
	return "refused: " + s
}

func report(r Result) {
	b, _ := json.Marshal(r)
	fmt.Printf("\nHOSTILE %s\n", b)
}

// watch stops the child past watchHeap or watchTime.
func watch() {
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	deadline := time.Now().Add(watchTime)
	for {
		metrics.Read(s)
		if h := s[0].Value.Uint64(); h > watchHeap {
			report(Result{Watchdog: fmt.Sprintf("heap passed %d MB", watchHeap>>20)})
			os.Exit(3)
		}
		if time.Now().After(deadline) {
			report(Result{Watchdog: fmt.Sprintf("still reading after %v", watchTime)})
			os.Exit(4)
		}
		time.Sleep(5 * time.Millisecond)
		runtime.Gosched()
	}
}

func lastLine(out []byte, prefix string) string {
	lines := strings.Split(string(out), "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		if s, ok := strings.CutPrefix(lines[i], prefix); ok {
			return s
		}
	}
	return ""
}

func tail(b []byte) string {
	if len(b) > 300 {
		b = b[len(b)-300:]
	}
	return string(b)
}
