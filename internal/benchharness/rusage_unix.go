//go:build unix

package benchharness

import (
	"os"
	"runtime"
	"syscall"
	"time"
)

// maxRSSMB is the child's peak resident set size in MB (ru_maxrss is in
// kilobytes on Linux and the BSDs, in bytes on Darwin).
func maxRSSMB(ps *os.ProcessState) float64 {
	ru, ok := ps.SysUsage().(*syscall.Rusage)
	if !ok || ru == nil {
		return 0
	}
	kb := float64(ru.Maxrss)
	if runtime.GOOS == "darwin" || runtime.GOOS == "ios" {
		kb /= 1024
	}
	return kb / 1024
}

// selfCPU is this process's user+system CPU time so far (children excluded).
func selfCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
