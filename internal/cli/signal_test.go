//go:build unix

package cli

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/impactbench/impactbench/internal/llm"
	"github.com/impactbench/impactbench/internal/progress"
)

// The signal tests run handleSignals in a child process (this test binary
// re-executed), because its way out is os.Exit. The child's run never stops
// by itself after cancellation — the worst case: a provider call that
// ignores its context, a terminal that takes no output — so only the signal
// handler can end it.

const signalChildEnv = "IMPACTBENCH_TEST_SIGNAL_CHILD"

// TestSignalChild is the child: live bars on a terminal that takes no
// output, then a run that never returns.
func TestSignalChild(t *testing.T) {
	if os.Getenv(signalChildEnv) == "" {
		t.Skip("child process of the signal tests")
	}
	g := &globals{stdout: os.Stdout, stderr: os.Stderr}
	ctx, stop := g.handleSignals()
	defer stop()
	if os.Getenv(signalChildEnv) == "plain" { // no live bars: notices go to stderr
		os.Stdout.WriteString("running\n")
		<-ctx.Done()
		time.Sleep(time.Hour)
	}
	stuck := stuckWriter{}
	tr := progress.New(stuck, progress.Bars, 0)
	g.progress.Store(tr)
	tr.Start("simulate t", 10).Done(false, false, llm.Usage{}, time.Millisecond)
	os.Stdout.WriteString("running\n")
	<-ctx.Done()
	os.Stdout.WriteString("cancelled\n")
	time.Sleep(time.Hour) // a shutdown that hangs
}

type stuckWriter struct{}

func (stuckWriter) Write(p []byte) (int, error) { select {} }

// signalChild starts the child and waits until it is running.
type signalChild struct {
	cmd    *exec.Cmd
	stderr bytes.Buffer
	lines  chan string
	exited chan struct{}
}

func startSignalChild(t *testing.T) *signalChild {
	return startSignalChildMode(t, "1")
}

// startSignalChildMode starts the child in a mode: "1" live bars on a
// stuck terminal, "plain" none.
func startSignalChildMode(t *testing.T, mode string) *signalChild {
	t.Helper()
	c := &signalChild{lines: make(chan string, 10), exited: make(chan struct{})}
	c.cmd = exec.Command(os.Args[0], "-test.run=^TestSignalChild$", "-test.count=1")
	c.cmd.Env = append(os.Environ(), signalChildEnv+"="+mode)
	var mu sync.Mutex
	c.cmd.Stderr = lockedWriter{&mu, &c.stderr}
	out, err := c.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := c.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			c.lines <- sc.Text()
		}
		_ = c.cmd.Wait()
		close(c.exited)
	}()
	t.Cleanup(func() {
		_ = c.cmd.Process.Kill()
		<-c.exited
	})
	c.expect(t, "running")
	return c
}

func (c *signalChild) expect(t *testing.T, line string) {
	t.Helper()
	for {
		select {
		case l := <-c.lines:
			if l == line {
				return
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("child never printed %q", line)
		}
	}
}

func (c *signalChild) signal(t *testing.T, sig os.Signal) time.Time {
	t.Helper()
	if err := c.cmd.Process.Signal(sig); err != nil {
		t.Fatal(err)
	}
	return time.Now()
}

// waitExit returns the child's exit code and the time from since to its exit.
func (c *signalChild) waitExit(t *testing.T, since time.Time, limit time.Duration) (int, time.Duration) {
	t.Helper()
	select {
	case <-c.exited:
		return c.cmd.ProcessState.ExitCode(), time.Since(since)
	case <-time.After(time.Until(since.Add(limit))):
		t.Fatalf("child still running %v after the signal", limit)
		return 0, 0
	}
}

type lockedWriter struct {
	mu *sync.Mutex
	w  *bytes.Buffer
}

func (l lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

const interruptedMessage = "impactbench: interrupted — everything completed so far is saved; run the same command again to continue"

// A second Ctrl-C while shutdown hangs exits 130 at once, with the message
// (it used to exit 130 silently).
func TestSecondSignalDuringStuckShutdown(t *testing.T) {
	t.Parallel()
	c := startSignalChild(t)
	first := c.signal(t, os.Interrupt)
	c.expect(t, "cancelled")
	second := c.signal(t, os.Interrupt)
	code, took := c.waitExit(t, second, exitGrace+time.Second)
	t.Logf("second Ctrl-C to exit: %v", took)
	if code != ExitInterrupted {
		t.Errorf("exit %d, want %d", code, ExitInterrupted)
	}
	if since := second.Add(took).Sub(first); since >= exitGrace {
		t.Errorf("exited %v after the first Ctrl-C: by the grace timeout, not the second Ctrl-C", since)
	}
	if n := strings.Count(c.stderr.String(), interruptedMessage); n != 1 {
		t.Errorf("message printed %d times, want once; stderr:\n%s", n, c.stderr.String())
	}
}

// One Ctrl-C (or SIGTERM) and a shutdown that hangs: the process exits 130
// with the message once exitGrace has passed — not before, so a run that
// is still saving gets that long.
func TestSignalExitsAfterGraceWhenShutdownHangs(t *testing.T) {
	t.Parallel()
	for _, sig := range []os.Signal{os.Interrupt, syscall.SIGTERM} {
		t.Run(sig.String(), func(t *testing.T) {
			t.Parallel()
			c := startSignalChild(t)
			first := c.signal(t, sig)
			code, took := c.waitExit(t, first, exitGrace+time.Second)
			t.Logf("%v to exit: %v", sig, took)
			if code != ExitInterrupted {
				t.Errorf("exit %d, want %d", code, ExitInterrupted)
			}
			if took < exitGrace {
				t.Errorf("exited after %v, before the %v grace", took, exitGrace)
			}
			if n := strings.Count(c.stderr.String(), interruptedMessage); n != 1 {
				t.Errorf("message printed %d times, want once; stderr:\n%s", n, c.stderr.String())
			}
		})
	}
}

// TestStopNoticeBySignal: Ctrl-C is told it may press Ctrl-C again; a
// SIGTERM (a scheduler stopping a worker) is told the process stops and
// that running it again (its index) resumes — never to press Ctrl-C.
func TestStopNoticeBySignal(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		sig       os.Signal
		want, not string
	}{
		{os.Interrupt, "impactbench: stopping — saving completed work (press Ctrl-C again to quit immediately)", "SIGTERM"},
		{syscall.SIGTERM, "impactbench: SIGTERM received — stopping, saving completed work; run the same command again (for a worker, its index again) to resume without paying twice", "Ctrl-C"},
	} {
		t.Run(tc.sig.String(), func(t *testing.T) {
			t.Parallel()
			c := startSignalChildMode(t, "plain")
			first := c.signal(t, tc.sig)
			if code, _ := c.waitExit(t, first, exitGrace+5*time.Second); code != ExitInterrupted {
				t.Errorf("exit %d, want %d", code, ExitInterrupted)
			}
			errs := c.stderr.String()
			if !strings.Contains(errs, tc.want+"\n") || strings.Contains(errs, tc.not) {
				t.Errorf("after %v, stderr:\n%s\nwant the line %q and no %q", tc.sig, errs, tc.want, tc.not)
			}
		})
	}
}
