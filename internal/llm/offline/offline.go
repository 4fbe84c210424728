// Package offline is impactbench's built-in model: it needs no network, plays
// every role of the pipeline (metric and scenario writer, demographic
// rewriter, simulated user, target, judge, landmark checker) with plausible,
// schema-valid output, and is deterministic: the same (seed, model name,
// request content, Request.Seed) always gives the same bytes.
//
// It exists so that the whole pipeline can run end to end in tests, demos and
// load benchmarks. Its outputs are templated from banks of original prose
// chosen by a hash of the request, so it costs microseconds per call.
//
// The offline target picks, per reply, between a "careful" reply (names
// risks, asks about the person, points to other people, keeps boundaries)
// and an "accommodating" one (does what is asked, validates, no caveats).
// Careful replies always contain one of a few care-marker phrases and
// accommodating ones never do; the offline judge reads those markers, which
// makes the whole simulated benchmark measure the target's configured care.
// Targets differ by their care; metrics differ because their scenarios push
// with different intensity and their definitions have different polarity and
// judge thresholds.
package offline

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"time"

	"github.com/impactbench/impactbench/internal/config"
	"github.com/impactbench/impactbench/internal/llm"
)

// DefaultPressure is how much an offline target's care erodes over a
// conversation of nominalTurns turns when the profile does not set Pressure.
const DefaultPressure = 0.15

// nominalTurns stands in for the conversation length in the target's erosion
// formula: the target is blind to the scenario, so it cannot know the real
// turn budget. Six is upstream's usual generation.turns.
const nominalTurns = 6

// Care defaults (when the profile does not set Care) are spread over this
// range by a hash of the model name, so differently named offline targets
// behave differently.
const (
	minDefaultCare = 0.35
	maxDefaultCare = 0.85
)

// flakyMode injects a malformed gen_scenarios answer so the pipeline's repair
// path can be tested deterministically. See New.
type flakyMode int

const (
	flakyOff flakyMode = iota
	flakyCount
	flakyLandmarks
	flakyEither
)

// client is immutable after New, so it is safe for concurrent use.
type client struct {
	model     string
	modelHash uint64 // hash of the model name alone (judge thresholds)
	base      uint64 // hash of (seed, model)
	care      float64
	pressure  float64
	latency   time.Duration
	flaky     flakyMode
}

// New returns the offline model for cfg. seed is the run's master seed.
//
// Knobs:
//   - cfg.Offline.Care: base probability in [0,1] that a target reply is
//     careful. Default: a hash of cfg.Model mapped into [0.35, 0.85].
//   - cfg.Offline.Pressure: how much care erodes over a conversation. The
//     probability of a careful reply at user turn k is
//     care − pressure·(k−1)/6 − insistence, clamped to [0,1], where
//     insistence = min(0.3, 0.05 × pushy cues in the last user message).
//     Default 0.15.
//   - cfg.Offline.Latency: sleep this long per call (honouring ctx).
//   - cfg.Model containing "flaky": on a first attempt of a gen_scenarios
//     request — Request.Seed == 0 and no assistant message in
//     Request.Messages — the answer is malformed. "flaky-count" returns n−1
//     scenarios (the last one dropped; an empty list when n is 1);
//     "flaky-landmarks" omits the "landmarks" key of the last scenario, so
//     the answer fails schema validation; any other "flaky" name picks one of
//     the two by a hash of the request. Retries (CompleteJSON's correction
//     turn, or any nonzero Seed) get a well-formed answer.
func New(cfg config.ModelConfig, seed uint64) llm.Client {
	care, pressure := Profile(cfg)
	c := &client{
		model:     cfg.Model,
		modelHash: hashStrings(0, "model", cfg.Model),
		care:      care,
		pressure:  pressure,
	}
	h := newHasher(seed)
	h.str(cfg.Model)
	c.base = h.sum()
	if cfg.Offline != nil && cfg.Offline.Latency > 0 {
		c.latency = cfg.Offline.Latency
	}
	m := strings.ToLower(cfg.Model)
	switch {
	case strings.Contains(m, "flaky-count"):
		c.flaky = flakyCount
	case strings.Contains(m, "flaky-landmarks"):
		c.flaky = flakyLandmarks
	case strings.Contains(m, "flaky"):
		c.flaky = flakyEither
	}
	return c
}

// Profile returns the effective care and pressure of an offline model config
// (after defaults and clamping), so tests and reports can predict how
// offline targets rank.
func Profile(cfg config.ModelConfig) (care, pressure float64) {
	care = minDefaultCare + (maxDefaultCare-minDefaultCare)*unit(hashStrings(0, "care", cfg.Model))
	pressure = DefaultPressure
	if cfg.Offline != nil {
		if cfg.Offline.Care != nil {
			care = clamp01(*cfg.Offline.Care)
		}
		if cfg.Offline.Pressure != nil {
			pressure = *cfg.Offline.Pressure
			if pressure < 0 {
				pressure = 0
			}
		}
	}
	return care, pressure
}

// IsCareful reports whether a reply contains one of the care markers the
// offline judge looks for. Offline target replies are careful exactly when
// this is true.
func IsCareful(reply string) bool {
	for _, m := range careMarkers {
		if containsFold(reply, m) {
			return true
		}
	}
	return false
}

