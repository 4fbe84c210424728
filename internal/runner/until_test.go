package runner

import (
	"encoding/json"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/impactbench/impactbench/internal/llm"
	"github.com/impactbench/impactbench/internal/stats"
)

// run --until grows the set round by round where the intervals are wide
// and stops when every headline interval is within the target; the rounds
// and intervals are recorded, each grown set is a version of its own, and
// running it again resumes the same rounds without paying for anything.
func TestRunUntilGrowsTheSetUntilPrecise(t *testing.T) {
	ctx := t.Context()
	cfg, bench := project(t)
	var first callLog
	r := newRunner(t, cfg, bench, Options{Clients: first.clients(nil)})
	if err := r.RunUntil(ctx, r.Targets(), UntilOptions{HalfWidth: 0.3, MaxRounds: 6}); err != nil {
		t.Fatal(err)
	}
	// Rows of an earlier round are this invocation's own: found again,
	// never replayed and counted as reused from earlier runs.
	r.Report.Settle()
	for _, p := range r.Report.Phases {
		if p.Reused != 0 {
			t.Errorf("%s %s: %d rows reused on a fresh project", p.Phase, p.Target, p.Reused)
		}
	}
	r.Close()
	st := readUntilFile(t, bench)
	if st.Stopped != "met" || len(st.Rounds) < 2 {
		t.Fatalf("until.json: stopped %q after %d round(s), want met after growing", st.Stopped, len(st.Rounds))
	}
	for _, iv := range st.Intervals {
		if !iv.Met || iv.High-iv.Low > 0.6+1e-9 || iv.Low > iv.Estimate || iv.High < iv.Estimate {
			t.Errorf("interval %+v at the stop, want within ±0.30 around its estimate", iv)
		}
	}
	vs, err := ItemSet(bench)
	if err != nil || len(vs) != len(st.Rounds) {
		t.Fatalf("%d set versions for %d rounds (%v)", len(vs), len(st.Rounds), err)
	}
	for i, rd := range st.Rounds[1:] {
		if !reflect.DeepEqual(vs[i+1].Added, rd.Bases) || vs[i+1].How != "grow" {
			t.Errorf("round %d added %v, set version %d %+v", rd.Round, rd.Bases, i+2, vs[i+1])
		}
	}

	var again callLog
	r2 := newRunner(t, cfg, bench, Options{Clients: again.clients(nil)})
	if err := r2.RunUntil(ctx, r2.Targets(), UntilOptions{HalfWidth: 0.3, MaxRounds: 6}); err != nil {
		t.Fatal(err)
	}
	r2.Close()
	if n := len(again.purposes); n != 0 {
		t.Errorf("running --until again paid %d calls, want none", n)
	}
	if st2 := readUntilFile(t, bench); !reflect.DeepEqual(st2.Rounds, st.Rounds) || st2.Stopped != "met" {
		t.Errorf("the resumed run's rounds %+v differ from %+v", st2.Rounds, st.Rounds)
	}
	if first.count(llm.PurposeGenScenarios) < 2 {
		t.Error("no round grew the set")
	}
}

func readUntilFile(t *testing.T, bench string) UntilState {
	t.Helper()
	var st UntilState
	b, err := os.ReadFile(filepath.Join(bench, UntilFile))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &st); err != nil {
		t.Fatal(err)
	}
	return st
}

// The rule run --until follows — look after each round, stop when the
// confidence sequence is within ±half, else grow by grownSize — keeps its
// coverage at the data-dependent stop, also when a few "hot" scenarios
// carry the behaviour (seeded simulation, 400 runs per cell).
func TestRunUntilRuleCoversAtTheStop(t *testing.T) {
	type cell struct {
		name      string
		hot       float64 // share of hot scenarios
		pHot, p   float64 // their rate, the others'
		m         int     // conversations per scenario
		half      float64
		truth     float64
		startSize int
	}
	cells := []cell{
		{"10% hot, m=12, ±0.10", 0.10, 0.95, 0.02, 12, 0.10, 0, 6},
		{"5% hot, m=12, ±0.075", 0.05, 0.95, 0.02, 12, 0.075, 0, 6},
		{"50% at 0.3/0.7, m=4, ±0.10", 0.5, 0.7, 0.3, 4, 0.10, 0, 3},
	}
	for ci, c := range cells {
		c.truth = c.hot*c.pHot + (1-c.hot)*c.p
		rng := rand.New(rand.NewPCG(20261126, uint64(ci)))
		const reps, maxG = 400, 400
		covered, rounds, size := 0, 0, 0
		for range reps {
			cs := stats.NewBettingCS(untilConf, c.m)
			have, added := 0, c.startSize
			var lo, hi float64
			for {
				round := make([]stats.ClusterSum, added)
				for i := range round {
					p := c.p
					if rng.Float64() < c.hot {
						p = c.pHot
					}
					passed := 0
					for range c.m {
						if rng.Float64() < p {
							passed++
						}
					}
					round[i] = stats.Binary(passed, c.m)
				}
				have += added
				lo, hi = cs.Add(round...)
				rounds++
				if hi-lo <= 2*c.half || have >= maxG {
					break
				}
				added = min(grownSize(have, hi-lo, c.half), maxG) - have
			}
			size += have
			if lo <= c.truth && c.truth <= hi {
				covered++
			}
		}
		cov := float64(covered) / reps
		t.Logf("%s: covers %.1f%% at the stop, %.1f rounds and %.0f base scenarios on average", c.name, 100*cov, float64(rounds)/reps, float64(size)/reps)
		if cov < 0.93 {
			t.Errorf("%s: coverage at the stop %.3f, want ≥ 0.93", c.name, cov)
		}
	}
}
