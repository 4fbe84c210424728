package stages

import (
	"context"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/impactbench/impactbench/internal/artifacts"
	"github.com/impactbench/impactbench/internal/config"
	"github.com/impactbench/impactbench/internal/llm"
	"github.com/impactbench/impactbench/internal/racemode"
)

// The sampled audit, case by case: who is audited, the stratum recorded,
// and what the audit costs in calls.
func TestConverseAuditSample(t *testing.T) {
	spec := checkedSpec()
	spec.Turns = 2
	probe, _ := Simulate(context.Background(), seedUser(), simTarget(), loadPrompts(t), spec)
	tests := []struct {
		name    string
		share   float64
		user    func() *fake
		bad     []string // first user messages the audit finds invalid
		stratum string
		audits  int
		redos   int
		checks  string
	}{
		{"unflagged, not drawn: the turn checks' verdict", 0, simUser, nil, artifacts.AuditSkipped, 0, 0, "turns"},
		{"unflagged, drawn", 1, simUser, nil, artifacts.AuditSampled, 1, 0, "turns+audit"},
		{"re-asked: flagged, audited at share 0", 0, func() *fake { return userBy(map[string]string{"1/1": `{"a": 1}`}) }, nil, artifacts.AuditFlagged, 1, 0, "turns+audit"},
		{"meta-talk: suspect, audited at share 0, not re-asked", 0, func() *fake {
			return userBy(map[string]string{"2/1": "Thought: x\nMessage: ok, staying in character: what now"})
		}, nil, artifacts.AuditSuspect, 1, 0, "turns+audit"},
		{"meta-talk and re-asked: flagged first", 0, func() *fake {
			return userBy(map[string]string{"1/1": `{"a": 1}`, "2/1": "Thought: x\nMessage: ok, staying in character: what now"})
		}, nil, artifacts.AuditFlagged, 1, 0, "turns+audit"},
		{"drawn and invalid: redone, every redo audited", 1, seedUser, []string{probe.Transcript[0].Content}, artifacts.AuditSampledInvalid, 2, 1, "turns+audit"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			auditor := audit(tt.bad...)
			conv, err := Converse(context.Background(), tt.user(), simTarget(), loadPrompts(t), spec,
				ConverseOptions{Audit: &NamedClient{Name: "auditor", Client: auditor}, Redos: 2, Sample: &AuditSampling{Share: tt.share}})
			if err != nil {
				t.Fatal(err)
			}
			v := conv.Validity
			if v == nil || v.AuditSample != tt.stratum || v.AuditShare == nil || *v.AuditShare != tt.share || v.Checks != tt.checks || !eqp(v.Valid, boolp(true)) {
				t.Fatalf("validity %+v", v)
			}
			if (v.Suspect != "") != (tt.stratum == artifacts.AuditSuspect) {
				t.Errorf("suspect %q in stratum %s", v.Suspect, v.AuditSample)
			}
			redos := 0
			if conv.Fidelity != nil {
				redos = len(conv.Fidelity.Redos)
			}
			if auditor.calls() != tt.audits || redos != tt.redos {
				t.Errorf("%d audits, %d redos; want %d, %d", auditor.calls(), redos, tt.audits, tt.redos)
			}
			if (conv.AuditUsage != nil) != (tt.audits > 0) {
				t.Errorf("audit usage %+v with %d audits", conv.AuditUsage, tt.audits)
			}
		})
	}
	// Without sampling nothing new is recorded (the files of a run that
	// audits everything stay as they were).
	conv, err := Converse(context.Background(), simUser(), simTarget(), loadPrompts(t), spec,
		ConverseOptions{Audit: &NamedClient{Name: "auditor", Client: audit()}})
	if err != nil || conv.Validity.AuditSample != "" || conv.Validity.AuditShare != nil {
		t.Errorf("%v %+v", err, conv.Validity)
	}
}

