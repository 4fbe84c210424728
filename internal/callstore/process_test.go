package callstore

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/impactbench/impactbench/internal/callstore/s3test"
	"github.com/impactbench/impactbench/internal/llm"
)

// childReport is what a helper process prints, one JSON line per event.
type childReport struct {
	Unit    string `json:"unit"`
	Prompt  string `json:"prompt,omitempty"`
	Answer  string `json:"answer,omitempty"`
	Adopted bool   `json:"adopted,omitempty"`
	Result  bool   `json:"result,omitempty"`
	Paid    bool   `json:"paid,omitempty"`
}

// TestHelperProcess is not a test: it is the other process of the tests
// below, started with CALLSTORE_CHILD set.
func TestHelperProcess(t *testing.T) {
	mode := os.Getenv("CALLSTORE_CHILD")
	if mode == "" {
		t.Skip("helper process of the multi-process tests")
	}
	s, err := OpenURL(context.Background(), os.Getenv("CALLSTORE_URL"), Options{Writer: os.Getenv("CALLSTORE_WRITER")})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(3)
	}
	out := json.NewEncoder(os.Stdout)
	who := os.Getenv("CALLSTORE_WHO")
	model := func(unit string) llm.Client {
		return llm.ClientFunc(func(_ context.Context, r llm.Request) (llm.Response, error) {
			out.Encode(childReport{Unit: unit, Prompt: r.Messages[0].Content, Paid: true})
			time.Sleep(50 * time.Millisecond)
			return llm.Response{Text: who + " answers " + r.Messages[0].Content, Usage: llm.Usage{Requests: 1}}, nil
		})
	}
	switch mode {
	case "race": // open the unit, say so, wait for the go file, then pay one call and commit
		u, err := s.Unit("t/sim/race__s0")
		if err != nil {
			os.Exit(4)
		}
		out.Encode(childReport{Unit: "ready"})
		for _, err := os.Stat(os.Getenv("CALLSTORE_GO")); err != nil; _, err = os.Stat(os.Getenv("CALLSTORE_GO")) {
			time.Sleep(time.Millisecond)
		}
		runChildUnit(u, out, model, "hi")
	case "run": // many units, until killed
		for i := 0; ; i++ {
			childUnit(s, out, model, fmt.Sprintf("t/sim/m01_s%03d__s0", i), "a", "b", "c")
		}
	}
	os.Exit(0)
}

func childUnit(s *Store, out *json.Encoder, model func(string) llm.Client, name string, prompts ...string) {
	u, err := s.Unit(name)
	if err != nil {
		os.Exit(4)
	}
	runChildUnit(u, out, model, prompts...)
}

func runChildUnit(u *Unit, out *json.Encoder, model func(string) llm.Client, prompts ...string) {
	name := u.Name()
	var last string
	for _, p := range prompts {
		r, err := u.Client(id, model(name)).Complete(context.Background(), req(p, 0))
		if err != nil {
			os.Exit(5)
		}
		last = r.Text
		out.Encode(childReport{Unit: name, Prompt: p, Answer: r.Text})
	}
	c, err := u.Commit(context.Background(), "k", last)
	if err != nil {
		os.Exit(6)
	}
	var got string
	c.Decode(&got)
	out.Encode(childReport{Unit: name, Answer: got, Adopted: c.Adopted, Result: true})
	u.Close()
}

// child starts the helper process in mode on the store at url.
func child(t *testing.T, mode, url, who string, env ...string) (*exec.Cmd, *bufio.Scanner) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperProcess$")
	cmd.Env = append(os.Environ(), append(env, "CALLSTORE_CHILD="+mode, "CALLSTORE_URL="+url, "CALLSTORE_WHO="+who, "CALLSTORE_WRITER=shard-0-of-1")...)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	return cmd, bufio.NewScanner(out)
}

func reports(sc *bufio.Scanner) []childReport {
	var out []childReport
	for sc.Scan() {
		var r childReport
		if json.Unmarshal(sc.Bytes(), &r) == nil {
			out = append(out, r)
		}
	}
	return out
}

// stores gives a store URL of each kind and the environment its
// processes need.
func stores(t *testing.T) map[string][2]string {
	srv := s3test.Start(t, "calls")
	s3test.SetEnv(t)
	return map[string][2]string{"local": {t.TempDir(), ""}, "s3": {srv.URL("calls", "p"), "s3"}}
}

