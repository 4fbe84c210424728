//go:build linux

package benchharness

import (
	"bufio"
	"bytes"
	"os"
	"strconv"
	"time"
)

// privateEvery is how often the child's private memory is sampled.
const privateEvery = 50 * time.Millisecond

// watchPrivate samples pid's private (anonymous) resident memory until stop
// closes and returns its peak in MB through the returned func. Peak RSS
// (ru_maxrss) also counts the executable's pages, which are shared and grow
// with the binary, not with what a run holds; this is what a run holds.
func watchPrivate(pid int, stop <-chan struct{}) func() float64 {
	path := "/proc/" + strconv.Itoa(pid) + "/status"
	done := make(chan struct{})
	var peakKB int64
	go func() {
		defer close(done)
		t := time.NewTicker(privateEvery)
		defer t.Stop()
		for {
			peakKB = max(peakKB, rssAnonKB(path))
			select {
			case <-stop:
				return
			case <-t.C:
			}
		}
	}()
	return func() float64 {
		<-done
		return float64(peakKB) / 1024
	}
}

// rssAnonKB reads the RssAnon line of a /proc/<pid>/status file (0 when
// the process is gone or the kernel has no such line).
func rssAnonKB(path string) int64 {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		rest, ok := bytes.CutPrefix(sc.Bytes(), []byte("RssAnon:"))
		if !ok {
			continue
		}
		f := bytes.Fields(rest)
		if len(f) == 0 {
			return 0
		}
		kb, _ := strconv.ParseInt(string(f[0]), 10, 64)
		return kb
	}
	return 0
}
