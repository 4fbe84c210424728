//go:build unix

package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/creack/pty"
)

// The interrupt tests run the binary on a real pseudo-terminal, as a user at
// a terminal does: stderr is a tty, so the live progress bars are on, and
// Ctrl-C is the byte 0x03 typed into the terminal, which the tty's line
// discipline (ISIG, on by default) turns into SIGINT for the foreground
// process group. Piped output has no bars and never showed the hang these
// tests guard against.

// interruptedMsg is what an interrupted run must leave on the terminal.
const interruptedMsg = "impactbench: interrupted — everything completed so far is saved; run the same command again to continue"

// ctrlCExitLimit is the acceptance bound from Ctrl-C to exit.
const ctrlCExitLimit = 3 * time.Second

// ptyProc is the binary running with a pseudo-terminal as its stdin,
// stdout, stderr and controlling terminal.
type ptyProc struct {
	t       *testing.T
	args    []string
	cmd     *exec.Cmd
	ptmx    *os.File
	mu      sync.Mutex
	out     bytes.Buffer // everything the terminal showed
	exited  chan struct{}
	read    chan struct{} // the reader saw EOF: all output is in out
	pressed time.Time     // when Ctrl-C was first typed
}

// startPTY starts the binary in the project directory on a new 24×100
// terminal, in its own session with the terminal as controlling tty.
func (p *project) startPTY(args ...string) *ptyProc {
	p.t.Helper()
	pp := &ptyProc{t: p.t, args: args, exited: make(chan struct{}), read: make(chan struct{})}
	pp.cmd = exec.Command(ibBin, args...)
	pp.cmd.Dir = p.dir
	// TERM=dumb (the default for these tests) turns the bars off.
	pp.cmd.Env = append(p.environ(), "TERM=xterm")
	ptmx, err := pty.StartWithSize(pp.cmd, &pty.Winsize{Rows: 24, Cols: 100})
	if err != nil {
		p.t.Fatalf("start impactbench %s on a pty: %v", strings.Join(args, " "), err)
	}
	pp.ptmx = ptmx
	go func() {
		defer close(pp.read)
		buf := make([]byte, 4096)
		for {
			n, err := ptmx.Read(buf)
			pp.mu.Lock()
			pp.out.Write(buf[:n])
			pp.mu.Unlock()
			if err != nil { // EIO once the process and its children closed the tty
				return
			}
		}
	}()
	go func() {
		_ = pp.cmd.Wait()
		close(pp.exited)
	}()
	p.t.Cleanup(func() {
		select {
		case <-pp.exited:
		default:
			_ = pp.cmd.Process.Kill()
			<-pp.exited
		}
		ptmx.Close()
	})
	return pp
}

func (pp *ptyProc) output() string {
	pp.mu.Lock()
	defer pp.mu.Unlock()
	return pp.out.String()
}