// TestTwoProcessesRaceOnOneUnit: two processes (a duplicate worker) pay
// one call at the same moment and commit: both end with the same answer
// and result, exactly one of them adopting the other's.
func TestTwoProcessesRaceOnOneUnit(t *testing.T) {
	for name, st := range stores(t) {
		t.Run(name, func(t *testing.T) {
			goFile := filepath.Join(t.TempDir(), "go")
			var scans []*bufio.Scanner
			var cmds []*exec.Cmd
			for _, who := range []string{"one", "two"} {
				cmd, sc := child(t, "race", st[0], who, "CALLSTORE_GO="+goFile)
				cmds, scans = append(cmds, cmd), append(scans, sc)
			}
			for _, sc := range scans { // both have opened the unit and wait
				if !sc.Scan() || !strings.Contains(sc.Text(), `"ready"`) {
					t.Fatalf("child not ready: %q", sc.Text())
				}
			}
			os.WriteFile(goFile, nil, 0o600)
			var results []childReport
			for i, sc := range scans {
				for _, r := range reports(sc) {
					if r.Result {
						results = append(results, r)
					}
				}
				if err := cmds[i].Wait(); err != nil {
					t.Fatalf("child %d: %v", i, err)
				}
			}
			if len(results) != 2 || results[0].Answer != results[1].Answer || results[0].Adopted == results[1].Adopted {
				t.Fatalf("results %+v: want one answer, one adopter", results)
			}
			var got string
			s, _ := OpenURL(t.Context(), st[0], Options{})
			defer s.Close()
			if _, ok := s.ReadResult("t/sim/race__s0", &got); !ok || got != results[0].Answer {
				t.Errorf("stored %q, want %q", got, results[0].Answer)
			}
		})
	}
}

// TestKill9ThenResume: a process killed with SIGKILL mid-run loses
// nothing it handed out: every answer it reported replays for free, every
// result it reported reads back, and the store takes new writes.
func TestKill9ThenResume(t *testing.T) {
	for name, st := range stores(t) {
		t.Run(name, func(t *testing.T) {
			answered := map[string]bool{} // unit and prompt handed out by a killed process
			for round := range 3 {
				cmd, sc := child(t, "run", st[0], fmt.Sprint("round", round))
				// Killed once it has handed out a few answers of its own,
				// at a moment that falls anywhere in the next call.
				var got []childReport
				fresh := 0
				for sc.Scan() && fresh < 4 {
					var r childReport
					if json.Unmarshal(sc.Bytes(), &r) == nil {
						got = append(got, r)
						if r.Paid {
							fresh++
						}
					}
				}
				time.Sleep(time.Duration(round*23) * time.Millisecond)
				cmd.Process.Signal(syscall.SIGKILL)
				got = append(got, reports(sc)...)
				cmd.Wait()
				for _, r := range got {
					if r.Paid && answered[r.Unit+" "+r.Prompt] {
						t.Errorf("round %d paid again for %s %s, answered before the kill", round, r.Unit, r.Prompt)
					}
				}
				for _, r := range got {
					if r.Answer != "" && !r.Result {
						answered[r.Unit+" "+r.Prompt] = true
					}
				}
				checkReplay(t, st[0], got)
			}
		})
	}
}

// checkReplay replays what a killed child reported, paying nothing.
func checkReplay(t *testing.T, url string, got []childReport) {
	t.Helper()
	s, err := OpenURL(t.Context(), url, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	answers, results := 0, 0
	for _, r := range got {
		switch {
		case r.Result:
			var v string
			if _, ok := s.ReadResult(r.Unit, &v); !ok || v != r.Answer {
				t.Errorf("%s: result %q, reported %q", r.Unit, v, r.Answer)
			}
			results++
		case r.Answer != "":
			u, err := s.Unit(r.Unit)
			if err != nil {
				t.Fatal(err)
			}
			a, err := u.Client(id, never(t)).Complete(t.Context(), req(r.Prompt, 0))
			if err != nil || a.Text != r.Answer {
				t.Errorf("%s %s: replayed %q %v, reported %q", r.Unit, r.Prompt, a.Text, err, r.Answer)
			}
			u.Close()
			answers++
		}
	}
	if answers < 3 {
		t.Errorf("the child reported only %d answers before the kill", answers)
	}
	t.Logf("replayed %d answers and %d results of the killed process", answers, results)
	if !strings.Contains(url, "://") {
		u, _ := s.Unit("t/sim/after_kill__s0")
		if _, err := u.Client(id, &counting{}).Complete(t.Context(), req("x", 0)); err != nil {
			t.Errorf("writing after the kill: %v", err)
		}
		u.Close()
	}
}
