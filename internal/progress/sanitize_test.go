package progress

import (
	"strings"
	"testing"
	"time"

	"github.com/impactbench/impactbench/internal/llm"
)

// The escape sequences an outside review found in provider error text.
var hostile = map[string]string{
	"title":   "\x1b]0;pwned\x07",
	"clear":   "\x1b[2J\x1b[H",
	"osc52":   "\x1b]52;c;cm0gLXJmIH4=\x07",
	"c1-csi":  "\u009b2J",
	"cr":      "\rEVIL",
	"bidi":    "\u202eevil",
	"nul-bel": "\x00\x07",
}

// TestPrintfShowsControlSequencesAsText: a failure reason carrying escape
// sequences reaches the terminal as plain text, in both renderings.
func TestPrintfShowsControlSequencesAsText(t *testing.T) {
	for _, mode := range []Mode{Lines, Bars} {
		for name, seq := range hostile {
			var out syncBuffer
			tr := New(&out, mode, time.Hour)
			b := tr.Start("simulate "+seq+"t", 1)
			tr.Printf("  [%s] error: %s", "m01_s001_v01 s0", "provider said "+seq+" done")
			b.Done(true, false, llm.Usage{}, 0)
			tr.Close()
			got := out.String()
			if !strings.Contains(got, "provider said ") || !strings.Contains(got, " done") {
				t.Fatalf("mode %d %s: the line is missing: %q", mode, name, got)
			}
			for _, bad := range []string{"\x1b]", "\x1b[2J", "\x07", "\x00", "\u009b", "\u202e", "\rEVIL"} {
				if strings.Contains(got, bad) {
					t.Errorf("mode %d %s: %q reached the terminal: %q", mode, name, bad, got)
				}
			}
		}
	}
}