func clamp01(x float64) float64 {
	switch {
	case x < 0:
		return 0
	case x > 1:
		return 1
	}
	return x
}

// metaKeys are hashed, in this order, into the key of every non-target
// request: they carry the facts the offline model writes from.
var metaKeys = [...]string{
	llm.MetaBenchmarkName, llm.MetaBenchmarkDescription, llm.MetaMetricID, llm.MetaMetricName,
	llm.MetaMetricType, llm.MetaMetricDefinition, llm.MetaCount, llm.MetaTurns, llm.MetaTurn,
	llm.MetaPersona, llm.MetaUserGoal, llm.MetaLatentGoal, llm.MetaLandmark, llm.MetaLandmarksJSON,
	llm.MetaDemographic, llm.MetaTranscriptJSON,
}

// requestKey hashes everything the answer may depend on. The target's key
// deliberately leaves Meta out: the model under test must be blind to the
// test, so its reply can depend only on its messages.
func (c *client) requestKey(req llm.Request) uint64 {
	h := newHasher(c.base)
	h.str(string(req.Purpose))
	h.u64(req.Seed)
	for _, m := range req.Messages {
		h.str(string(m.Role))
		h.str(m.Content)
	}
	if req.Purpose != llm.PurposeTarget {
		for _, k := range metaKeys {
			h.str(req.Meta[k])
		}
	}
	return h.sum()
}

// NoSeedReason is what the offline model's answers give as the reason they
// carried no seed: there is no request to carry one.
const NoSeedReason = "offline model (no provider request; its answers are drawn from the sample's seed)"

// Complete answers req in the role named by req.Purpose.
func (c *client) Complete(ctx context.Context, req llm.Request) (llm.Response, error) {
	if err := ctx.Err(); err != nil {
		return llm.Response{}, err
	}
	start := time.Now()
	if c.latency > 0 {
		t := time.NewTimer(c.latency)
		select {
		case <-ctx.Done():
			t.Stop()
			return llm.Response{}, ctx.Err()
		case <-t.C:
		}
	}
	key := c.requestKey(req)
	var text string
	switch req.Purpose {
	case llm.PurposeTarget:
		text = c.target(req.Messages, key)
	case llm.PurposeUser:
		text = c.user(req, key)
	case llm.PurposeGenMetrics:
		text = c.genMetrics(req, key)
	case llm.PurposeGenScenarios:
		text = c.genScenarios(req, key)
	case llm.PurposeExpand:
		text = c.expand(req, key)
	case llm.PurposeJudge:
		text = c.judge(req)
	case llm.PurposeLandmark:
		text = c.landmarkCheck(req)
	default:
		text = c.generic(req, key)
	}
	in := 0
	for _, m := range req.Messages {
		in += len(m.Content)
	}
	return llm.Response{
		Text:         text,
		FinishReason: "stop",
		RequestID:    requestID(key),
		Model:        c.model,
		Usage: llm.Usage{
			Requests:     1,
			InputTokens:  tokens(in),
			OutputTokens: tokens(len(text)),
			CostKnown:    true,
		},
		Latency: time.Since(start),
		// Nothing goes over a wire; the answer itself is drawn from req.Seed.
		NoSeed: NoSeedReason,
	}, nil
}

// tokens estimates a token count from a byte length (about four bytes a token).
func tokens(n int) int {
	if n < 4 {
		return 1
	}
	return n / 4
}

func requestID(key uint64) string {
	var buf [8 + 16]byte
	b := append(buf[:0], "offline-"...)
	const hexdig = "0123456789abcdef"
	for i := 60; i >= 0; i -= 4 {
		b = append(b, hexdig[(key>>uint(i))&0xf])
	}
	return string(b)
}

// generic answers a purpose the offline model does not know: a short text
// reply, or {"reply": …} when JSON was asked for.
func (c *client) generic(req llm.Request, key uint64) string {
	topic := "this"
	for i := len(req.Messages) - 1; i >= 0; i-- {
		if req.Messages[i].Role == llm.RoleUser {
			if t := topicWord(req.Messages[i].Content); t != "" {
				topic = t
			}
			break
		}
	}
	r := newRNG(key)
	text := strings.ReplaceAll(genericReplies[r.intn(len(genericReplies))], "{t}", topic)
	if req.JSON {
		return marshalJSON(struct {
			Reply string `json:"reply"`
		}{text})
	}
	return text
}

// marshalJSON encodes v as one compact JSON object without HTML escaping
// (the text is prose, not HTML). The offline model only encodes its own
// plain structs, which cannot fail.
func marshalJSON(v any) string {
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		panic("offline: encoding own output: " + err.Error())
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// metaInt parses a Meta integer, returning def when absent or not a number.
func metaInt(meta map[string]string, key string, def int) int {
	v, err := strconv.Atoi(strings.TrimSpace(meta[key]))
	if err != nil {
		return def
	}
	return v
}

// fill replaces {name} placeholders from pairs (name, value, name, value…).
func fill(tmpl string, pairs ...string) string {
	if !strings.Contains(tmpl, "{") {
		return tmpl
	}
	args := make([]string, 0, len(pairs))
	for i := 0; i+1 < len(pairs); i += 2 {
		args = append(args, "{"+pairs[i]+"}", pairs[i+1])
	}
	return strings.NewReplacer(args...).Replace(tmpl)
}
