package cli

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/metrics"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"time"
)

// StartProfiles writes a CPU profile to $IMPACTBENCH_CPUPROFILE and a heap
// profile to $IMPACTBENCH_MEMPROFILE when they are set. They are environment
// variables, not flags, so the bench harness's child runs can be profiled
// without changing their command lines; "%p" in a path becomes the process
// id, so impactbench-bench (which runs the fake provider) and the measured
// child write separate files. The returned func stops and flushes.
//
// The heap profile is the one taken when the live heap was largest, not at
// exit: what a peak-RSS regression needs explained is what was live at the
// peak, and by exit most of it is gone.
func StartProfiles(stderr io.Writer) func() {
	var stops []func()
	if path := profilePath("IMPACTBENCH_CPUPROFILE"); path != "" {
		f, err := os.Create(path)
		if err != nil {
			fmt.Fprintf(stderr, "impactbench: IMPACTBENCH_CPUPROFILE: %v\n", err)
		} else if err := pprof.StartCPUProfile(f); err != nil {
			fmt.Fprintf(stderr, "impactbench: IMPACTBENCH_CPUPROFILE: %v\n", err)
			f.Close()
		} else {
			stops = append(stops, func() { pprof.StopCPUProfile(); f.Close() })
		}
	}
	if path := profilePath("IMPACTBENCH_MEMPROFILE"); path != "" {
		stops = append(stops, startPeakHeapProfile(path, stderr))
	}
	return func() {
		for _, s := range stops {
			s()
		}
	}
}

// peakSampleEvery is how often the live heap is checked for a new peak.
const peakSampleEvery = 100 * time.Millisecond

// startPeakHeapProfile keeps in memory the heap profile of the largest live
// heap seen (checked every peakSampleEvery, and once more at the end) and
// writes it to path when stopped.
func startPeakHeapProfile(path string, stderr io.Writer) func() {
	var (
		mu   sync.Mutex
		peak uint64
		best []byte
	)
	sample := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	take := func() {
		metrics.Read(sample)
		live := sample[0].Value.Uint64()
		mu.Lock()
		defer mu.Unlock()
		// Re-profiling costs a stop-the-world walk: only on a new peak
		// that is 5 % above the last.
		if best != nil && live <= peak+peak/20 {
			return
		}
		var buf bytes.Buffer
		if err := pprof.Lookup("heap").WriteTo(&buf, 0); err != nil {
			return
		}
		peak, best = live, buf.Bytes()
	}
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		t := time.NewTicker(peakSampleEvery)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				take()
			}
		}
	}()
	return func() {
		close(done)
		<-finished
		runtime.GC()
		take()
		mu.Lock()
		defer mu.Unlock()
		if err := os.WriteFile(path, best, 0o644); err != nil {
			fmt.Fprintf(stderr, "impactbench: IMPACTBENCH_MEMPROFILE: %v\n", err)
			return
		}
		fmt.Fprintf(stderr, "impactbench: heap profile at the peak live heap (%.1f MB) written to %s\n", float64(peak)/(1<<20), path)
	}
}

func profilePath(env string) string {
	return strings.ReplaceAll(os.Getenv(env), "%p", strconv.Itoa(os.Getpid()))
}
