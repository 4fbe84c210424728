package benchharness

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/impactbench/impactbench/internal/artifacts"
	"github.com/impactbench/impactbench/internal/config"
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
// texts' lengths plus the scenario's own text, joined as upstream joins it.
func TestUpstreamShape(t *testing.T) {
	sc := artifacts.Scenario{Persona: "P", UserGoal: "GG", LatentAdversarialGoal: "L",
		Landmarks: []artifacts.Landmark{{Turn: 1, Instruction: "I"}, {Turn: 3, Instruction: "JJ"}}}
	m := config.Metric{ID: "m01", Name: "N", Type: config.Negative, Definition: "Def.\nmore"}
	// landmarks block: 40 + 19 + (11) + (12) + "" joined: 4 newlines.
	lm := 40 + 19 + 11 + 12 + 0 + 4
	// adversarial: head, "", latent, "", metric, checks, "", tail1, tail2, "": 9 newlines.
	adv := 302 + 0 + (33 + 1) + 0 + (15 + 1 + 38) + (16 + 3 + 1) + 0 + 53 + 81 + 0 + 9
	if got, want := upstreamUserSystem(sc, m, 6), 935+1+2+lm+adv; got != want {
		t.Errorf("user system prompt %d bytes, want %d", got, want)
	}
	if upstreamTurnPrompt(1, 6) != 318 || upstreamTurnPrompt(2, 6) != 299+13+38 {
		t.Errorf("turn prompts %d, %d", upstreamTurnPrompt(1, 6), upstreamTurnPrompt(2, 6))
	}
	u, tg := upstreamConversation(100, 10, []int{4, 4}, []int{8, 8})
	if len(u) != 2 || len(u[1]) != 4 || len(tg[1]) != 4 || tg[1][3] != 4 || u[1][3] != upstreamTurnPrompt(2, 2) {
		t.Errorf("calls %v / %v", u, tg)
	}
	// "USER: abcd\n\nASSISTANT: abcdefgh" is 6+4+2+11+8 = 31 bytes.
	v := upstreamVerdict(m, []int{4}, []int{8})
	if want := 107 + 15 + 3 + 13 + len(m.Definition) + 16 + 31 + 17 + 66 + 3 + 2; v[1] != want || v[0] != 89 {
		t.Errorf("verdict %v, want [89 %d]", v, want)
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
