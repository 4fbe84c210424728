//go:build darwin || dragonfly || freebsd || linux || netbsd || openbsd

package fsx

import (
	"errors"
	"syscall"
)

func lock(f lockable, wait bool) error { return lockAs(f, false, wait) }

func lockAs(f lockable, shared, wait bool) error {
	how := syscall.LOCK_EX
	if shared {
		how = syscall.LOCK_SH
	}
	if !wait {
		how |= syscall.LOCK_NB
	}
	for {
		err := syscall.Flock(int(f.Fd()), how)
		switch {
		case err == nil:
			return nil
		case errors.Is(err, syscall.EINTR):
			continue
		case errors.Is(err, syscall.EWOULDBLOCK):
			return ErrLocked
		}
		return err
	}
}

func unlock(f lockable) error { return syscall.Flock(int(f.Fd()), syscall.LOCK_UN) }

// ProcessAlive reports whether a process with this id exists (signal 0
// probes it without disturbing it; EPERM means it exists under another user).
func ProcessAlive(pid int) bool {
	if pid <= 0 {
		return false
	}
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}
