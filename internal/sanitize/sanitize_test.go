package sanitize

import (
	"bytes"
	"strings"
	"testing"
	"unicode/utf8"
)

// The sequences an outside review sent through provider error text.
var hostile = map[string]string{
	"title":      "\x1b]0;pwned\x07",
	"clear":      "\x1b[2J\x1b[H",
	"osc52":      "\x1b]52;c;cm0gLXJmIH4=\x07",
	"osc52-st":   "\x1b]52;c;cm0gLXJmIH4=\x1b\\",
	"c1-csi":     "\u009b2J",
	"raw-c1":     "\x9b2J",
	"cr":         "safe\rEVIL",
	"bidi":       "abc\u202edcba",
	"nul-bel":    "a\x00b\x07c",
	"backspace":  "abc\b\b\bXYZ",
	"delete":     "a\x7fb",
	"isolate":    "x\u2066y\u2069",
	"esc-at-end": "text\x1b",
}

func TestTerminalStripsControls(t *testing.T) {
	for name, seq := range hostile {
		t.Run(name, func(t *testing.T) {
			got := Terminal("before " + seq + " after")
			if i := firstUnsafe(got); i >= 0 {
				t.Fatalf("Terminal left %q at %d in %q", got[i:], i, got)
			}
			for _, r := range got {
				if r == 0x1b || r == '\r' || (r >= 0x80 && r <= 0x9f) {
					t.Fatalf("Terminal kept %U in %q", r, got)
				}
			}
			if !strings.HasPrefix(got, "before ") || !strings.HasSuffix(got, " after") {
				t.Errorf("Terminal lost the surrounding text: %q", got)
			}
		})
	}
}

func TestTerminalKeepsText(t *testing.T) {
	for _, s := range []string{"", "plain", "two\nlines\tand a tab", "naïve — ünïcödé 日本語 🙂", "\u200f rtl mark stays"} {
		if got := Terminal(s); got != s {
			t.Errorf("Terminal(%q) = %q, want it unchanged", s, got)
		}
	}
	if got := Terminal("a\x1b[31mred"); got != "a[31mred" {
		t.Errorf("Terminal kept more than the visible rest of a sequence: %q", got)
	}
	if got := Terminal("bad \xff byte"); got != "bad \uFFFD byte" || !utf8.ValidString(got) {
		t.Errorf("invalid UTF-8: got %q", got)
	}
}

func TestLine(t *testing.T) {
	if got := Line("a\n\tb  \x1b[2J c\r\n"); got != "a b [2J c" {
		t.Errorf("Line = %q", got)
	}
}

func TestWriterKeepsOnlySGR(t *testing.T) {
	var buf bytes.Buffer
	w := NewWriter(&buf)
	ours := "\x1b[1mBold\x1b[0m \x1b[31mred\x1b[0m"
	if _, err := w.Write([]byte(ours)); err != nil {
		t.Fatal(err)
	}
	if buf.String() != ours {
		t.Fatalf("our colours changed: %q", buf.String())
	}
	for name, seq := range hostile {
		buf.Reset()
		n, err := w.Write([]byte("\x1b[33mreason: " + seq + "\x1b[0m"))
		if err != nil || n != len("\x1b[33mreason: "+seq+"\x1b[0m") {
			t.Fatalf("%s: Write = %d, %v", name, n, err)
		}
		got := strings.TrimSuffix(strings.TrimPrefix(buf.String(), "\x1b[33m"), "\x1b[0m")
		if strings.ContainsRune(got, 0x1b) || firstUnsafe(got) >= 0 {
			t.Errorf("%s: %q reached the terminal", name, got)
		}
	}
}

func TestURL(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"", ""},
		{"https://api.openai.com/v1", "https://api.openai.com/v1"},
		{"https://user:hunter2@gw.example/v1", "https://REDACTED@gw.example/v1"},
		{"https://sk-onlyuser@gw.example/v1", "https://REDACTED@gw.example/v1"},
		{"https://gw.example/v1?api_key=SECRET&mode=fast", "https://gw.example/v1?api_key=REDACTED&mode=fast"},
		{"https://gw.example/v1?key=SECRET", "https://gw.example/v1?key=REDACTED"},
		{"https://gw.example/v1?token=SECRET", "https://gw.example/v1?token=REDACTED"},
		{"https://gw.example/v1?access_token=S&sig=T", "https://gw.example/v1?access_token=REDACTED&sig=REDACTED"},
		{"https://gw.example/v1?mode=fast", "https://gw.example/v1?mode=fast"},
		{"https://gw.example/v1?key=%zzSECRET", "https://gw.example/v1?REDACTED"},
		{"http://[::1:bad/v1?key=SECRET", "http://[::1:bad/v1?***"},
		{"://user:SECRET@h/v1?api_key=Q", "://***@h/v1?***"},
		{"user:SECRET@h/v1", "***@h/v1"},
		{"http://u:p%zz@h/v1", "http://***@h/v1"},
	} {
		if got := URL(c.in); got != c.want {
			t.Errorf("URL(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

func TestURLsIn(t *testing.T) {
	in := `connection: Post "http://user:***@127.0.0.1:1/v1/chat/completions?key=SECRETQ": dial tcp 127.0.0.1:1: connect: connection refused; pool openai|https://u:SECRETP@h/v1|gpt|ab12`
	got := URLsIn(in)
	for _, s := range []string{"SECRETQ", "SECRETP", "user:"} {
		if strings.Contains(got, s) {
			t.Errorf("URLsIn left %q in %q", s, got)
		}
	}
	for _, s := range []string{"connection refused", "127.0.0.1:1/v1/chat/completions", "|gpt|ab12", "h/v1"} {
		if !strings.Contains(got, s) {
			t.Errorf("URLsIn lost %q: %q", s, got)
		}
	}
	if s := "no urls here: a:b@c"; URLsIn(s) != s {
		t.Errorf("URLsIn changed text without URLs")
	}
}

func FuzzTerminal(f *testing.F) {
	for _, s := range hostile {
		f.Add(s)
	}
	f.Add("plain text\n")
	f.Fuzz(func(t *testing.T, s string) {
		got := Terminal(s)
		if !utf8.ValidString(got) || firstUnsafe(got) >= 0 {
			t.Fatalf("Terminal(%q) = %q still unsafe", s, got)
		}
		if Terminal(got) != got {
			t.Fatalf("Terminal is not idempotent on %q", s)
		}
		var buf bytes.Buffer
		_, _ = NewWriter(&buf).Write([]byte(s))
		if rest := sgr.ReplaceAllString(buf.String(), ""); firstUnsafe(rest) >= 0 {
			t.Fatalf("Writer passed %q for %q", buf.String(), s)
		}
	})
}

func TestTextWriter(t *testing.T) {
	var b strings.Builder
	w := NewTextWriter(&b)
	for _, part := range []string{"a\x1b]0;x\x07b", "\xc3", "\xa9\r\n", "\u009b2J\tz\n"} {
		if n, err := w.Write([]byte(part)); err != nil || n != len(part) {
			t.Fatalf("Write(%q) = %d, %v", part, n, err)
		}
	}
	if got, want := b.String(), "a]0;xbé\n2J\tz\n"; got != want {
		t.Fatalf("got %q, want %q", got, want)
	}
}
