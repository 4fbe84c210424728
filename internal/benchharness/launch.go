package benchharness

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"sync"
	"time"
)

// WorkerCommand builds the command of worker index (0-based) of count: a
// limiter load generator (workers.go) or, later, an `impactbench run` of
// one shard with the scheduler's variables (JOB_COMPLETION_INDEX…).
type WorkerCommand func(index, count int) *exec.Cmd

// WorkerExit is how one worker process ended.
type WorkerExit struct {
	Index int `json:"index"`
	// Wall is from the launch of all workers to this one's exit.
	Wall     time.Duration `json:"wall_ns"`
	ExitCode int           `json:"exit_code"`
	User     time.Duration `json:"user_cpu_ns"`
	Sys      time.Duration `json:"sys_cpu_ns"`
	MaxRSSMB float64       `json:"max_rss_mb"`
	Stdout   []byte        `json:"-"`
	// StderrTail is the end of what it wrote on stderr.
	StderrTail string `json:"stderr_tail,omitempty"`
}

// LaunchWorkers starts count worker processes at once, each built by cmd
// with its index, and waits for every one of them. A worker that exits
// non-zero is reported in its WorkerExit, not as an error; errors are for
// workers that could not start (those already started are stopped). When
// ctx ends, every worker gets an interrupt, as a scheduler's cancellation
// would send (build them with exec.CommandContext).
func LaunchWorkers(ctx context.Context, count int, cmd WorkerCommand) ([]WorkerExit, error) {
	if count < 1 {
		return nil, fmt.Errorf("benchharness: %d workers", count)
	}
	cmds := make([]*exec.Cmd, count)
	outs := make([]*bytes.Buffer, count)
	tails := make([]*tailBuffer, count)
	start := time.Now()
	for i := range cmds {
		c := cmd(i, count)
		outs[i], tails[i] = &bytes.Buffer{}, &tailBuffer{max: 8 << 10}
		c.Stdout, c.Stderr = outs[i], tails[i]
		c.Cancel = func() error { return c.Process.Signal(os.Interrupt) }
		c.WaitDelay = 30 * time.Second
		if err := c.Start(); err != nil {
			for _, started := range cmds[:i] {
				_ = started.Process.Kill()
				_ = started.Wait()
			}
			return nil, fmt.Errorf("benchharness: start worker %d of %d: %w", i, count, err)
		}
		cmds[i] = c
	}
	exits := make([]WorkerExit, count)
	var wg sync.WaitGroup
	for i, c := range cmds {
		wg.Go(func() {
			err := c.Wait()
			e := WorkerExit{Index: i, Wall: time.Since(start), Stdout: outs[i].Bytes(), StderrTail: lastLines(tails[i].String(), 5)}
			var ee *exec.ExitError
			switch {
			case err == nil:
			case errors.As(err, &ee):
				e.ExitCode = ee.ExitCode()
			default:
				e.ExitCode = -1
			}
			if ps := c.ProcessState; ps != nil {
				e.User, e.Sys, e.MaxRSSMB = ps.UserTime(), ps.SystemTime(), maxRSSMB(ps)
			}
			exits[i] = e
		})
	}
	wg.Wait()
	return exits, nil
}
