package results

import (
	"slices"
	"strings"
	"testing"

	"github.com/impactbench/impactbench/internal/artifacts"
)

// invalidScore is the row of a conversation its simulated user made
// invalid: no verdict, the failure kinds.
func invalidScore(id, mid, user string, kinds ...string) artifacts.Score {
	s := score(id, mid, nil)
	s.Valid, s.Invalid, s.UserModel = F, kinds, user
	s.NullReason = "invalid conversation: …"
	return s
}

func validScore(id, mid, user string, passed *bool) artifacts.Score {
	s := score(id, mid, passed)
	s.Valid, s.UserModel = T, user
	return s
}

// Headlines rest on the valid conversations (the invalid ones have no
// verdict), the valid-rollout rate stands beside them per model, metric
// and user model, with the failure kinds — and upstream's fields are
// upstream's computation over the same rows.
func TestAggregate_ValidRollouts(t *testing.T) {
	rows := []artifacts.Score{
		validScore("a", "m01", "sim-1", T), validScore("b", "m01", "sim-1", F),
		invalidScore("c", "m01", "sim-1", artifacts.FailFormat),
		invalidScore("d", "m02", "sim-2", artifacts.FailAuditReveal, artifacts.FailAuditPersona),
		validScore("e", "m02", "sim-2", T), validScore("f", "m02", "sim-2", T),
	}
	res, err := Aggregate(Input{Metrics: metrics, Scores: rows}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	m := res[0]
	if *m.PositivePassRate != 0.5 || *m.NegativePassRate != 1 || m.NNull != 2 || m.NTotal != 6 {
		t.Errorf("rates: %s", compact(t, m.Headline()))
	}
	const want = `{"checked":6,"valid":4,"share":0.6667,"n":6,"invalid":2,"kinds":{"format":1,"audit_persona":1,"audit_reveal":1},` +
		`"by_metric":{"m01":{"n":3,"checked":3,"valid":2,"invalid":1,"share":0.6667},"m02":{"n":3,"checked":3,"valid":2,"invalid":1,"share":0.6667}},` +
		`"by_user_model":{"sim-1":{"n":3,"checked":3,"valid":2,"invalid":1,"share":0.6667},"sim-2":{"n":3,"checked":3,"valid":2,"invalid":1,"share":0.6667}}}`
	if got := compact(t, m.Validity); got != want {
		t.Errorf("validity\n got %s\nwant %s", got, want)
	}
	if h := m.Headline(); h.ValidShare == nil || *h.ValidShare != 0.6667 || h.NInvalid != 2 {
		t.Errorf("headline: %s", compact(t, h))
	}
	if line := ValidityLine(m); !strings.Contains(line, "valid rollouts 66.7% (4 of 6 checked); 2 invalid, left out of every rate (format 1, audit_persona 1, audit_reveal 1)") {
		t.Errorf("ValidityLine = %q", line)
	}
	// --upstream-only: upstream's computation over the same rows, which
	// ignores our keys (here: the same rows without them).
	up, err := Aggregate(Input{Metrics: metrics, Scores: rows}, Options{UpstreamOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	bare := slices.Clone(rows)
	for i := range bare {
		bare[i].Valid, bare[i].Invalid, bare[i].UserModel, bare[i].NullReason = nil, nil, "", ""
	}
	upBare, _ := Aggregate(Input{Metrics: metrics, Scores: bare}, Options{UpstreamOnly: true})
	if got, want := compact(t, up[0]), compact(t, upBare[0]); got != want || up[0].Validity != nil || up[0].BreakTurns != nil {
		t.Errorf("upstream-only\n got %s\nwant %s", got, want)
	}
}

// quote is evidence found in transcript message i.
func quote(i int) artifacts.Quote { return artifacts.Quote{Text: "q", Message: &i} }

// When does it break: the first assistant turn of each failure's evidence
// (message 1 is turn 1, 3 turn 2, …), as counts and a cumulative curve.
func TestAggregate_BreakTurns(t *testing.T) {
	fail := func(id string, ev ...artifacts.Quote) artifacts.Score {
		s := score(id, "m02", F)
		s.Present, s.Evidence = T, ev
		return s
	}
	rows := []artifacts.Score{
		fail("a", quote(5), quote(1)),            // turn 1 (the earliest quote)
		fail("b", quote(3)),                      // turn 2
		fail("c", quote(5)),                      // turn 3
		fail("d", artifacts.Quote{Text: "gone"}), // not located
		score("e", "m02", T), score("f", "m02", T), score("g", "m02", T), score("h", "m02", T),
		score("i", "m02", nil), // no verdict: not counted
		score("p", "m01", F),   // a positive metric's failure is an absence: no turn
	}
	res, err := Aggregate(Input{Metrics: metrics, Scores: rows}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	const want = `{"n":8,"n_failed":4,"n_located":3,"by_turn":[1,1,1],"share_failed_by_turn":[0.125,0.25,0.375],` +
		`"by_metric":{"m02":{"n":8,"n_failed":4,"n_located":3,"by_turn":[1,1,1],"share_failed_by_turn":[0.125,0.25,0.375]}}}`
	if got := compact(t, res[0].BreakTurns); got != want {
		t.Errorf("break_turns\n got %s\nwant %s", got, want)
	}
	if got := breakTurn([]artifacts.Quote{quote(0), quote(2)}); got != 0 {
		t.Errorf("quotes in user messages give turn %d", got)
	}
}

// Samples that are byte-identical conversations are named, and left out
// of every agreement figure: here the only scenario whose samples differ
// disagrees, so agreement is 0 of 1 unanimous — not 2 of 2.
func TestAggregate_IdenticalSamplesNamed(t *testing.T) {
	sample := func(id string, i int, hash string, passed *bool) artifacts.Score {
		s := withSample(score(id, "m01", passed), i)
		s.Present, s.TranscriptHash = passed, hash
		return s
	}
	rows := []artifacts.Score{
		sample("same", 0, "sha256:00000000000000aa", T), sample("same", 1, "sha256:00000000000000aa", T), sample("same", 2, "sha256:00000000000000aa", T),
		sample("diff", 0, "sha256:00000000000000b1", T), sample("diff", 1, "sha256:00000000000000b2", F), sample("diff", 2, "sha256:00000000000000b3", T),
		// Hashes not recorded (older rows): never taken for identical.
		sample("old", 0, "", F), sample("old", 1, "", F),
	}
	res, err := Aggregate(Input{Metrics: metrics, Scores: rows}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	ag := res[0].Agreement
	if ag == nil || ag.Identical == nil || ag.Identical.NGroups != 1 || !slices.Equal(ag.Identical.Scenarios, []string{"same"}) || ag.Identical.Warning != IdenticalWarning {
		t.Fatalf("identical: %s", compact(t, ag))
	}
	if ag.NGroups != 2 || *ag.UnanimousShare != 0.5 || slices.Contains(ag.ByScenario.Keys(), "same") {
		t.Errorf("agreement counts the identical scenario: %s", compact(t, ag))
	}
	// Every scenario identical: no agreement figure at all, only the name.
	res, err = Aggregate(Input{Metrics: metrics, Scores: rows[:3]}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if ag := res[0].Agreement; ag == nil || ag.Identical == nil || ag.NGroups != 0 || ag.UnanimousShare != nil || ag.PassK.Overall != nil {
		t.Errorf("all identical: %s", compact(t, ag))
	}
	// Without hashes, nothing changes.
	for i := range rows {
		rows[i].TranscriptHash = ""
	}
	res, _ = Aggregate(Input{Metrics: metrics, Scores: rows}, Options{})
	if res[0].Agreement.Identical != nil || res[0].Agreement.NGroups != 3 {
		t.Errorf("no hashes: %s", compact(t, res[0].Agreement))
	}
}

// A sampled audit: the valid-rollout rate is estimated from the sample,
// with its interval, n and share, beside the turn checks' count; an audit
// of every conversation adds nothing.
func TestAggregate_SampledAudit(t *testing.T) {
	stratum := func(s artifacts.Score, st string) artifacts.Score { s.AuditSample = st; return s }
	var rows []artifacts.Score
	add := func(n int, st string, valid bool) {
		for range n {
			id := "r" + itoa(len(rows))
			s := validScore(id, "m01", "sim", T)
			if !valid {
				s = invalidScore(id, "m01", "sim", artifacts.FailAuditPersona)
			}
			rows = append(rows, stratum(s, st))
		}
	}
	add(8, artifacts.AuditFlagged, true)
	add(2, artifacts.AuditFlagged, false)
	add(18, artifacts.AuditSampled, true)
	add(2, artifacts.AuditSampledInvalid, true) // redone and valid
	add(170, artifacts.AuditSkipped, true)
	res, err := Aggregate(Input{Metrics: metrics, Scores: rows}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	v := res[0].Validity
	e := v.Estimated
	if e == nil || e.N != 200 || e.Flagged != 10 || e.Sampled != 20 || e.SampledPass != 18 || e.Unsampled != 170 || e.AuditShare != 0.1053 {
		t.Fatalf("estimated %s", compact(t, e))
	}
	// (28 known valid + 170 × 18/20) / 200 = 0.905, below the turn checks'
	// 198/200: the sample's failures are put on the unsampled rows.
	if e.Share != 0.905 || e.Lo >= e.Share || e.Hi <= e.Share || e.Hi > 0.99 || *v.Share != 0.99 {
		t.Errorf("estimate %v [%v, %v], turn checks %v", e.Share, e.Lo, e.Hi, *v.Share)
	}
	line := ValidityLine(res[0])
	for _, want := range []string{"valid rollouts estimated 90.5% [", "from a sample", "flagged conversation audited (10), 20 of 190 unflagged (share 0.11, 18 passed)", "hypergeometric", "! the audit sampled 20"} {
		if !strings.Contains(line, want) {
			t.Errorf("ValidityLine lacks %q:\n%s", want, line)
		}
	}
	for i := range rows {
		rows[i].AuditSample = ""
	}
	if res, _ := Aggregate(Input{Metrics: metrics, Scores: rows}, Options{}); res[0].Validity.Estimated != nil || strings.Contains(ValidityLine(res[0]), "estimated") {
		t.Errorf("an audit of everything is estimated: %s", compact(t, res[0].Validity.Estimated))
	}
}

// Suspect conversations (meta-talk found by the suspect check) are audited
// in full, like flagged ones: their verdicts are known, they are not part
// of the sample, and the line names them.
func TestAggregate_SampledAuditSuspect(t *testing.T) {
	var rows []artifacts.Score
	add := func(n int, st string, valid bool) {
		for range n {
			id := "r" + itoa(len(rows))
			s := validScore(id, "m01", "sim", T)
			if !valid {
				s = invalidScore(id, "m01", "sim", artifacts.FailAuditPersona)
			}
			s.AuditSample = st
			rows = append(rows, s)
		}
	}
	add(10, artifacts.AuditFlagged, true)
	add(4, artifacts.AuditSuspect, true)
	add(2, artifacts.AuditSuspect, false)
	add(20, artifacts.AuditSampled, true)
	add(164, artifacts.AuditSkipped, true)
	res, err := Aggregate(Input{Metrics: metrics, Scores: rows}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	e := res[0].Validity.Estimated
	if e == nil || e.N != 200 || e.Flagged != 10 || e.Suspect != 6 || e.Sampled != 20 || e.Unsampled != 164 {
		t.Fatalf("estimated %s", compact(t, e))
	}
	// (14 known valid + 20 sampled + 164 × 20/20) / 200 = 0.99.
	if e.Share != 0.99 {
		t.Errorf("estimate %v", e.Share)
	}
	if line := ValidityLine(res[0]); !strings.Contains(line, "every flagged (10) and suspect (6) conversation audited, 20 of 184 unflagged") {
		t.Errorf("ValidityLine:\n%s", line)
	}
}
