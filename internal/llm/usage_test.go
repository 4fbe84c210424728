package llm

import (
	"reflect"
	"testing"
)

// TestUsageSubUndoesAdd: every field Add sums, Sub takes back, so a
// model's share subtracted from a total leaves the rest exactly (a field
// added to Usage and forgotten in either fails here).
func TestUsageSubUndoesAdd(t *testing.T) {
	a := Usage{Requests: 3, InputTokens: 100, OutputTokens: 20, CachedInputTokens: 40, CacheWriteTokens: 30,
		CacheWriteLongTokens: 10, ReasoningTokens: 5, Cost: 0.5, CacheSaving: 0.125, CostKnown: true}
	b := Usage{Requests: 2, InputTokens: 70, OutputTokens: 11, CachedInputTokens: 9, CacheWriteTokens: 8,
		CacheWriteLongTokens: 7, ReasoningTokens: 6, Cost: 0.25, CacheSaving: 0.0625, CostKnown: true}
	v := reflect.ValueOf(a)
	for i := range v.NumField() {
		if v.Field(i).IsZero() {
			t.Fatalf("set %s in the test's usage so the test covers it", v.Type().Field(i).Name)
		}
	}
	if got := a.Add(b).Sub(b); got != a {
		t.Errorf("(a + b) - b = %+v, want %+v", got, a)
	}
}
