package stages

import (
	"context"
	"errors"

	"github.com/impactbench/impactbench/internal/artifacts"
	"github.com/impactbench/impactbench/internal/llm"
	"github.com/impactbench/impactbench/internal/prompts"
)

// ConverseOptions say how a conversation's simulated user is checked
// beyond its turns (SimSpec.TurnChecks).
type ConverseOptions struct {
	// Audit is the model that audits each finished attempt
	// (AuditConversation); nil for none.
	Audit *NamedClient
	// Redos is how many times an invalid attempt is made again with a
	// fresh seed (SimSpec.Redo) before it is kept, marked invalid.
	Redos int
	// AuditReplyChars, when positive, has the audit read the first that
	// many characters of each target reply (AuditOptions.ReplyChars).
	AuditReplyChars int
	// Sample, when set, has the audit read only the attempts the turn
	// checks flagged and a seeded share of the others; nil audits every
	// attempt.
	Sample *AuditSampling
}

// AuditSampling is the rule of a sampled audit: the first attempt of a
// conversation is audited when the turn checks flagged it (a reply asked
// again, or the attempt ended invalid), when the suspect check finds
// meta-talk in its user messages (suspectTranscript), or when its draw
// falls below Share; every redo is audited (an earlier attempt was
// invalid). The draw is a hash of the master seed, scenario, target and
// sample, so resume, shards and batch waves draw alike and a redo does
// not draw again.
type AuditSampling struct {
	Share float64
}

// auditDraw is the conversation's uniform draw in [0, 1).
func auditDraw(spec SimSpec) float64 {
	h := seedOf(spec.Seed, "audit_sample", spec.Scenario.ID, spec.TargetID, itoa(spec.Sample))
	return float64(h>>11) / (1 << 53)
}

// auditRoute is a first attempt's audit stratum, whether it is audited,
// and what the suspect check found (with AuditSuspect).
type auditRoute struct {
	stratum string
	audited bool
	suspect string
}

// route decides a first attempt's stratum: flagged, else suspect, else
// drawn or skipped. The suspect check runs before the draw so that a
// suspect conversation is audited whatever its draw, and the draw keeps
// meaning "a random share of the conversations no check singled out".
func (s *AuditSampling) route(spec SimSpec, conv artifacts.Conversation) auditRoute {
	if conv.Status == artifacts.StatusInvalid || conv.Fidelity != nil && len(conv.Fidelity.Reasks) > 0 {
		return auditRoute{stratum: artifacts.AuditFlagged, audited: true}
	}
	if found := suspectTranscript(conv.Transcript); found != "" {
		return auditRoute{stratum: artifacts.AuditSuspect, audited: true, suspect: found}
	}
	if auditDraw(spec) < s.Share {
		return auditRoute{stratum: artifacts.AuditSampled, audited: true}
	}
	return auditRoute{stratum: artifacts.AuditSkipped}
}

// Converse makes one conversation as the benchmark keeps it: Simulate,
// then the verdict on its simulated user — the turn checks' (an attempt
// whose reply failed them after its re-asks ends with status invalid) and
// the audit's — and, while that verdict is invalid and redos are left, the
// whole conversation again with a fresh seed. The conversation returned
// is the last attempt, with Validity, every re-ask and redo in Fidelity,
// and Usage summing every attempt and audit. An attempt that fails
// (status error or budget) is returned as it is, unaudited. An audit that
// fails without a fatal error leaves Validity.Valid null with its Error:
// the conversation stands, and the runner asks again next run. Errors are
// Simulate's, and an audit's fatal ones.
func Converse(ctx context.Context, user, target llm.Client, p *prompts.Set, spec SimSpec, opts ConverseOptions) (artifacts.Conversation, error) {
	var fid artifacts.Fidelity
	var total, userTotal, auditTotal llm.Usage
	finish := func(conv artifacts.Conversation, err error) (artifacts.Conversation, error) {
		conv.Usage = artifacts.UsageFrom(total)
		conv.UserUsage, conv.AuditUsage = usageRecord(userTotal), usageRecord(auditTotal)
		conv.Fidelity = nil
		if len(fid.Reasks)+len(fid.Redos) > 0 {
			conv.Fidelity = &fid
		}
		return conv, err
	}
	var route auditRoute
	for redo := 0; ; redo++ {
		spec.Redo = redo
		conv, u, err := simulate(ctx, user, target, p, spec)
		total, userTotal = total.Add(u.all), userTotal.Add(u.user)
		if conv.Fidelity != nil {
			fid.Reasks = append(fid.Reasks, conv.Fidelity.Reasks...)
		}
		if err != nil || conv.Status == artifacts.StatusError || conv.Status == artifacts.StatusBudget {
			return finish(conv, err)
		}
		audit := opts
		if s := opts.Sample; s != nil && redo == 0 {
			if route = s.route(spec, conv); !route.audited {
				audit.Audit = nil
			}
		}
		v, au, err := userVerdict(ctx, p, spec, conv, audit)
		total, auditTotal = total.Add(au), auditTotal.Add(au)
		if redo == 0 && route.stratum == artifacts.AuditSampled && v.IsInvalid() {
			route.stratum = artifacts.AuditSampledInvalid
		}
		conv.Validity = opts.Sample.mark(v, route)
		if err != nil || !v.IsInvalid() || redo >= opts.Redos {
			return finish(conv, err)
		}
		fid.Redos = append(fid.Redos, artifacts.Redo{Redo: redo + 1, Failed: v.Failed, Reason: v.Reason, Status: conv.Status})
	}
}

// userVerdict is the verdict on one attempt's simulated user: invalid when
// a turn check ended it, else the audit's, else valid by the turn checks
// (nil when nothing was checked).
func userVerdict(ctx context.Context, p *prompts.Set, spec SimSpec, conv artifacts.Conversation, opts ConverseOptions) (*artifacts.Validity, llm.Usage, error) {
	if conv.Status == artifacts.StatusInvalid {
		f := false
		var failed []string
		if conv.Fidelity != nil && len(conv.Fidelity.Reasks) > 0 {
			failed = []string{conv.Fidelity.Reasks[len(conv.Fidelity.Reasks)-1].Check}
		}
		return &artifacts.Validity{Valid: &f, Checks: "turns", Failed: failed, Reason: conv.StatusReason}, llm.Usage{}, nil
	}
	checks := ""
	if spec.TurnChecks {
		checks = "turns"
	}
	if opts.Audit == nil {
		if checks == "" {
			return nil, llm.Usage{}, nil
		}
		t := true
		return &artifacts.Validity{Valid: &t, Checks: checks}, llm.Usage{}, nil
	}
	if checks != "" {
		checks += "+"
	}
	v, u, err := AuditConversationWith(ctx, opts.Audit.Client, p, spec.Scenario, conv, AuditOptions{Judge: opts.Audit.Name, ReplyChars: opts.AuditReplyChars})
	v.Checks = checks + "audit"
	if err != nil {
		if fatal(ctx, err) || errors.Is(err, llm.ErrBudgetExceeded) {
			return nil, u, err
		}
		v.Error = err.Error()
		v.Reason = "the audit gave no answer; the next run asks again"
	}
	return &v, u, nil
}

// mark records the conversation's stratum, the share and what the
// suspect check found on its verdict
// (v unchanged without sampling).
func (s *AuditSampling) mark(v *artifacts.Validity, r auditRoute) *artifacts.Validity {
	if s == nil || v == nil || r.stratum == "" {
		return v
	}
	share := s.Share
	v.AuditSample, v.AuditShare, v.Suspect = r.stratum, &share, r.suspect
	return v
}
