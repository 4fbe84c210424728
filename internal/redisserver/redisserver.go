// Package redisserver starts a private redis-server (Debian's package) on a
// free loopback port, with its files in a directory of the caller's, for
// the tests of the shared rate limit and for the benchmark harness. It
// persists nothing (no RDB snapshots, no append-only file): a restart
// starts empty, as a Redis that lost its state does.
package redisserver

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// ErrNotInstalled is returned by Start when redis-server is not on PATH.
var ErrNotInstalled = errors.New("redis-server is not installed (Debian: apt-get install -y redis-server)")

// Server is one running redis-server.
type Server struct {
	Port int
	dir  string
	cmd  *exec.Cmd
	done chan error
}

// Start runs redis-server on a free port of 127.0.0.1 with dir as its
// working directory and waits until it accepts connections.
func Start(ctx context.Context, dir string) (*Server, error) {
	if _, err := exec.LookPath("redis-server"); err != nil {
		return nil, ErrNotInstalled
	}
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	s := &Server{Port: port, dir: dir}
	return s, s.start(ctx)
}

// URL is redis://127.0.0.1:<port>/0.
func (s *Server) URL() string { return fmt.Sprintf("redis://127.0.0.1:%d/0", s.Port) }

// Addr is 127.0.0.1:<port>.
func (s *Server) Addr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(s.Port)) }

func (s *Server) start(ctx context.Context) error {
	cmd := exec.Command("redis-server",
		"--port", strconv.Itoa(s.Port), "--bind", "127.0.0.1", "--protected-mode", "yes",
		"--save", "", "--appendonly", "no", "--dir", s.dir, "--daemonize", "no",
		"--logfile", filepath.Join(s.dir, "redis.log"))
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("redisserver: start: %w", err)
	}
	s.cmd, s.done = cmd, make(chan error, 1)
	go func() { s.done <- cmd.Wait() }()
	deadline := time.Now().Add(10 * time.Second)
	for {
		if ping(s.Addr()) == nil {
			return nil
		}
		select {
		case err := <-s.done:
			s.cmd = nil
			return fmt.Errorf("redisserver: redis-server exited at start (%v): %s", err, s.logTail())
		case <-ctx.Done():
			s.Stop()
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			s.Stop()
			return fmt.Errorf("redisserver: no answer on %s after 10s: %s", s.Addr(), s.logTail())
		}
	}
}

// Stop kills the server (SIGKILL: what a crash or a lost node looks like)
// and waits for it to exit. Stopping a stopped server does nothing.
func (s *Server) Stop() {
	if s.cmd == nil {
		return
	}
	_ = s.cmd.Process.Kill()
	<-s.done
	s.cmd = nil
}

// Restart starts the server again on the same port, empty.
func (s *Server) Restart(ctx context.Context) error {
	s.Stop()
	return s.start(ctx)
}

func (s *Server) logTail() string {
	b, _ := os.ReadFile(filepath.Join(s.dir, "redis.log"))
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	return strings.Join(lines[max(0, len(lines)-3):], " | ")
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("redisserver: find a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// ping sends an inline PING and expects +PONG.
func ping(addr string) error {
	c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond)
	if err != nil {
		return err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(500 * time.Millisecond))
	if _, err := c.Write([]byte("PING\r\n")); err != nil {
		return err
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return err
	}
	if !strings.HasPrefix(line, "+PONG") {
		return fmt.Errorf("answered %q", strings.TrimSpace(line))
	}
	return nil
}
