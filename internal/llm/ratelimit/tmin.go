package ratelimit

import (
	"math"
	"time"
)

// Workload describes a run for TMin. Token figures are either averages per
// call or totals; totals win when set (they capture the quadratic growth of
// multi-turn context better than an average per call).
type Workload struct {
	Conversations int
	Turns         int // simulated-user and target calls per conversation, each
	JudgeCalls    int // judge calls per conversation

	InputTokensPerCall  int
	OutputTokensPerCall int
	InputTokens         int64 // total over the run; overrides the per-call figure
	OutputTokens        int64

	// Per-role latencies; zero takes the latency argument of TMin.
	UserLatency, TargetLatency, JudgeLatency time.Duration
}

// Breakdown explains a TMin result: each lower bound on wall time, the one
// that binds, and the concurrency needed to reach it.
type Breakdown struct {
	Calls        int64
	InputTokens  int64
	OutputTokens int64

	// The lower bounds (0 when that limit is not set).
	CriticalPath     time.Duration // one conversation's calls, in sequence
	RequestBound     time.Duration // calls / RPM
	TokenBound       time.Duration // (input+output) / TPM
	InputBound       time.Duration // input / ITPM
	OutputBound      time.Duration // output / OTPM
	ConcurrencyBound time.Duration // calls · mean latency / MaxInFlight

	// Binding names the largest bound: "critical path", "requests",
	// "tokens", "input tokens", "output tokens" or "concurrency".
	Binding string
	// CallRate is the sustainable calls per second under the rate bounds
	// (+Inf when nothing limits the rate).
	CallRate float64
	// InFlight is CallRate × mean latency (Little's law): the concurrency a
	// scheduler must keep to reach the bound, capped by the conversations
	// that can run at once.
	InFlight float64
	// MeanLatency is the call-weighted mean latency.
	MeanLatency time.Duration
}

// TMin is the physical lower bound on wall time for w against one pool with
// limits lim (see the providers-and-performance notes, §2.3):
//
//	max(T·(L_user+L_target) + J·L_judge, C/RPM, Tok/TPM, Tin/ITPM, Tout/OTPM, C·L/K)
//
// latency is the per-call latency for roles without their own.
func TMin(w Workload, lim Limits, latency time.Duration) (time.Duration, Breakdown) {
	or := func(d time.Duration) time.Duration {
		if d > 0 {
			return d
		}
		return latency
	}
	lu, lt, lj := or(w.UserLatency), or(w.TargetLatency), or(w.JudgeLatency)
	perConv := int64(2*w.Turns + w.JudgeCalls)
	var b Breakdown
	b.Calls = int64(w.Conversations) * perConv
	b.InputTokens, b.OutputTokens = w.InputTokens, w.OutputTokens
	if b.InputTokens <= 0 {
		b.InputTokens = b.Calls * int64(w.InputTokensPerCall)
	}
	if b.OutputTokens <= 0 {
		b.OutputTokens = b.Calls * int64(w.OutputTokensPerCall)
	}
	b.CriticalPath = time.Duration(w.Turns)*(lu+lt) + time.Duration(w.JudgeCalls)*lj
	if perConv > 0 {
		b.MeanLatency = b.CriticalPath / time.Duration(perConv)
	}

	perMinute := func(amount int64, limit int) time.Duration {
		if limit <= 0 || amount <= 0 {
			return 0
		}
		return time.Duration(float64(amount) / float64(limit) * float64(time.Minute))
	}
	b.RequestBound = perMinute(b.Calls, lim.RPM)
	b.TokenBound = perMinute(b.InputTokens+b.OutputTokens, lim.TPM)
	b.InputBound = perMinute(b.InputTokens, lim.ITPM)
	b.OutputBound = perMinute(b.OutputTokens, lim.OTPM)
	if lim.MaxInFlight > 0 {
		b.ConcurrencyBound = time.Duration(float64(b.Calls) * float64(b.MeanLatency) / float64(lim.MaxInFlight))
	}

	bounds := []struct {
		name string
		d    time.Duration
	}{
		{"critical path", b.CriticalPath},
		{"requests", b.RequestBound},
		{"tokens", b.TokenBound},
		{"input tokens", b.InputBound},
		{"output tokens", b.OutputBound},
		{"concurrency", b.ConcurrencyBound},
	}
	wmin, rateBound := time.Duration(0), time.Duration(0)
	for i, x := range bounds {
		if x.d > wmin || i == 0 {
			wmin, b.Binding = x.d, x.name
		}
		if i > 0 {
			rateBound = max(rateBound, x.d)
		}
	}

	b.CallRate = math.Inf(1)
	if rateBound > 0 {
		b.CallRate = float64(b.Calls) / rateBound.Seconds()
	}
	b.InFlight = float64(w.Conversations)
	if !math.IsInf(b.CallRate, 1) {
		b.InFlight = math.Min(b.InFlight, b.CallRate*b.MeanLatency.Seconds())
	}
	return wmin, b
}
