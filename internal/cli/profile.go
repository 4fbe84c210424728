package cli

import (
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
)

// startProfiles writes a CPU profile to $IMPACTBENCH_CPUPROFILE and a heap
// profile to $IMPACTBENCH_MEMPROFILE when they are set. They are environment
// variables, not flags, so the bench harness's child runs can be profiled
// without changing their command lines; "%p" in a path becomes the process
// id, so `bench` (the parent, which runs the fake provider) and the measured
// child write separate files. The returned func stops and flushes.
func startProfiles(stderr io.Writer) func() {
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
		stops = append(stops, func() {
			f, err := os.Create(path)
			if err != nil {
				fmt.Fprintf(stderr, "impactbench: IMPACTBENCH_MEMPROFILE: %v\n", err)
				return
			}
			defer f.Close()
			runtime.GC()
			if err := pprof.WriteHeapProfile(f); err != nil {
				fmt.Fprintf(stderr, "impactbench: IMPACTBENCH_MEMPROFILE: %v\n", err)
			}
		})
	}
	return func() {
		for _, s := range stops {
			s()
		}
	}
}

func profilePath(env string) string {
	return strings.ReplaceAll(os.Getenv(env), "%p", strconv.Itoa(os.Getpid()))
}
