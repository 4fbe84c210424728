package benchharness

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/impactbench/impactbench/internal/layout"
)

// command is impactbench with args in dir (its config.yaml), quiet; ctx's
// end interrupts it, as a scheduler's cancellation would.
func (c *cluster) command(ctx context.Context, dir string, env []string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, c.bin, append([]string{"-c", layout.ConfigPath(dir), "-q"}, args...)...)
	cmd.Dir, cmd.Env = dir, env
	cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
	cmd.WaitDelay = 30 * time.Second
	return cmd
}

// workerProc is one running worker.
type workerProc struct {
	run  IndexRun
	cmd  *exec.Cmd
	tail *tailBuffer
}

// scheduler hands out the indexes as a cluster's scheduler does: Workers
// at a time, the next index when one exits, a killed index again later.
type scheduler struct {
	c       *cluster
	start   time.Time
	mu      sync.Mutex
	running map[int]*workerProc
	killed  map[int]bool
	runs    []IndexRun
	exited  chan *workerProc
	dups    sync.WaitGroup
	pods    int // directories made so far (the s3 store: one per process)
	// attempts counts each index's launches (the kill variant's labels).
	attempts map[int]int
}

func (c *cluster) runWorkers(ctx context.Context) error {
	c.workStart = time.Now()
	s := &scheduler{c: c, start: c.workStart, running: map[int]*workerProc{}, killed: map[int]bool{}, attempts: map[int]int{}, exited: make(chan *workerProc)}
	if c.o.Cluster == StoreDir {
		if err := copyTree(c.tmpl, filepath.Join(c.dir, "shared")); err != nil {
			return err
		}
	}
	done := make(chan struct{})
	var killer sync.WaitGroup
	if c.o.Kill {
		killer.Go(func() { s.killAt(ctx, c.res.Calls/3, done) })
	}
	err := s.loop(ctx)
	close(done)
	killer.Wait()
	s.dups.Wait()
	c.res.Wall = time.Since(s.start).Seconds()
	slices.SortFunc(s.runs, func(a, b IndexRun) int { return int((a.Start - b.Start) * 1e6) })
	c.res.Runs = s.runs
	return err
}

// loop starts and waits for every index.
func (s *scheduler) loop(ctx context.Context) error {
	var pending []int
	for i := range s.c.o.Indexes {
		pending = append(pending, i)
	}
	running := 0
	for len(pending) > 0 || running > 0 {
		for running < s.c.o.Workers && len(pending) > 0 && ctx.Err() == nil {
			p, err := s.launch(ctx, pending[0], false)
			if err != nil {
				s.stopAll()
				return err
			}
			pending = pending[1:]
			s.mu.Lock()
			s.running[p.run.Index] = p
			s.mu.Unlock()
			running++
		}
		if running == 0 {
			return ctx.Err()
		}
		p := <-s.exited
		running--
		s.mu.Lock()
		delete(s.running, p.run.Index)
		if s.killed[p.run.Index] && p.run.ExitCode == -1 { // signalled
			p.run.Killed = true
			delete(s.killed, p.run.Index)
			pending = append(pending, p.run.Index) // the scheduler retries it
		}
		s.runs = append(s.runs, p.run)
		s.mu.Unlock()
	}
	return ctx.Err()
}

// launch starts the worker of index (a duplicate of a running one: dup).
func (s *scheduler) launch(ctx context.Context, index int, dup bool) (*workerProc, error) {
	dir, env, err := s.place(index)
	if err != nil {
		return nil, err
	}
	p := &workerProc{run: IndexRun{Index: index, Duplicate: dup, Start: time.Since(s.start).Seconds()}, tail: &tailBuffer{max: 8 << 10}}
	p.cmd = s.c.command(ctx, dir, env, "run", "all", "--no-report")
	p.cmd.Stderr = p.tail
	if err := p.cmd.Start(); err != nil {
		return nil, fmt.Errorf("benchharness: start worker %d: %w", index, err)
	}
	exited := make(chan struct{})
	if dup {
		s.dups.Add(1)
	}
	if s.c.o.Kill {
		label := fmt.Sprintf("index %d", index)
		s.mu.Lock()
		if dup {
			label += " duplicate"
		} else if s.killed[index] {
			label += " killed"
		} else if s.attempts[index]++; s.attempts[index] > 1 {
			label += " rerun"
		}
		s.mu.Unlock()
		go s.c.samplePorts(p.cmd.Process.Pid, label, exited)
	}
	go func() {
		defer close(exited)
		err := p.cmd.Wait()
		p.run.End = time.Since(s.start).Seconds()
		var ee *exec.ExitError
		switch {
		case err == nil:
		case errors.As(err, &ee):
			p.run.ExitCode = ee.ExitCode()
		default:
			p.run.ExitCode = -1
		}
		if p.run.ExitCode != 0 {
			p.run.StderrTail = lastLines(p.tail.String(), 5)
		}
		if !dup {
			s.exited <- p
			return
		}
		s.mu.Lock()
		s.runs = append(s.runs, p.run)
		s.mu.Unlock()
		s.dups.Done()
	}()
	return p, nil
}

