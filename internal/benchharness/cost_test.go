package benchharness

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/impactbench/impactbench/internal/artifacts"
	"github.com/impactbench/impactbench/internal/config"
	"github.com/impactbench/impactbench/internal/llm"
	"github.com/impactbench/impactbench/internal/racemode"
	"github.com/impactbench/impactbench/internal/stats"
	"gonum.org/v1/gonum/stat/distuv"
)

// post sends one request body to the fake and returns its usage.
func post(t *testing.T, srv *httptest.Server, path string, body any) map[string]any {
	t.Helper()
	b, _ := json.Marshal(body)
	resp, err := http.Post(srv.URL+path, "application/json", bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || resp.StatusCode != 200 {
		t.Fatalf("%s: status %d, %v: %v", path, resp.StatusCode, err, out)
	}
	return out["usage"].(map[string]any)
}

func block(text string, ttl string) map[string]any {
	b := map[string]any{"type": "text", "text": text}
	if ttl != "" {
		cc := map[string]any{"type": "ephemeral"}
		if ttl != "5m" {
			cc["ttl"] = ttl
		}
		b["cache_control"] = cc
	}
	return b
}

func num(u map[string]any, k string) int { v, _ := u[k].(float64); return int(v) }

// The fake bills Anthropic caching as published: no breakpoint, no cache;
// a breakpoint below the minimum is ignored; one above it is written, read
// by a later request within its lifetime, and gone after it.
func TestCostFakeAnthropicCaching(t *testing.T) {
	f := newCostFake(CostOptions{MinCacheTokens: 1024, Wave: 10 * time.Minute}.withDefaults())
	srv := httptest.NewServer(f)
	defer srv.Close()
	long := strings.Repeat("abcd", 1100) // 1,100 tokens
	msg := func(sysTTL, turnTTL string, turns ...string) map[string]any {
		ms := []any{}
		for i, tx := range turns {
			role := "user"
			if i%2 == 1 {
				role = "assistant"
			}
			ttl := ""
			if i == len(turns)-1 {
				ttl = turnTTL
			}
			ms = append(ms, map[string]any{"role": role, "content": []any{block(tx, ttl)}})
		}
		return map[string]any{"model": "m", "max_tokens": 10, "system": []any{block(long, sysTTL)}, "messages": ms}
	}
	steps := []struct {
		name                 string
		body                 map[string]any
		write, read, uncache int
	}{
		{"no breakpoint", msg("", "", "hi"), 0, 0, 1101},
		{"system written", msg("5m", "", "hi"), 1100, 0, 1},
		{"system read, turn written", msg("5m", "5m", "hi"), 1, 1100, 0},
		{"prefix read through the lookback", msg("", "5m", "hi", "hello", "bye"), 3, 1101, 0},
	}
	for _, s := range steps {
		u := post(t, srv, "/t1/v1/messages", s.body)
		if num(u, "cache_creation_input_tokens") != s.write || num(u, "cache_read_input_tokens") != s.read || num(u, "input_tokens") != s.uncache {
			t.Errorf("%s: usage %v, want write %d read %d uncached %d", s.name, u, s.write, s.read, s.uncache)
		}
	}
	// Below the minimum: nothing cached.
	short := map[string]any{"model": "m", "max_tokens": 10, "system": []any{block("short", "5m")}, "messages": []any{map[string]any{"role": "user", "content": "x"}}}
	if u := post(t, srv, "/t2/v1/messages", short); num(u, "cache_creation_input_tokens") != 0 {
		t.Errorf("below the minimum: %v", u)
	}
	// A wave later the 5-minute entries are gone, a one-hour one is not.
	f.mu.Lock()
	f.now += 10 * time.Minute
	f.mu.Unlock()
	if u := post(t, srv, "/t1/v1/messages", msg("5m", "", "hi")); num(u, "cache_read_input_tokens") != 0 || num(u, "cache_creation_input_tokens") != 1100 {
		t.Errorf("after 10 min a 5-minute entry was read: %v", u)
	}
	post(t, srv, "/t3/v1/messages", msg("1h", "", "hi"))
	f.mu.Lock()
	f.now += 30 * time.Minute
	f.mu.Unlock()
	if u := post(t, srv, "/t3/v1/messages", msg("1h", "", "hi")); num(u, "cache_read_input_tokens") != 1100 {
		t.Errorf("a one-hour entry was not read 30 min later: %v", u)
	}
	calls, err := f.snapshot()
	if err != nil || len(calls) != 8 {
		t.Errorf("%d calls, %v", len(calls), err)
	}
}

// OpenAI: automatic, from 1,024 tokens in 128-token steps, free writes.
func TestCostFakeOpenAICaching(t *testing.T) {
	f := newCostFake(CostOptions{}.withDefaults())
	srv := httptest.NewServer(f)
	defer srv.Close()
	long := strings.Repeat("abcd", 1100)
	body := func(last string) map[string]any {
		return map[string]any{"model": "m", "messages": []any{
			map[string]any{"role": "system", "content": long}, map[string]any{"role": "user", "content": last}}}
	}
	if u := post(t, srv, "/user/v1/chat/completions", body("a")); num(u, "prompt_tokens") != 1101 {
		t.Errorf("first: %v", u)
	}
	u := post(t, srv, "/user/v1/chat/completions", body("b"))
	if d := u["prompt_tokens_details"].(map[string]any); num(d, "cached_tokens") != 1024 {
		t.Errorf("second: cached %v, want 1,024 (1,100 rounded down to a 128-token step)", d)
	}
}

// upstream's user system prompt, by size, for one scenario: the fixed
// texts' lengths plus the scenario's own text, joined as upstream joins it;
// its turn prompts and its calls, message by message.
func TestUpstreamShape(t *testing.T) {
	sc := artifacts.Scenario{Persona: "P", UserGoal: "GG", LatentAdversarialGoal: "L",
		Landmarks: []artifacts.Landmark{{Turn: 1, Instruction: "I"}, {Turn: 3, Instruction: "JJ"}}}
	m := config.Metric{ID: "m01", Name: "N", Type: config.Negative, Definition: "Def.\nmore"}
	// landmarks block: 40 + 19 + (11) + (12) + "" joined: 4 newlines.
	lm := 40 + 19 + 11 + 12 + 0 + 4
	// adversarial: head, "", latent, "", metric, checks, "", tail1, tail2, "": 9 newlines.
	adv := 302 + 0 + (33 + 1) + 0 + (15 + 1 + 38) + (16 + 3 + 1) + 0 + 53 + 81 + 0 + 9
	if got, want := len(upstreamUserSystem(sc, m, 6)), 935+1+2+lm+adv; got != want {
		t.Errorf("user system prompt %d bytes, want %d", got, want)
	}
	if len(upstreamTurnPrompt(1, 6)) != 318 || len(upstreamTurnPrompt(2, 6)) != 299+13+38 {
		t.Errorf("turn prompts %d, %d bytes", len(upstreamTurnPrompt(1, 6)), len(upstreamTurnPrompt(2, 6)))
	}
	// A variant differs from its base scenario only in the persona
	// upstream never shows: the prompts are identical.
	v := sc
	v.UserPersona = "a rewritten persona"
	if upstreamUserSystem(v, m, 6) != upstreamUserSystem(sc, m, 6) {
		t.Error("a demographic variant changed upstream's user system prompt")
	}
	sys := strings.Repeat("s", 100)
	u, tg := upstreamConversation(sys, "tsys", []string{"u1", "u2"}, []string{"r1", "r2"})
	texts := func(r costRequest) []string {
		var out []string
		for _, b := range r.blocks {
			out = append(out, b.role+":"+b.text)
		}
		return out
	}
	want := [][]string{
		{"system:" + sys, "user:" + upstreamTurnPrompt(1, 2)},
		{"system:" + sys, "user:u1", "assistant:r1", "user:" + upstreamTurnPrompt(2, 2)},
	}
	for k := range want {
		if got := texts(u[k]); !slices.Equal(got, want[k]) {
			t.Errorf("user call %d: %q, want %q", k+1, got, want[k])
		}
	}
	if got := texts(tg[1]); !slices.Equal(got, []string{"system:tsys", "user:u1", "assistant:r1", "user:u2"}) {
		t.Errorf("target call 2: %q", got)
	}
	// "USER: abcd\n\nASSISTANT: abcdefgh" is 6+4+2+11+8 = 31 bytes.
	vd := upstreamVerdict(m, []string{"abcd"}, []string{"abcdefgh"})
	if want := 107 + 15 + 3 + 13 + len(m.Definition) + 16 + 31 + 17 + 66 + 3 + 2; len(vd.blocks) != 2 || len(vd.blocks[1].text) != want || len(vd.blocks[0].text) != 89 {
		t.Errorf("verdict %q, want [89 %d] bytes", texts(vd), want)
	}
}

// A small cost benchmark of this build: every configuration runs, counts
// one call per turn and role, and batching lowers the bill.
func TestCostSmall(t *testing.T) {
	o := CostOptions{Metrics: 1, ScenariosPerMetric: 2, Variants: 1, Targets: 1, Turns: 3,
		UserTokens: 60, TargetTokens: 400, JudgeTokens: 150, Binary: testBinary, Dir: t.TempDir()}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	res, err := Cost(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	var text bytes.Buffer
	if err := res.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	t.Logf("\n%s", text.String())
	byConfig := map[string]float64{}
	for _, r := range res.Runs {
		if r.Error != "" {
			t.Fatalf("%s %s: %s", r.Format, r.Config, r.Error)
		}
		calls := 0
		for _, ro := range r.Roles {
			calls += ro.Calls
		}
		if want := 2*(2*3) + 2; calls != want {
			t.Errorf("%s %s: %d calls, want %d", r.Format, r.Config, calls, want)
		}
		byConfig[r.Format+" "+r.Config] = r.USD
		if want := r.USD / float64(res.Conversations) * float64(res.Precision.Conversations); !(r.USDPerPreciseScore > 0) || math.Abs(r.USDPerPreciseScore-want) > 1e-9 {
			t.Errorf("%s %s: $%v per precise score, want $%v", r.Format, r.Config, r.USDPerPreciseScore, want)
		}
	}
	if !strings.Contains(text.String(), "$/precise score") || !strings.Contains(text.String(), "precise score: one model's pass rate on one metric to ±10 pt") {
		t.Errorf("the text does not show the cost per precise score:\n%s", text.String())
	}
	for _, f := range []string{"openai", "anthropic"} {
		if !(byConfig[f+" all batched"] < byConfig[f+" user and judge batched"] && byConfig[f+" user and judge batched"] < byConfig[f+" judge batched"] &&
			byConfig[f+" judge batched"] < byConfig[f+" real time"]) {
			t.Errorf("%s: batching does not lower the bill step by step: %v", f, byConfig)
		}
		if up := res.upstream(f); up.USD <= 0 || up.PerConversation.Prompt <= 0 {
			t.Errorf("%s upstream bill %+v", f, up)
		}
	}
}

// Upstream's requests are billed by OpenAI's automatic prefix caching as
// ours are: each call reads the longest prefix (at a message boundary) an
// earlier call of the same model sent, from 1,024 tokens up in 128-token
// steps — computed here from the messages' token counts alone — and on
// the Anthropic format, with no breakpoint, nothing is read or written.
func TestUpstreamCaching(t *testing.T) {
	cached := func(x int) int {
		if x < 1024 {
			return 0
		}
		return 1024 + (x-1024)/128*128
	}
	for _, long := range []bool{false, true} {
		o := CostOptions{Metrics: 1, ScenariosPerMetric: 2, Variants: 2, Targets: 2, Turns: 6, LongSystemPrompt: long}.withDefaults()
		w := newCostWorkload(o)
		u, r := tokens(strings.Repeat("x", w.userMsg)), tokens(strings.Repeat("x", w.reply))
		tsys := tokens(w.targetSystem(w.scenarios[0]))
		want := 0
		for ti := range o.Targets {
			for i, sc := range w.scenarios {
				usys := tokens(upstreamUserSystem(sc, w.metric(sc.MetricID), o.Turns))
				// Call 1 is the same for every variant and target of a base scenario.
				if ti > 0 || i%o.Variants > 0 {
					want += cached(usys + tokens(upstreamTurnPrompt(1, o.Turns)))
				}
				if i > 0 {
					want += cached(tsys) // the target's system prompt, sent to this target before
				}
				for k := 2; k <= o.Turns; k++ {
					want += cached(usys + (k-2)*(u+r))       // call k−1 less its turn prompt
					want += cached(tsys + (k-1)*u + (k-2)*r) // the whole of call k−1
				}
			}
		}
		for _, format := range []string{"openai", "anthropic"} {
			run, err := w.upstreamBill(format)
			if err != nil {
				t.Fatal(err)
			}
			read, written, prompt := 0, 0, 0
			for _, ro := range run.Roles {
				read += ro.CacheRead
				written += ro.CacheWrite
				prompt += ro.Prompt
			}
			if format == "anthropic" {
				want = 0
			}
			if read != want || written != 0 {
				t.Errorf("long system prompt %v, %s: upstream read %d tokens from the cache and wrote %d, want %d and 0", long, format, read, written, want)
			}
			price, _ := llm.DefaultPrices().Lookup(run.Model)
			list := 0.0
			for _, ro := range run.Roles {
				list += price.Cost(llm.Usage{InputTokens: ro.Prompt, OutputTokens: ro.Output}, false)
			}
			if saved := list - run.USD; format == "openai" && !(saved > 0) || format == "anthropic" && math.Abs(saved) > 1e-9 {
				t.Errorf("long system prompt %v, %s: upstream $%.4f against $%.4f uncached", long, format, run.USD, list)
			}
			t.Logf("long system prompt %v, %s: %d prompt tokens, %d read from the cache; $%.4f (uncached $%.4f)", long, format, prompt, read, run.USD, list)
		}
	}
}

// The cost per precise score is the cost per judged conversation times the
// conversations `impactbench plan` sizes for ±HalfWidth; and those
// conversations deliver it: in a seeded simulation of studies with known
// truth (scenario rates from a beta distribution of mean 0.5 and the
// assumed ICC, the precise score's own assumptions), the cluster-score
// interval from that many base scenarios is on average within the
// half-width, and from three quarters of them it is not.
func TestCostPrecision(t *testing.T) {
	o := CostOptions{Metrics: 1, ScenariosPerMetric: 2, Variants: 4, Targets: 1, Turns: 2}.withDefaults()
	res := &CostResult{Options: o, Conversations: 8, Precision: costPrecision(o)}
	p := res.Precision
	if p.HalfWidth != 0.10 || p.ICC != 0.3 || p.Rate != 0.5 || p.ConversationsPerScenario != 4 || p.Conversations != 4*p.BaseScenarios {
		t.Fatalf("precision %+v", p)
	}
	run := CostRun{USD: 2}
	res.price(&run)
	if want := 2.0 / 8 * float64(p.Conversations); math.Abs(run.USDPerPreciseScore-want) > 1e-12 {
		t.Errorf("$%v per precise score, want $%v", run.USDPerPreciseScore, want)
	}
	if p.WorkloadHalfWidth == nil || *p.WorkloadHalfWidth <= p.HalfWidth {
		t.Errorf("2 base scenarios give ±%v, narrower than ±%.2f", p.WorkloadHalfWidth, p.HalfWidth)
	}
	// One base scenario per metric plans no interval: null, which JSON can
	// carry (an infinite half-width would fail the whole --json output).
	o1 := o
	o1.ScenariosPerMetric = 1
	one := &CostResult{Options: o1, Precision: costPrecision(o1)}
	if _, err := json.Marshal(one); err != nil || one.Precision.WorkloadHalfWidth != nil {
		t.Errorf("one base scenario: %v, half-width %v", err, one.Precision.WorkloadHalfWidth)
	}
	var text bytes.Buffer
	if err := one.WriteText(&text); err != nil || !strings.Contains(text.String(), "no interval from 1 base scenario") {
		t.Errorf("one base scenario: %v\n%s", err, text.String())
	}

	rng := rand.New(rand.NewPCG(37, 6))
	a := p.Rate * (1 - p.ICC) / p.ICC // beta(a, b) has mean Rate and ICC 1/(a+b+1)
	beta := distuv.Beta{Alpha: a, Beta: (1 - p.Rate) * (1 - p.ICC) / p.ICC, Src: rng}
	meanHalfWidth := func(g int) float64 {
		const reps = 400
		cs := make([]stats.ClusterSum, g)
		sum := 0.0
		for range reps {
			for i := range cs {
				rate, k := beta.Rand(), 0
				for range p.ConversationsPerScenario {
					if rng.Float64() < rate {
						k++
					}
				}
				cs[i] = stats.Binary(k, p.ConversationsPerScenario)
			}
			iv := stats.ClusterRate(cs, p.Conf)
			sum += (iv.Hi - iv.Lo) / 2
		}
		return sum / reps
	}
	full, less := meanHalfWidth(p.BaseScenarios), meanHalfWidth(p.BaseScenarios*3/4)
	t.Logf("%d base scenarios: mean half-width %.4f; %d: %.4f (400 simulated studies each)", p.BaseScenarios, full, p.BaseScenarios*3/4, less)
	if full > p.HalfWidth*1.02 || full < p.HalfWidth*0.9 {
		t.Errorf("%d base scenarios give a mean half-width of %.4f, not ±%.2f", p.BaseScenarios, full, p.HalfWidth)
	}
	if less <= p.HalfWidth {
		t.Errorf("three quarters of the scenarios (%d) already give ±%.4f", p.BaseScenarios*3/4, less)
	}
}

// The ratios and costs per precise score docs/performance.md (and the
// README) give for the default (long) replies and the short ones, on both
// formats, in real time and, with long replies, all batched: the counts
// are deterministic, so they are checked to the digits printed.
func TestCostAsDocumented(t *testing.T) {
	racemode.SkipHeavy(t)
	if testing.Short() {
		t.Skip("runs the full cost workload (about 40 s)")
	}
	type row struct{ ratio, precise, upstreamPrecise float64 }
	for _, c := range []struct {
		name         string
		targetTokens int
		configs      []string
		want         map[string]row // format + " " + configuration
	}{
		{"long replies", 0, []string{"real time", "all batched"}, map[string]row{
			"openai real time": {0.979, 8.04, 8.22}, "anthropic real time": {0.782, 14.98, 19.16},
			"openai all batched": {0.489, 4.02, 8.22}, "anthropic all batched": {0.436, 8.36, 19.16}}},
		{"short replies", 30, []string{"real time"}, map[string]row{
			"openai real time": {0.948, 2.70, 2.84}, "anthropic real time": {0.946, 5.38, 5.68}}},
	} {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		res, err := Cost(ctx, CostOptions{TargetTokens: c.targetTokens, Configs: c.configs, Binary: testBinary, Dir: t.TempDir()})
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Runs) != len(c.want) {
			t.Fatalf("%s: %d runs, want %d", c.name, len(res.Runs), len(c.want))
		}
		for _, r := range res.Runs {
			key := r.Format + " " + r.Config
			w := c.want[key]
			got := row{r.Ratio, r.USDPerPreciseScore, res.upstream(r.Format).USDPerPreciseScore}
			t.Logf("%s, %s: %.3f× upstream, $%.2f per precise score (upstream $%.2f)", c.name, key, got.ratio, got.precise, got.upstreamPrecise)
			if r.Error != "" || math.Abs(got.ratio-w.ratio) > 0.0005 || math.Abs(got.precise-w.precise) > 0.005 || math.Abs(got.upstreamPrecise-w.upstreamPrecise) > 0.005 {
				t.Errorf("%s, %s: %.4f× upstream, $%.3f per precise score (upstream $%.3f), error %q; docs/performance.md says %.3f×, $%.2f ($%.2f)",
					c.name, key, got.ratio, got.precise, got.upstreamPrecise, r.Error, w.ratio, w.precise, w.upstreamPrecise)
			}
		}
	}
}

// TestCostAudit: with Audit and audit_share 1 the measured run audits
// every conversation once, on its own model on the fake, and bills it as a
// role of its own.
func TestCostAudit(t *testing.T) {
	all := 1.0
	o := CostOptions{Metrics: 1, ScenariosPerMetric: 2, Variants: 1, Targets: 1, Turns: 3, Audit: true, AuditShare: &all,
		Configs: []string{"real time"}, Formats: []string{"openai"}, Binary: testBinary, Dir: t.TempDir()}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	res, err := Cost(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Runs) != 1 || res.Runs[0].Error != "" {
		t.Fatalf("runs %+v", res.Runs)
	}
	audits, judged := 0, 0
	for _, ro := range res.Runs[0].Roles {
		switch ro.Role {
		case costRoleAudit:
			audits += ro.Calls
			if !(ro.USD > 0) {
				t.Errorf("the audit is not billed: %+v", ro)
			}
		case costRoleJudge:
			judged += ro.Calls
		}
	}
	if audits != res.Conversations || judged != res.Conversations {
		t.Errorf("%d audit and %d judge calls for %d conversations", audits, judged, res.Conversations)
	}
}

// The audit at the default share costs at most 2 % of a default run's bill
// on the cost workload (issue 37), on both formats, in real time: what the
// draws gave, and what the share gives in expectation (the audit's cost
// per call times DefaultAuditShare of the conversations), so that raising
// the default past the budget fails here.
func TestCostAuditDefaultShare(t *testing.T) {
	racemode.SkipHeavy(t)
	if testing.Short() {
		t.Skip("runs the full cost workload twice")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	res, err := Cost(ctx, CostOptions{Audit: true, Configs: []string{"real time"}, Binary: testBinary, Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range res.Runs {
		if r.Error != "" || r.AuditCalls == 0 || r.AuditCalls >= res.Conversations {
			t.Fatalf("%s: %d audits of %d conversations, error %q", r.Format, r.AuditCalls, res.Conversations, r.Error)
		}
		auditUSD := r.AuditShareOfBill * r.USD
		perAudit, rest := auditUSD/float64(r.AuditCalls), r.USD-auditUSD
		expected := perAudit * config.DefaultAuditShare * float64(res.Conversations)
		t.Logf("%s: %d audits of %d conversations, %.2f %% of the bill; at the share's expectation %.2f %%",
			r.Format, r.AuditCalls, res.Conversations, 100*r.AuditShareOfBill, 100*expected/(rest+expected))
		if r.AuditShareOfBill > 0.02 || expected/(rest+expected) > 0.02 {
			t.Errorf("%s: the audit is %.2f %% of the bill (%.2f %% expected), over the 2 %% budget", r.Format, 100*r.AuditShareOfBill, 100*expected/(rest+expected))
		}
	}
}

// TestCostUserBreak: with a broken simulated user the run tallies the
// broken conversations by class; every break the turn checks or the
// suspect check see is caught at any share, only drifts escape, only from
// the skipped stratum, and auditing everything catches them all.
func TestCostUserBreak(t *testing.T) {
	racemode.SkipHeavy(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	for _, share := range []float64{0, 1} {
		o := CostOptions{Metrics: 2, ScenariosPerMetric: 9, Variants: 2, Targets: 2, Turns: 6, Audit: true, AuditShare: &share,
			UserBreak: 0.2, Configs: []string{"real time"}, Formats: []string{"openai"}, Binary: testBinary, Dir: t.TempDir()}
		res, err := Cost(ctx, o)
		if err != nil {
			t.Fatal(err)
		}
		r := res.Runs[0]
		c := r.Catch
		if r.Error != "" || c == nil {
			t.Fatalf("share %g: %q, catch %+v", share, r.Error, c)
		}
		t.Logf("share %g: %d of %d broke, %d caught; %v; strata %v", share, c.Broken, c.Conversations, c.Caught, c.ByClass, c.Strata)
		seen, meta, drift := c.ByClass[BreakSeen], c.ByClass[BreakSuspect], c.ByClass[BreakDrift]
		if seen[0] < 10 || meta[0] < 2 || seen[1] != seen[0] || meta[1] != meta[0] || c.Strata[artifacts.AuditSuspect] < meta[0] && share < 1 {
			t.Errorf("share %g: a break the checks see escaped, or too few: %v, strata %v", share, c.ByClass, c.Strata)
		}
		escaped := c.Broken - c.Caught
		if escaped != drift[0]-drift[1] || share == 1 && escaped != 0 || share == 0 && escaped > c.Strata[artifacts.AuditSkipped] {
			t.Errorf("share %g: %d escaped, drift %v, strata %v", share, escaped, drift, c.Strata)
		}
	}
}
