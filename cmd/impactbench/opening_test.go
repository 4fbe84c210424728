package main

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
)

// isOpening: a request for the simulated user's first turn (its history
// holds the turn prompt only).
func isOpening(r fakeReq) bool { return r.Model == "fake-user" && len(r.Msgs) == 1 }

func isUser(r fakeReq) bool { return r.Model == "fake-user" }

// TestOneOpeningForEveryTarget: by default the simulated user's first turn
// is asked once per scenario variant and sample, whatever the number of
// targets, and every target is sent that opening;
// generation.independent_openings: true asks it once per target, as
// before. With T targets and R rows, the user's calls drop by R(T − 1).
func TestOneOpeningForEveryTarget(t *testing.T) {
	t.Parallel()
	const rows = 16 // 2 metrics × 2 base scenarios × 2 variants × 2 samples
	for _, n := range []int{2, 3} {
		targets := []string{"ta", "tb", "tc"}[:n]
		t.Run(fmt.Sprintf("%d targets", n), func(t *testing.T) {
			t.Parallel()
			users := map[bool]int{}
			for _, independent := range []bool{false, true} {
				f := newFakeLLM(t)
				cfg := fakeConfig(fakeOpts{baseURL: f.baseURL(), targets: targets, simConc: 4, evalConc: 4})
				if independent {
					cfg = strings.Replace(cfg, "  num_samples: 2\n", "  num_samples: 2\n  independent_openings: true\n", 1)
				}
				p := newProject(t, cfg)
				p.addBench("b", quickstartBench(t))
				p.mustRun("run", "b")
				reqs := f.requests(-1)
				openings, distinct := 0, multiset(reqs, isOpening)
				for _, r := range reqs {
					if isOpening(r) {
						openings++
					}
					if isUser(r) {
						users[independent]++
					}
				}
				want := rows
				if independent {
					want = rows * n
				}
				// The fake's hash leaves the seed out: a variant's two
				// samples differ only by it.
				if openings != want || len(distinct) != rows/2 {
					t.Errorf("independent %v: %d first-turn requests (%d distinct without seeds), want %d (%d)", independent, openings, len(distinct), want, rows/2)
				}
				if !independent {
					sameOpenings(t, p.benchDir("b"), targets)
				}
			}
			if saved := users[true] - users[false]; saved != rows*(n-1) {
				t.Errorf("user calls: %d independent, %d shared; saved %d, want %d", users[true], users[false], saved, rows*(n-1))
			}
			t.Logf("%d targets: %d user calls with independent openings, %d with one opening for every target", n, users[true], users[false])
		})
	}
}

// sameOpenings checks that every target's conversation of a row starts
// with the same user message.
func sameOpenings(t *testing.T, benchDir string, targets []string) {
	t.Helper()
	first := map[string]string{}
	for _, tg := range targets {
		convs := readJSON[[]convRow](t, filepath.Join(benchDir, "runs", tg, "conversations.json"))
		if len(convs) == 0 {
			t.Fatalf("%s: no conversations", tg)
		}
		for _, c := range convs {
			if len(c.Transcript) == 0 {
				t.Fatalf("%s %s: empty transcript", tg, c.ConvID)
			}
			key := fmt.Sprintf("%s/%d", c.ID, *c.Sample)
			msg := epochTag.ReplaceAllString(c.Transcript[0].Content, "")
			if prev, ok := first[key]; ok && prev != msg {
				t.Errorf("%s: %s opens with %q, another target with %q", key, tg, msg, prev)
			}
			first[key] = msg
		}
	}
}
