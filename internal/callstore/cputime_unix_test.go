//go:build darwin || dragonfly || freebsd || linux || netbsd || openbsd

package callstore

import (
	"syscall"
	"time"
)

// cpuTime is this process's CPU time so far, user and system (the
// kernel's file-system work, such as inode allocation, is system time).
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
