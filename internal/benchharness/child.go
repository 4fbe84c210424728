package benchharness

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/impactbench/impactbench/internal/layout"
)

// The commands the harness runs: the impactbench command it measures, and
// itself (the workers presets' worker processes).
const (
	mainPackage    = "github.com/impactbench/impactbench/cmd/impactbench"
	harnessPackage = "github.com/impactbench/impactbench/cmd/impactbench-bench"
)

// BuildBinary builds the impactbench command into dir with `go build` and
// returns its path. It runs in this module's source tree when that is where
// the harness was compiled from, else in the current directory.
func BuildBinary(ctx context.Context, dir string) (string, error) {
	return build(ctx, dir, "impactbench", mainPackage)
}

// BuildHarness builds impactbench-bench into dir (as BuildBinary).
func BuildHarness(ctx context.Context, dir string) (string, error) {
	return build(ctx, dir, "impactbench-bench", harnessPackage)
}

func build(ctx context.Context, dir, name, pkg string) (string, error) {
	out := filepath.Join(dir, name)
	if runtime.GOOS == "windows" {
		out += ".exe"
	}
	cmd := exec.CommandContext(ctx, "go", "build", "-o", out, pkg)
	cmd.Dir = moduleDir()
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("benchharness: go build %s: %v\n%s(pass the path of a built binary instead)", pkg, err, b)
	}
	return out, nil
}

// moduleDir is the module root this file was compiled from, if it still
// exists ("" otherwise: the current directory).
func moduleDir() string {
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		return ""
	}
	root := filepath.Dir(filepath.Dir(filepath.Dir(file)))
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		return ""
	}
	return root
}

// childSummary is the part of the child's --json summary the harness uses.
type childSummary struct {
	Spent struct {
		Requests     int `json:"requests"`
		InputTokens  int `json:"input_tokens"`
		OutputTokens int `json:"output_tokens"`
	} `json:"spent"`
	Limits   []ToolLimit `json:"limits"`
	ExitCode int         `json:"exit_code"`
	Error    string      `json:"error"`
}

// ToolLimit is one of the child's limit pools from its --json summary.
type ToolLimit struct {
	Pool           string `json:"pool"`
	Concurrency    int    `json:"concurrency"`
	MaxConcurrency int    `json:"max_concurrency"`
	PeakInFlight   int    `json:"peak_in_flight"`
	BackOffs       int64  `json:"back_offs"`
	RateLimited    int64  `json:"rate_limited"`
}

type childRun struct {
	wall       time.Duration
	exitCode   int
	errText    string
	user, sys  time.Duration
	maxRSSMB   float64
	privateMB  float64 // peak private (anonymous) resident memory, sampled
	harnessCPU time.Duration
	summary    childSummary
}

// runChild runs `impactbench run <bench> --no-report --json` in dir and
// measures it: wall time from start to exit, and the child's own CPU time
// and peak RSS from its rusage (the harness and the fake server, which run
// in this process, are not counted).
func runChild(ctx context.Context, bin, dir, bench string, stderr io.Writer) (*childRun, error) {
	args := []string{"-c", layout.ConfigPath(dir), "run", bench, "--no-report", "--json"}
	if stderr == nil {
		args = append(args, "-q")
	}
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Dir = dir
	var stdout bytes.Buffer
	tail := &tailBuffer{max: 16 << 10}
	cmd.Stdout = &stdout
	cmd.Stderr = tail
	if stderr != nil {
		cmd.Stderr = io.MultiWriter(tail, stderr)
	}
	// Interrupt first, so an interrupted child saves its work like a user's Ctrl-C.
	cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
	cmd.WaitDelay = 30 * time.Second

	selfBefore := selfCPU()
	start := time.Now()
	err := cmd.Start()
	peakPrivate := func() float64 { return 0 }
	if err == nil {
		stop := make(chan struct{})
		peakPrivate = watchPrivate(cmd.Process.Pid, stop)
		err = cmd.Wait()
		close(stop)
	}
	cr := &childRun{wall: time.Since(start), harnessCPU: selfCPU() - selfBefore, privateMB: peakPrivate()}
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		cr.exitCode = ee.ExitCode()
	default:
		if cmd.ProcessState == nil {
			return nil, fmt.Errorf("benchharness: start %s: %w", bin, err)
		}
		cr.exitCode = -1
		cr.errText = err.Error()
	}
	if ps := cmd.ProcessState; ps != nil {
		cr.user, cr.sys = ps.UserTime(), ps.SystemTime()
		cr.maxRSSMB = maxRSSMB(ps)
	}
	if jerr := json.Unmarshal(stdout.Bytes(), &cr.summary); jerr != nil && cr.errText == "" {
		cr.errText = "no JSON summary on stdout: " + lastLines(tail.String(), 5)
	} else if cr.summary.Error != "" {
		cr.errText = cr.summary.Error
	}
	if cr.exitCode != 0 && cr.errText == "" {
		cr.errText = lastLines(tail.String(), 5)
	}
	return cr, nil
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, " | ")
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	mu  sync.Mutex
	max int
	buf []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if over := len(t.buf) - t.max; over > 0 {
		t.buf = append(t.buf[:0], t.buf[over:]...)
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.buf)
}
