package runner

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/impactbench/impactbench/internal/layout"
	"github.com/impactbench/impactbench/internal/llm"
	"github.com/impactbench/impactbench/internal/scenarioset"
	"github.com/impactbench/impactbench/internal/until"
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
	if err := until.Run(ctx, r, r.Targets(), until.Options{HalfWidth: 0.3, MaxRounds: 6}); err != nil {
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
	vs, err := scenarioset.ItemSet(bench)
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
	if err := until.Run(ctx, r2, r2.Targets(), until.Options{HalfWidth: 0.3, MaxRounds: 6}); err != nil {
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

func readUntilFile(t *testing.T, bench string) until.State {
	t.Helper()
	var st until.State
	b, err := os.ReadFile(filepath.Join(bench, layout.UntilFile))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &st); err != nil {
		t.Fatal(err)
	}
	return st
}