// waitOutput waits until the terminal has shown something matching re.
func (pp *ptyProc) waitOutput(re *regexp.Regexp, limit time.Duration) {
	pp.t.Helper()
	deadline := time.Now().Add(limit)
	for !re.MatchString(pp.output()) {
		select {
		case <-pp.exited:
			pp.t.Fatalf("impactbench %s exited before showing %q:\n%s", strings.Join(pp.args, " "), re, clip(pp.output()))
		default:
		}
		if time.Now().After(deadline) {
			pp.t.Fatalf("impactbench %s showed no %q within %v:\n%s", strings.Join(pp.args, " "), re, limit, clip(pp.output()))
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// ctrlC types Ctrl-C into the terminal.
func (pp *ptyProc) ctrlC() {
	pp.t.Helper()
	if pp.pressed.IsZero() {
		pp.pressed = time.Now()
	}
	if _, err := pp.ptmx.Write([]byte{0x03}); err != nil {
		pp.t.Fatalf("typing Ctrl-C: %v", err)
	}
}

// wait waits for the process to exit, at most limit after the first Ctrl-C
// (or after now), and returns its exit code, how long it took from then, and
// everything the terminal showed.
func (pp *ptyProc) wait(limit time.Duration) (code int, took time.Duration, out string) {
	pp.t.Helper()
	start := pp.pressed
	if start.IsZero() {
		start = time.Now()
	}
	select {
	case <-pp.exited:
		took = time.Since(start)
	case <-time.After(time.Until(start.Add(limit))):
		_ = pp.cmd.Process.Kill()
		<-pp.exited
		pp.t.Fatalf("impactbench %s still running %v after it was asked to stop:\n%s", strings.Join(pp.args, " "), limit, clip(pp.output()))
	}
	select {
	case <-pp.read:
	case <-time.After(2 * time.Second): // a grandchild holding the tty: take what is there
	}
	return pp.cmd.ProcessState.ExitCode(), took, pp.output()
}

// simulating matches the simulate bar once it is on screen.
var simulating = regexp.MustCompile(`simulate careful +\[`)

// finalFiles are the outputs a finished run writes, relative to the
// benchmark directory.
var finalFiles = []string{
	"scenarios.json", "cost.json", "results.json", "run_manifest.json",
	"runs/careful/conversations.json", "runs/careful/scores.json", "runs/careful/cost.json",
	"report.html",
}

// TestCtrlCOnTerminal presses Ctrl-C in the middle of simulation with the
// progress bars on screen: the run must stop within ctrlCExitLimit with exit
// 130 and the "saved, rerun" message, and a rerun must finish with files
// identical to an uninterrupted run's.
func TestCtrlCOnTerminal(t *testing.T) {
	t.Parallel()
	cfg := slowOfflineConfig(250 * time.Millisecond)
	ref := newProject(t, cfg)
	ref.addBench("qs", quickstartBench(t))
	refRun := ref.start("run", "qs") // alongside: it takes as long as the run below

	p := newProject(t, cfg)
	p.addBench("qs", quickstartBench(t))
	pp := p.startPTY("run", "qs")
	pp.waitOutput(simulating, 60*time.Second)
	time.Sleep(300 * time.Millisecond) // some conversations in flight
	pp.ctrlC()
	code, took, out := pp.wait(ctrlCExitLimit)
	t.Logf("Ctrl-C to exit: %v", took)
	if code != ExitInterrupted {
		t.Fatalf("exit %d after Ctrl-C, want %d:\n%s", code, ExitInterrupted, clip(out))
	}
	if n := strings.Count(out, interruptedMsg); n != 1 {
		t.Errorf("the terminal shows the interrupted message %d times, want once:\n%s", n, clip(out))
	}
	dir := p.benchDir("qs")
	if exists(filepath.Join(dir, "results.json")) {
		t.Fatalf("results.json exists: the run had finished before Ctrl-C, so this test proved nothing")
	}

	// The rerun, on the terminal too (bars that complete normally).
	rerun := p.startPTY("run", "qs")
	code, took, out = rerun.wait(cmdTimeout)
	if code != 0 {
		t.Fatalf("rerun after Ctrl-C: exit %d:\n%s", code, clip(out))
	}
	t.Logf("rerun: %v", took)
	if r := refRun.wait(t); r.code != 0 {
		t.Fatalf("uninterrupted run failed:\n%s", r)
	}
	sameFinalFiles(t, ref.benchDir("qs"), dir, finalFiles)
}

// TestCtrlCTwiceOnTerminal presses Ctrl-C twice in quick succession, as an
// impatient user does: still exit 130 within ctrlCExitLimit, with the
// message exactly once (the second Ctrl-C used to exit 130 silently while
// the first was still stuck). A shutdown that really hangs is covered in
// internal/cli (TestSecondSignalDuringStuckShutdown).
func TestCtrlCTwiceOnTerminal(t *testing.T) {
	t.Parallel()
	p := newProject(t, slowOfflineConfig(250*time.Millisecond))
	p.addBench("qs", quickstartBench(t))
	pp := p.startPTY("run", "qs")
	pp.waitOutput(simulating, 60*time.Second)
	pp.ctrlC()
	time.Sleep(20 * time.Millisecond)
	// The first may already have stopped the run: then the terminal is gone.
	if _, err := pp.ptmx.Write([]byte{0x03}); err != nil && !errors.Is(err, syscall.EIO) {
		t.Fatalf("typing the second Ctrl-C: %v", err)
	}
	code, took, out := pp.wait(ctrlCExitLimit)
	t.Logf("Ctrl-C Ctrl-C to exit: %v", took)
	if code != ExitInterrupted {
		t.Fatalf("exit %d after Ctrl-C twice, want %d:\n%s", code, ExitInterrupted, clip(out))
	}
	if n := strings.Count(out, interruptedMsg); n != 1 {
		t.Errorf("the terminal shows the interrupted message %d times, want once:\n%s", n, clip(out))
	}
	// The rerun finishes what was interrupted.
	if r := p.run("run", "qs"); r.code != 0 {
		t.Fatalf("rerun after Ctrl-C twice:\n%s", r)
	}
}

// ExitInterrupted mirrors cli.ExitInterrupted (the tests see the binary only).
const ExitInterrupted = 130
