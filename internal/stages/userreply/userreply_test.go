package userreply

import (
	"slices"
	"strings"
	"testing"
	"unicode/utf8"
)

// userReplyCases are replies and how they read (also FuzzParse's seeds).
var userReplyCases = []struct {
	name, raw string
	want      string
	terminate bool
}{
	{"basic", "Thought: a\nMessage: hi there", "hi there", false},
	{"upper label", "MESSAGE: yo", "yo", false},
	{"multi-line", "Thought: x\nMessage: line1\nline2\n\nline3", "line1\nline2\n\nline3", false},
	{"label alone then lines", "Message:\nline2\nline3", "line2\nline3", false},
	{"later thought excluded", "Message: hi\nThought: later", "hi", false},
	{"later markdown thought excluded", "Message: hi\n**Thought:** later", "hi", false},
	{"terminate", "Thought: done\nMessage: Terminate conversation.", "Terminate conversation.", true},
	{"quoted terminate", `Message: "terminate conversation"`, "terminate conversation", true},
	{"terminate with more", "Message: terminate conversation now", "terminate conversation now", true},
	{"bracketed terminate", "Message: [Terminate Conversation]", "[Terminate Conversation]", true},
	{"not terminate", "Message: please don't terminate conversation", "please don't terminate conversation", false},
	{"bold label", "**Message:** hello", "hello", false},
	{"bold label colon outside", "**Message**: hello", "hello", false},
	{"heading label", "## Message: hello", "hello", false},
	{"quote label", "> Message: hello", "hello", false},
	{"indented", "  Thought: hmm\n  Message: indented", "indented", false},
	{"crlf", "Thought: a\r\nMessage: hi\r\n", "hi", false},
	{"quoted message", "Message: \"so what should I do?\"", "so what should I do?", false},
	{"curly quotes", "Message: “ok then”", "ok then", false},
	{"inner quotes kept", `Message: "a" or "b"?`, `"a" or "b"?`, false},
	{"italic message", "Message: *sigh* fine", "*sigh* fine", false},
	{"no label", "just some text", "just some text", false},
	{"no label, leading thought paragraph", "Thought: plan it\nstill thinking\n\nhey can u help", "hey can u help", false},
	{"word starting with message", "Messages are hard\nok", "Messages are hard\nok", false},
	{"first label wins", "Message: one\nMessage: two", "one\nMessage: two", false},
	{"empty", "", "", false},
	{"only thought", "Thought: nothing to say", "", false},
}

func TestParse(t *testing.T) {
	for _, tt := range userReplyCases {
		t.Run(tt.name, func(t *testing.T) {
			got, term := Parse(tt.raw)
			if got != tt.want || term != tt.terminate {
				t.Errorf("Parse(%q) = %q, %v; want %q, %v", tt.raw, got, term, tt.want, tt.terminate)
			}
		})
	}
}

func TestPerturb(t *testing.T) {
	long := strings.Repeat("Hello World, This Is A Message. ", 20) // 640 chars
	a, b := Perturb(long, 1), Perturb(long, 1)
	if a != b {
		t.Error("same seed, different output")
	}
	if a == Perturb(long, 2) {
		t.Error("different seeds, same output")
	}
	n := utf8.RuneCountInString(long)
	if got := utf8.RuneCountInString(a); got < n-n/200 || got > n {
		t.Errorf("length %d, want between %d and %d (⌊n/200⌋ deletions at most)", got, n-n/200, n)
	}
	if strings.EqualFold(a, long) {
		t.Error("no swaps or deletions on a 640-character message")
	}
	if a == strings.ToLower(long) || a == long {
		t.Error("case noise missing or total")
	}

	short := "Hi There, Can You Help Me?" // < 150 chars: case changes only
	for seed := range uint64(20) {
		got := Perturb(short, seed)
		if !strings.EqualFold(got, short) {
			t.Fatalf("seed %d: %q changed more than case", seed, got)
		}
	}
	if Perturb("", 3) != "" {
		t.Error("empty input")
	}
	for seed := range uint64(50) {
		if Perturb("X", seed) == "" || Perturb("ÄÖÜ éè", seed) == "" {
			t.Fatal("non-empty input became empty")
		}
	}
	if got := Perturb("ÄBC", 5); !utf8.ValidString(got) {
		t.Error("invalid UTF-8")
	}
}

func TestThought(t *testing.T) {
	cases := []struct{ raw, want string }{
		{"Thought: plan A\nMessage: hi", "plan A"},
		{"Thought: line one\nline two\n\nMessage: hi", "line one\nline two"},
		{"**Thought:** weigh it\n**Message:** hi\nThought: after", "weigh it\nafter"},
		{"Message: hi", ""},
		{"just a message", ""},
		// Without a Message label the leading Thought paragraph is the
		// thought and the rest the message, as ParseUserReply reads it.
		{"Thought: only this\n\nthe message itself", "only this"},
	}
	for _, c := range cases {
		if got := Thought(c.raw); got != c.want {
			t.Errorf("Thought(%q) = %q, want %q", c.raw, got, c.want)
		}
		msg, _ := Parse(c.raw)
		if got := Thought(c.raw); got != "" && strings.Contains(msg, got) {
			t.Errorf("%q: the thought %q is also in the message %q", c.raw, got, msg)
		}
	}
}

// TestParseRepairs: ParseRepairs reads the same message as Parse and names
// each repair it made; a reply in the requested format has none.
func TestParseRepairs(t *testing.T) {
	tests := []struct {
		raw, msg string
		want     []string
	}{
		{"Thought: t\nMessage: hello there", "hello there", nil},
		{"**Message:** hello there", "hello there", nil},
		{"Thought: t\nMessage: \"hello there\"", "hello there", []string{RepairUnwrapped}},
		{"Message: *hello there*", "hello there", []string{RepairUnwrapped}},
		{"hello there", "hello there", []string{RepairNoLabel}},
		{"Thought: t\n\n'hello there'", "hello there", []string{RepairNoLabel, RepairUnwrapped}},
		{"Message: hello there\nThought: more", "hello there", []string{RepairLateThought}},
	}
	for _, tt := range tests {
		msg, term, got := ParseRepairs(tt.raw)
		pm, pt := Parse(tt.raw)
		if msg != tt.msg || msg != pm || term != pt {
			t.Errorf("ParseRepairs(%q) = %q, %v; Parse %q, %v; want %q", tt.raw, msg, term, pm, pt, tt.msg)
		}
		if !slices.Equal(got, tt.want) {
			t.Errorf("ParseRepairs(%q) repairs %q, want %q", tt.raw, got, tt.want)
		}
	}
}
