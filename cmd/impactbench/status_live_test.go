package main

import (
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestStatusDuringARun: while `run` is simulating on a slow model, `status`
// says a run is in progress and shows conversations stored so far (the
// outputs are written only when a phase ends, so without the call store it
// would say "not run yet").
func TestStatusDuringARun(t *testing.T) {
	p := newProject(t, slowOfflineConfig(150*time.Millisecond))
	p.addBench("qs", quickstartBench(t))
	run := p.start("run", "qs", "--quiet")
	stored := regexp.MustCompile(`careful\s+(\d+)/16 stored`)
	deadline := time.Now().Add(30 * time.Second)
	var last string
	seen := 0
	for time.Now().Before(deadline) && seen == 0 {
		time.Sleep(100 * time.Millisecond)
		r := p.run("status", "qs")
		if r.code != 0 {
			t.Fatalf("status during a run: %s", r)
		}
		last = r.stdout
		if !strings.Contains(last, "Run        in progress (pid ") {
			continue
		}
		if m := stored.FindStringSubmatch(last); m != nil {
			seen, _ = strconv.Atoi(m[1])
		}
	}
	if seen == 0 {
		t.Fatalf("status never showed stored conversations of a run in progress; last output:\n%s", last)
	}
	if r := run.wait(t); r.code != 0 {
		t.Fatalf("run: %s", r)
	}
	after := p.mustRun("status", "qs").stdout
	if strings.Contains(after, "in progress") || !regexp.MustCompile(`careful\s+16/16\s`).MatchString(after) {
		t.Errorf("status after the run still reads as live or incomplete:\n%s", after)
	}
}
