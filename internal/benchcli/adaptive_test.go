package benchcli

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/impactbench/impactbench/internal/adaptive"
	"github.com/impactbench/impactbench/internal/racemode"
)

// Bad design flags are usage errors before anything is rebuilt.
func TestAdaptiveReplayFlagErrors(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--preset", "adaptive-replay", "--replays", "0"}, "--replays 0: want at least 1"},
		{[]string{"--preset", "adaptive-replay", "--budget", "1.5"}, "option Budget = 1.5"},
		{[]string{"--preset", "adaptive-replay", "--start", "3", "--max", "2"}, "option Max = 2: want at least Start (3)"},
	} {
		var out, errb bytes.Buffer
		if code := Main(c.args, &out, &errb); code != 2 || !strings.Contains(errb.String(), c.want) || out.String() != "" {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want usage error %q", c.args, code, out.String(), errb.String(), c.want)
		}
	}
}

// The replay at reduced size: two replays of the July 2026 study, the
// text naming both and the distribution, and --json the same report.
func TestAdaptiveReplayJuly(t *testing.T) {
	racemode.SkipHeavy(t)
	if testing.Short() {
		t.Skip("rebuilds the 16-model July study")
	}
	var out, errb bytes.Buffer
	args := []string{"--preset", "adaptive-replay", "--replays", "2", "--seed", "5", "--parallel", "2", "--dir", t.TempDir(), "--json"}
	if code := Main(args, &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	var rep adaptive.Report
	dec := json.NewDecoder(&out)
	dec.DisallowUnknownFields()
	if err := dec.Decode(&rep); err != nil {
		t.Fatal(err)
	}
	if len(rep.Runs) != 2 || rep.Seed != 5 || rep.Summary.Replays != 2 {
		t.Fatalf("runs %d, seed %d, summary of %d", len(rep.Runs), rep.Seed, rep.Summary.Replays)
	}
	for _, r := range rep.Runs {
		// The published study: 31,236 verdicts; the default design
		// spends (nearly) all of them and keeps ≥ 90 % of what it states.
		if r.Full != 31236 || r.DifferentFull == 0 || r.GradesFull == 0 || r.Kept() < 0.9 || r.Against() != 0 {
			t.Errorf("replay %d: full %d, %d different, %d grades, kept %.3f, %d against", r.Index, r.Full, r.DifferentFull, r.GradesFull, r.Kept(), r.Against())
		}
	}
	out.Reset()
	args = []string{"--preset", "adaptive-replay", "--replays", "1", "--budget", "0.4", "--dir", t.TempDir()}
	if code := Main(args, &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	for _, want := range []string{"1 replays, seed 2026", "budget 40.0 % of the worst case", "conversations used, of the full study's:", "goal met: no", "misses"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("text lacks %q:\n%s", want, out.String())
		}
	}
}
