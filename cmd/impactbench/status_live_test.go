package main

import (
	"encoding/json"
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

	// --json: the same facts, with the pass rates and their intervals.
	var st struct {
		Live    struct{ Running bool } `json:"live"`
		Targets []struct {
			Target        string
			Conversations *struct{ N, Expected int }
		} `json:"targets"`
		Leaderboard []struct {
			Model            string   `json:"model"`
			PositivePassRate *float64 `json:"positive_pass_rate"`
			PositiveCI       *struct {
				Low, High *float64
				Method    string
				Clusters  int
				N         int
			} `json:"positive_ci"`
			Leaderboard *struct{ Score *float64 } `json:"leaderboard"`
		} `json:"leaderboard"`
	}
	if err := json.Unmarshal([]byte(p.mustRun("status", "qs", "--json").stdout), &st); err != nil {
		t.Fatalf("status --json: %v", err)
	}
	if st.Live.Running || len(st.Targets) != 1 || st.Targets[0].Conversations == nil || st.Targets[0].Conversations.N != 16 {
		t.Errorf("status --json targets = %+v (running %v)", st.Targets, st.Live.Running)
	}
	if len(st.Leaderboard) != 1 {
		t.Fatalf("status --json leaderboard = %+v", st.Leaderboard)
	}
	lb := st.Leaderboard[0]
	if lb.PositivePassRate == nil || lb.PositiveCI == nil || lb.PositiveCI.Low == nil || lb.PositiveCI.High == nil ||
		lb.PositiveCI.Method == "" || lb.PositiveCI.Clusters == 0 || lb.Leaderboard == nil || lb.Leaderboard.Score == nil {
		t.Errorf("status --json lacks pass rates with intervals: %+v", lb)
	}
}

// slowOfflineConfig is the quickstart on the offline models with a latency
// per simulated-user and target call, so that a run is mid-flight for a few
// seconds; the judge and generator answer at once.
func slowOfflineConfig(latency time.Duration) string {
	return offlineConfigOf{Generator: true, Latency: latency.String(), Careful: 0.9}.yaml()
}