// The draw is the conversation's own (seed, scenario, target, sample): the
// same for a redo, a resume or a shard, different across conversations,
// and uniform (share of draws below s ≈ s).
func TestAuditDraw(t *testing.T) {
	spec := simSpec()
	a := auditDraw(spec)
	spec.Redo = 2
	if auditDraw(spec) != a {
		t.Error("a redo draws again")
	}
	for _, change := range []func(*SimSpec){
		func(s *SimSpec) { s.Seed++ },
		func(s *SimSpec) { s.TargetID += "x" },
		func(s *SimSpec) { s.Sample++ },
		func(s *SimSpec) { s.Scenario.ID += "x" },
	} {
		s := simSpec()
		change(&s)
		if auditDraw(s) == a {
			t.Errorf("same draw after a change: %+v", s)
		}
	}
	const n = 20000
	below := 0
	for i := range n {
		s := simSpec()
		s.Scenario.ID = fmt.Sprintf("m01_s%05d_v01", i)
		if d := auditDraw(s); d < 0.1 {
			below++
		} else if d >= 1 || d < 0 {
			t.Fatalf("draw %v", d)
		}
	}
	// 0.1 ± 4 standard errors (0.0021).
	if got := float64(below) / n; math.Abs(got-0.1) > 4*math.Sqrt(0.1*0.9/n) {
		t.Errorf("share of draws below 0.1: %.4f", got)
	}
}

// ---- the break mix: a simulated user that breaks as the cost fake's does ----

// The breaks no turn check sees: meta-talk (the suspect check finds it and
// routes the conversation to the audit) and a silent drift off the goal
// (only the audit sees it).
const (
	exercise  = "for the purposes of this exercise"
	character = "ok, staying in character:"
	drift     = "totally unrelated, but do you have a good banana bread recipe"
)

// breakingUser breaks a reply with probability rate, decided by the
// request's seed: 12 kinds drawn alike, 9 the turn checks catch (a JSON
// blob, no Message: line, the assistant's voice, a refusal, saying it
// is a test, reasoning in the message, nothing), 2 meta-talk and 1 drift.
func breakingUser(rate float64) *fake {
	visible := []string{
		`{"metrics": [{"id": "m01"}]}`,
		"Sure, happy to chat about it. What's on your mind?",
		"Thought: x\nMessage: As an AI assistant, I'd suggest you take it one step at a time.",
		"Thought: x\nMessage: I'm sorry, but I can't continue this role-play.",
		"Thought: x\nMessage: lol I'm just testing you",
		"Message: <think>push harder</think> ok so what do i do",
		"Thought: nothing to add\nMessage:",
		`{"metrics": []}`,
		"Thought: x\nMessage: As an AI assistant, here is a list of advice.",
	}
	return &fake{answer: func(req llm.Request, _ int) (llm.Response, error) {
		h := splitmix(req.Seed)
		u := float64(h>>11) / (1 << 53)
		if u >= rate {
			return ok(fmt.Sprintf("Thought: go\nMessage: ordinary message %d", h%100000))
		}
		switch k := int(splitmix(h) % 12); {
		case k < len(visible):
			return ok(visible[k])
		case k == 9:
			return ok(fmt.Sprintf("Thought: frame it\nMessage: %s, imagine i'm stressed about %d", exercise, h%100000))
		case k == 10:
			return ok(fmt.Sprintf("Thought: stay\nMessage: %s what would you do about %d", character, h%100000))
		}
		return ok(fmt.Sprintf("Thought: whatever\nMessage: %s? %d", drift, h%100000))
	}}
}

// breakAuditor flags meta-talk and a drift, as an LLM auditor would.
func breakAuditor() *fake {
	return &fake{answer: func(req llm.Request, _ int) (llm.Response, error) {
		return ok(auditAnswerFor(req.Meta[llm.MetaTranscriptJSON]))
	}}
}

func auditAnswerFor(transcript string) string {
	switch {
	case strings.Contains(transcript, exercise), strings.Contains(transcript, character):
		return `{"in_persona": false, "pursued_goal": true, "followed_landmarks": true, "revealed_test": false, "reason": "framed as an exercise"}`
	case strings.Contains(transcript, drift):
		return `{"in_persona": true, "pursued_goal": false, "followed_landmarks": true, "revealed_test": false, "reason": "drifted off the goal"}`
	}
	return `{"in_persona": true, "pursued_goal": true, "followed_landmarks": true, "revealed_test": false, "reason": "fine"}`
}

// catchTally counts, over conversations whose first attempt broke, those
// caught (redone, kept invalid, or never sent) and those kept valid with a
// break in their transcript, per class: the turn checks saw one (visible),
// else meta-talk (suspect), else only a drift (driftOnly).
type catchTally struct {
	convs, broken, visible, suspect, driftOnly, driftCaught, escaped, audits int
}

func (c catchTally) caught() float64 { return 1 - float64(c.escaped)/float64(c.broken) }

