package benchharness

import (
	"bytes"
	"context"
	"reflect"
	"testing"
)

func TestCachingRatio(t *testing.T) {
	ctx := context.Background()
	res, err := CachingRatio(ctx, CachingOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var text bytes.Buffer
	if err := res.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	t.Logf("\n%s", text.String())
	for name, as := range map[string]Accounts{"anthropic": res.Anthropic, "openai": res.OpenAI} {
		if as.Target.Calls != 6 || as.User.Calls != 6 {
			t.Errorf("%s: %d target and %d user calls, want 6 each", name, as.Target.Calls, as.User.Calls)
		}
		for role, a := range map[string]Account{"target": as.Target, "user": as.User, "both": as.Both} {
			if a.Ratio <= 0 || a.Ratio >= 1 {
				t.Errorf("%s %s: ratio %.3f, want in (0, 1)", name, role, a.Ratio)
			}
			if a.Uncached < 0 || a.Uncached+a.CacheRead+a.CacheWrite != a.PromptTokens {
				t.Errorf("%s %s: %+v does not add up", name, role, a)
			}
		}
	}
	// The target's ~1,500-token system prompt is written on the first call
	// and read on every later one.
	first := res.Anthropic.Target.PerCall[0]
	if first[1] < 1024 || first[2] != 0 {
		t.Errorf("first target call %v: want a cache write of the system prompt and no read", first)
	}
	for i, c := range res.Anthropic.Target.PerCall[1:] {
		if c[2] < first[1] {
			t.Errorf("target call %d reads %d tokens, want at least the system prompt's %d", i+2, c[2], first[1])
		}
	}
	// OpenAI never charges writes.
	if res.OpenAI.Both.CacheWrite != 0 {
		t.Errorf("OpenAI cache writes %d", res.OpenAI.Both.CacheWrite)
	}
	again, err := CachingRatio(ctx, CachingOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(res, again) {
		t.Errorf("not reproducible:\n%+v\n%+v", res, again)
	}
}

// Below the cache minimum nothing is cached and the ratio is exactly 1.
func TestCachingBelowMinimum(t *testing.T) {
	res, err := CachingRatio(context.Background(), CachingOptions{MinCacheTokens: 1 << 30})
	if err != nil {
		t.Fatal(err)
	}
	if a := res.Anthropic.Both; a.CacheRead != 0 || a.CacheWrite != 0 || a.Ratio != 1 {
		t.Errorf("anthropic with an unreachable minimum: %+v", a)
	}
}
