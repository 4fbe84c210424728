package artifacts

import "testing"

func TestQuoteFinder(t *testing.T) {
	tr := []Turn{
		{Role: "user", Content: "Just tell me which job to take. I said: pick one!"},
		{Role: "assistant", Content: "I can't decide that for you.\n\nIt depends on   what **you** value — “stability” or growth."},
		{Role: "user", Content: "ok"},
		{Role: "assistant", Content: "Take job A. Seriously, Take Job A."},
		{Role: "assistant", Content: "Grüße: ÉCOLE — 日本語のテキスト。"},
		{Role: "assistant", Content: "Visit İSTANBUL, then İ"},
	}
	f := NewQuoteFinder(tr)
	tests := []struct {
		quote string
		msg   int
		span  string // the original text the span covers
		ok    bool
	}{
		{"I can't decide that for you.", 1, "I can't decide that for you", true},
		{"i CAN’T decide that for you", 1, "I can't decide that for you", true},                           // case, curly apostrophe
		{`"it depends on what you value"`, 1, "It depends on   what **you** value", true},                 // whitespace, emphasis, surrounding quotes
		{`what you value — "stability" or growth`, 1, "what **you** value — “stability” or growth", true}, // curly vs straight quotes
		{"It depends on … or growth.", 1, "It depends on   what **you** value — “stability” or growth", true},
		{"I can't decide ... for you", 1, "I can't decide that for you", true},
		{"take job a", 3, "Take job A", true},
		{"école", 4, "ÉCOLE", true},
		{"日本語のテキスト", 4, "日本語のテキスト", true},
		// İ lower-cases to one byte: spans still end after its two.
		{"visit istanbul", 5, "Visit İSTANBUL", true},
		{"then i", 5, "then İ", true},
		{"  Take\n job   A  ", 3, "Take job A", true},
		// Escapes copied from the JSON-encoded transcript.
		{`for you.\n\nIt depends`, 1, "for you.\n\nIt depends", true},
		{`what \"stability\" or`, 0, "", false}, // the text has no such words in this order
		{`value — \"stability\" or growth`, 1, "value — “stability” or growth", true},
		// The user's words are not the assistant's.
		{"pick one", 0, "", false},
		{"Just tell me which job to take", 0, "", false},
		// Parts of an elided quote must be in one message and in order.
		{"Take job A ... I can't decide", 0, "", false},
		{"for you ... I can't", 0, "", false},
		{"I would never decide for you", 0, "", false},
		{"Take job B", 0, "", false},
		{"none", 0, "", false},
		{"...", 0, "", false},
	}
	for _, tt := range tests {
		msg, s, e, ok := f.Find(tt.quote)
		if ok != tt.ok {
			t.Errorf("Find(%q) ok = %v, want %v", tt.quote, ok, tt.ok)
			continue
		}
		if !ok {
			continue
		}
		if msg != tt.msg || tr[msg].Content[s:e] != tt.span {
			t.Errorf("Find(%q) = message %d %q, want %d %q", tt.quote, msg, tr[msg].Content[s:e], tt.msg, tt.span)
		}
	}
}

func TestNoQuoteAndLocate(t *testing.T) {
	for _, q := range []string{"", "  ", "none", "None.", `"none"`, "N/A", "...", "…"} {
		if !NoQuote(q) {
			t.Errorf("NoQuote(%q) = false", q)
		}
	}
	for _, q := range []string{"no", "None of your business"} {
		if NoQuote(q) {
			t.Errorf("NoQuote(%q) = true", q)
		}
	}
	f := NewQuoteFinder([]Turn{{Role: "user", Content: "hi"}, {Role: "assistant", Content: "Hello there."}})
	got, missing := f.Locate([]string{"none", "hello there", "goodbye"})
	if len(got) != 2 || got[0].Text != "hello there" || got[0].Message == nil || *got[0].Message != 1 ||
		got[1].Text != "goodbye" || got[1].Message != nil {
		t.Errorf("Locate = %+v", got)
	}
	if len(missing) != 1 || missing[0] != "goodbye" {
		t.Errorf("missing = %v", missing)
	}
}

// Invalid UTF-8 cannot shift the spans: each bad byte maps to itself.
func TestQuoteFinderInvalidUTF8(t *testing.T) {
	tr := []Turn{{Role: "assistant", Content: "a\xffb Take job A"}}
	msg, s, e, ok := NewQuoteFinder(tr).Find("take job a")
	if !ok || msg != 0 || tr[0].Content[s:e] != "Take job A" {
		t.Errorf("got %v %d %q", ok, msg, tr[0].Content[s:e])
	}
}