// place is the directory and environment of a worker process: the shared
// project, or a fresh copy of it (a pod's own disk) and the store.
func (s *scheduler) place(index int) (dir string, env []string, err error) {
	o := s.c.o
	env = append(append([]string(nil), s.c.env...),
		fmt.Sprintf("JOB_COMPLETION_INDEX=%d", index), fmt.Sprintf("IMPACTBENCH_SHARDS=%d", o.Indexes),
		fmt.Sprintf("IMPACTBENCH_WORKERS=%d", o.Workers))
	if o.Cluster == StoreDir {
		return filepath.Join(s.c.dir, "shared"), env, nil
	}
	s.mu.Lock()
	s.pods++
	dir = filepath.Join(s.c.dir, fmt.Sprintf("pod-%03d-index-%d", s.pods, index))
	s.mu.Unlock()
	if err := copyTree(s.c.tmpl, dir); err != nil {
		return "", nil, err
	}
	return dir, append(env, s.c.store.env(dir, layout.CallsDirName)...), nil
}

// samplePorts names a worker's client ports as label until it exits.
func (c *cluster) samplePorts(pid int, label string, exited <-chan struct{}) {
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		ports := socketPorts(pid)
		c.ownMu.Lock()
		if c.owners == nil {
			c.owners, c.seen = map[int]string{}, map[int]map[int]bool{}
		}
		if c.seen[pid] == nil {
			c.seen[pid] = map[int]bool{}
		}
		for p := range ports {
			c.owners[p] = label
			c.seen[pid][p] = true
		}
		c.ownMu.Unlock()
		select {
		case <-exited:
			return
		case <-tick.C:
		}
	}
}

// stopAll kills every running worker (a launch failed).
func (s *scheduler) stopAll() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, p := range s.running {
		_ = p.cmd.Process.Kill()
	}
}

// killAt waits until the fake has answered at calls, then kills the two
// running workers started last with SIGKILL and starts a duplicate of a
// third running index.
func (s *scheduler) killAt(ctx context.Context, calls int64, done <-chan struct{}) {
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for s.c.work.calls.total() < calls {
		select {
		case <-done:
			return
		case <-tick.C:
		}
	}
	k := &ClusterKill{At: time.Since(s.start).Seconds(), Duplicate: -1}
	s.mu.Lock()
	idx := make([]int, 0, len(s.running))
	for i := range s.running {
		idx = append(idx, i)
	}
	// The latest started are the furthest from done: a worker near its
	// end may exit on its own before the signal lands (seen under load).
	slices.SortFunc(idx, func(a, b int) int {
		if d := cmp.Compare(s.running[b].run.Start, s.running[a].run.Start); d != 0 {
			return d
		}
		return cmp.Compare(b, a)
	})
	victims := idx[:min(2, len(idx))]
	for _, i := range victims {
		freeze(s.running[i].cmd.Process.Pid)
	}
	ports := map[int]bool{}
	s.c.ownMu.Lock()
	for _, i := range victims {
		pid := s.running[i].cmd.Process.Pid
		for p := range socketPorts(pid) {
			ports[p] = true
		}
		for p := range s.c.seen[pid] {
			ports[p] = true
		}
	}
	s.c.ownMu.Unlock()
	k.InFlightKilled, k.InFlightAll = s.c.work.calls.inFlightFrom(ports)
	s.c.killedPorts, s.c.killTime = ports, time.Now()
	if len(ports) == 0 {
		k.InFlightKilled = -1
	}
	for _, i := range victims {
		s.killed[i] = true
		_ = s.running[i].cmd.Process.Kill()
		k.Killed = append(k.Killed, i)
	}
	if len(idx) > 2 {
		k.Duplicate = idx[2]
	}
	s.mu.Unlock()
	s.c.res.Kill = k
	if k.Duplicate >= 0 {
		if _, err := s.launch(ctx, k.Duplicate, true); err != nil {
			k.Duplicate = -1
		}
	}
}

// copyTree copies the regular files under src to dst.
func copyTree(src, dst string) error {
	return filepath.WalkDir(src, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, path)
		if err != nil {
			return err
		}
		to := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(to, 0o755)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(to, b, 0o644)
	})
}
