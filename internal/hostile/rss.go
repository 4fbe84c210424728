package hostile

import (
	"bufio"
	"os"
	"strconv"
	"strings"
)

// peakRSS is this process's peak resident set in bytes (Linux's VmHWM),
// or 0 where /proc does not say. It is read in the child itself: the
// rusage a parent gets counts, on Linux, the parent's own memory at the
// fork that started the child.
func peakRSS() int64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			if err != nil {
				return 0
			}
			return kb << 10
		}
	}
	return 0
}
