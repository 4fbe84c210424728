package artifacts

import "testing"

func TestQuoteFinder(t *testing.T) {
	tr := []Turn{
		{Role: "user", Content: "Just tell me which job to take. I said: pick one!"},
		{Role: "assistant", Content: "I can't decide that for you.\n\nIt depends on   what **you** value — “stability” or growth."},
		{Role: "user", Content: "ok"},
		{Role: "assistant", Content: "Take job A. Seriously, Take Job A, the one in the city."},
		{Role: "assistant", Content: "Grüße: ÉCOLE NORMALE SUPÉRIEURE — 日本語のテキスト。"},
		{Role: "assistant", Content: "Visit İSTANBUL, then İZMİR and Ankara"},
		{Role: "assistant", Content: "I can't tell you to cut off your friends. Well... I think so, honestly."},
		{Role: "assistant", Content: "No."},
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
		{"It depends on what … or growth.", 0, "", false},                                                 // "or growth" is too short a part
		{"I can't decide that … what you value — “stability” or growth.", 1, "I can't decide that for you.\n\nIt depends on   what **you** value — “stability” or growth", true},
		{"I can't decide ... for you", 0, "", false}, // each part too short
		{"take job a, the one", 3, "Take Job A, the one", true},
		{"école normale supérieure", 4, "ÉCOLE NORMALE SUPÉRIEURE", true},
		{"日本語のテキスト", 4, "日本語のテキスト", true}, // eight characters, each a word
		// İ lower-cases to one byte: spans still end after its two.
		{"visit istanbul, then izmir", 5, "Visit İSTANBUL, then İZMİR", true},
		{"then izmir and ankara", 5, "then İZMİR and Ankara", true},
		{"  Take\n job   A.  Seriously  ", 3, "Take job A. Seriously", true},
		// Escapes copied from the JSON-encoded transcript.
		{`decide that for you.\n\nIt depends`, 1, "decide that for you.\n\nIt depends", true},
		{`what \"stability\" or`, 0, "", false}, // the text has no such words in this order
		{`you value — \"stability\" or growth`, 1, "you** value — “stability” or growth", true},
		// The user's words are not the assistant's.
		{"pick one", 0, "", false},
		{"Just tell me which job to take", 0, "", false},
		// Parts of an elided quote must be in one message and in order.
		{"Take job A, the one in the city ... I can't decide that", 0, "", false},
		{"decide that for you ... I can't decide that", 0, "", false},
		{"I would never decide for you", 0, "", false},
		{"Take job B, the one in the city", 0, "", false},
		{"none", 0, "", false},
		{"...", 0, "", false},
		// Out of context: too short, inside a word, or a part cut from "can't".
		{"I can ... tell you to cut off your friends", 0, "", false},
		{"I can ... to cut off your friends", 0, "", false},
		{"a ... e", 0, "", false},
		{"the", 0, "", false},
		{"can", 0, "", false},
		{"'t tell you to cut off your friends", 0, "", false},   // starts inside "can't"
		{"I can't tell you to cut off your frie", 0, "", false}, // ends inside "friends"
		{"an't tell you to cut off your friends", 0, "", false},
		{"cut off your friends ... I can't tell you", 0, "", false}, // out of order
		{"I can't tell you to cut off your friends", 6, "I can't tell you to cut off your friends", true},
		{"I can't tell you ... cut off your friends", 6, "I can't tell you to cut off your friends", true},
		{"I can't tell you … I think so, honestly", 6, "I can't tell you to cut off your friends. Well... I think so, honestly", true},
		// The assistant's own ellipsis: the quote is found as written.
		{"Well... I think so", 6, "Well... I think so", true},
		{"Well… I think so", 6, "Well... I think so", true},
		// A whole message may be shorter than the minimum.
		{"no", 7, "No", true},
		{`"No."`, 7, "No", true},
		{"Seriously", 0, "", false}, // a part of a message is not
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

func TestQuoteTooShort(t *testing.T) {
	for q, want := range map[string]bool{
		"the": true, "can": true, "a ... e": true, "I can ... tell you to cut off your friends": true,
		"Take job A": true, "No.": true, // too short unless it is a whole message
		"I can't tell you": false, "antidisestablishmentarian": false, // four words; twenty characters
		"Well... I think so": true, // found only as written (the assistant's own ellipsis)
		"日本語のテキスト":           false, "日本語": true,
		"none": false, "": false, // not a quote at all
	} {
		if got := QuoteTooShort(q); got != want {
			t.Errorf("QuoteTooShort(%q) = %v, want %v", q, got, want)
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
	f := NewQuoteFinder([]Turn{{Role: "user", Content: "hi"}, {Role: "assistant", Content: "Hello there, how are you today?"}})
	got, missing := f.Locate([]string{"none", "hello there, how are you", "goodbye and see you soon", "hello"})
	if len(got) != 3 || got[0].Text != "hello there, how are you" || got[0].Message == nil || *got[0].Message != 1 ||
		got[1].Text != "goodbye and see you soon" || got[1].Message != nil || got[2].Text != "hello" || got[2].Message != nil {
		t.Errorf("Locate = %+v", got)
	}
	if len(missing) != 2 || missing[0] != "goodbye and see you soon" || missing[1] != "hello" {
		t.Errorf("missing = %v (a quote too short is missing too)", missing)
	}
}

// Invalid UTF-8 cannot shift the spans: each bad byte maps to itself.
func TestQuoteFinderInvalidUTF8(t *testing.T) {
	tr := []Turn{{Role: "assistant", Content: "a\xffb Take job A in the city"}}
	msg, s, e, ok := NewQuoteFinder(tr).Find("take job a in")
	if !ok || msg != 0 || tr[0].Content[s:e] != "Take job A in" {
		t.Errorf("got %v %d %q", ok, msg, tr[0].Content[s:e])
	}
}
