package stages

import (
	"context"
	"fmt"
	"testing"

	"github.com/impactbench/impactbench/internal/artifacts"
	"github.com/impactbench/impactbench/internal/config"
	"github.com/impactbench/impactbench/internal/racemode"
	"github.com/impactbench/impactbench/internal/stats"
)

// TestSampledAuditCoverageBreakMix is the seeded simulation with known
// truth of the valid-rollout rate as a sampled audit with the suspect
// check estimates it: runs of 216 conversations of 4 turns against the
// break mix (breakingUser, breakAuditor) at the default share, each run
// with its own master seed (so its own breaks and draws). Truth is the
// run's realised share of kept conversations the audit would pass, read
// for the skipped ones from their transcripts (the auditor is
// deterministic); the estimate and the exact 95 % interval are
// stats.SampledValidRate's, with the flagged and the suspect
// conversations known (audited in full) and the sample drawn from the
// rest. Coverage should be at least 0.95 (the interval is exact, so
// conservative); the test allows 0.93 for the noise of 200 runs.
func TestSampledAuditCoverageBreakMix(t *testing.T) {
	racemode.SkipHeavy(t) // 2 × 200 runs × 216 conversations
	if testing.Short() {
		t.Skip("86,400 conversations")
	}
	const runs, n, turns = 200, 216, 4
	share := config.DefaultAuditShare
	p := loadPrompts(t)
	for _, rate := range []float64{0.12, 0.3} {
		covered, width, suspect := 0, 0.0, 0
		for run := range runs {
			var known, knownValid, sampled, pass, unsampled, trueValid int
			for i := range n {
				spec := checkedSpec()
				spec.Turns, spec.Seed = turns, uint64(1000*run+7)
				spec.Scenario.ID = fmt.Sprintf("m01_s%05d_v01", i)
				conv, err := Converse(context.Background(), breakingUser(rate), simTarget(), p, spec,
					ConverseOptions{Audit: &NamedClient{Name: "a", Client: breakAuditor()}, Redos: 2, Sample: &AuditSampling{Share: share}})
				if err != nil {
					t.Fatal(err)
				}
				v := conv.Validity
				valid := !v.IsInvalid()
				switch v.AuditSample {
				case artifacts.AuditSkipped:
					unsampled++
					valid = !transcriptHas(conv.Transcript, exercise) && !transcriptHas(conv.Transcript, character) && !transcriptHas(conv.Transcript, drift)
				case artifacts.AuditSampled:
					sampled, pass, known = sampled+1, pass+1, known+1
				case artifacts.AuditSampledInvalid:
					sampled, known = sampled+1, known+1
				case artifacts.AuditSuspect:
					suspect++
					known++
				default:
					known++
				}
				if valid {
					trueValid++
				}
				if v.AuditSample != artifacts.AuditSkipped && !v.IsInvalid() {
					knownValid++
				}
			}
			e := stats.SampledValidRate(known, knownValid, sampled, pass, unsampled, 0.95)
			truth := float64(trueValid) / n
			if e.Lo <= truth && truth <= e.Hi {
				covered++
			}
			width += e.Hi - e.Lo
		}
		cov := float64(covered) / runs
		t.Logf("break rate %.2f, share %.2f: %d runs of %d conversations, coverage %.3f, mean width %.3f, %.1f suspect conversations per run; method %s",
			rate, share, runs, n, cov, width/runs, float64(suspect)/runs, stats.SampledValidRate(1, 1, 1, 1, 1, 0.95).Method)
		if cov < 0.93 {
			t.Errorf("break rate %.2f: coverage %.3f", rate, cov)
		}
	}
}