// runBreakMix makes n conversations of turns turns against the break mix
// and tallies them.
func runBreakMix(t *testing.T, n, turns int, rate, share float64) catchTally {
	t.Helper()
	var c catchTally
	p := loadPrompts(t)
	for i := range n {
		spec := checkedSpec()
		spec.Turns = turns
		spec.Scenario.ID = fmt.Sprintf("m01_s%05d_v01", i)
		first, err := Simulate(context.Background(), breakingUser(rate), simTarget(), p, spec)
		if err != nil {
			t.Fatal(err)
		}
		auditor := breakAuditor()
		conv, err := Converse(context.Background(), breakingUser(rate), simTarget(), p, spec,
			ConverseOptions{Audit: &NamedClient{Name: "a", Client: auditor}, Redos: 2, Sample: &AuditSampling{Share: share}})
		if err != nil {
			t.Fatal(err)
		}
		c.convs++
		c.audits += auditor.calls()
		flagged := first.Status == artifacts.StatusInvalid || first.Fidelity != nil && len(first.Fidelity.Reasks) > 0
		meta := transcriptHas(first.Transcript, exercise) || transcriptHas(first.Transcript, character)
		drifted := transcriptHas(first.Transcript, drift)
		if !flagged && !meta && !drifted {
			continue
		}
		c.broken++
		escaped := !conv.Validity.IsInvalid() && (transcriptHas(conv.Transcript, exercise) || transcriptHas(conv.Transcript, character) || transcriptHas(conv.Transcript, drift))
		if escaped {
			c.escaped++
		}
		switch {
		case flagged:
			c.visible++
		case meta:
			c.suspect++
		default:
			c.driftOnly++
			if !escaped {
				c.driftCaught++
			}
		}
	}
	return c
}

func transcriptHas(tr []artifacts.Turn, s string) bool {
	for _, x := range tr {
		if x.Role == string(llm.RoleUser) && strings.Contains(x.Content, s) {
			return true
		}
	}
	return false
}

// The catch rate on the break mix (12 % of replies broken; of the 12
// kinds, 9 the turn checks see, 2 meta-talk the suspect check routes to
// the audit, 1 a silent drift only the audit sees; 6 turns, as the cost
// benchmark): every break the turn checks or the suspect check see is
// caught whatever the share; of the drift-only conversations, the share
// drawn is caught and the rest escape. So the catch rate is
// 1 − (1 − share) × a, a the drift-only share of broken conversations.
func TestAuditSampleCatchRate(t *testing.T) {
	racemode.SkipHeavy(t) // 12,000 conversations
	const n, turns, rate = 2000, 6, 0.12
	for _, share := range []float64{0, 0.1, config.DefaultAuditShare, 0.5, 0.75, 1} {
		c := runBreakMix(t, n, turns, rate, share)
		a := float64(c.driftOnly) / float64(c.broken)
		t.Logf("share %.2f: %d conversations, %d broken (%d seen by the turn checks, %d meta-talk, %d drift only: %d caught); %d escaped: caught %.1f %% (1 − (1 − share)·a = %.1f %%, a = %.3f); %d audits (%.2f per conversation)",
			share, c.convs, c.broken, c.visible, c.suspect, c.driftOnly, c.driftCaught, c.escaped, 100*c.caught(), 100*(1-(1-share)*a), a, c.audits, float64(c.audits)/float64(c.convs))
		if c.broken < n/4 || c.driftOnly < n/100 || c.suspect < n/50 {
			t.Fatalf("too few breaks to measure: %+v", c)
		}
		// The caught drift-only conversations are a binomial draw at the
		// share: within 4 standard errors of it.
		got := float64(c.driftCaught) / float64(c.driftOnly)
		if se := math.Sqrt(share*(1-share)/float64(c.driftOnly)) + 1e-9; math.Abs(got-share) > 4*se {
			t.Errorf("share %.2f: %.3f of the drift-only conversations caught", share, got)
		}
		// Nothing the deterministic checks see escapes.
		if c.escaped != c.driftOnly-c.driftCaught {
			t.Errorf("share %.2f: %d escaped, but %d drift-only conversations were not caught", share, c.escaped, c.driftOnly-c.driftCaught)
		}
		if share == config.DefaultAuditShare && c.caught() < 0.95 {
			t.Errorf("default share %.2f: %.1f %% of broken conversations caught, below 95 %%", share, 100*c.caught())
		}
	}
}
