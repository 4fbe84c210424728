package report

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestStatusShowsControlSequencesAsText: a provider's error text stored as
// a failure reason, and a benchmark name, carrying terminal escape
// sequences are printed as plain text; with colour on, only status's own
// colour codes are escape sequences.
func TestStatusShowsControlSequencesAsText(t *testing.T) {
	seqs := map[string]string{
		"title": "\x1b]0;pwned\x07",
		"clear": "\x1b[2J\x1b[H",
		"osc52": "\x1b]52;c;cm0gLXJmIH4=\x07",
		"c1":    "\u009b2J",
		"cr":    "\rEVIL",
	}
	for name, seq := range seqs {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			yamlName, _ := json.Marshal("Bench " + seq)
			writeFile(t, filepath.Join(dir, "benchmark.yaml"), "name: "+string(yamlName)+"\n")
			conv := map[string]any{
				"id": "m01_s001_v01", "metric_id": "m01", "conv_id": "m01_s001_v01__t1__s0", "_sample": 0, "target_model": "t1",
				"transcript": []any{}, "_usage": map[string]any{"cost": 0, "input_tokens": 0, "output_tokens": 0},
				"status": "error", "status_reason": "target model, turn 1: openai gpt: server: " + seq + " bad gateway",
			}
			if err := os.MkdirAll(filepath.Join(dir, "runs", "t1"), 0o755); err != nil {
				t.Fatal(err)
			}
			writeJSON(t, filepath.Join(dir, "runs", "t1", "conversations.json"), []any{conv})
			for _, color := range []bool{false, true} {
				var buf bytes.Buffer
				if err := Status(&buf, dir, nil, StatusOptions{Color: color}); err != nil {
					t.Fatal(err)
				}
				out := buf.String()
				if !strings.Contains(out, "bad gateway") || !strings.Contains(out, "Bench ") {
					t.Fatalf("status lacks the reason or the name:\n%s", out)
				}
				rest := ansi.ReplaceAllString(out, "")
				for _, bad := range []string{"\x1b", "\x07", "\u009b", "\r"} {
					if strings.Contains(rest, bad) {
						t.Errorf("color %v: %q reached the terminal:\n%q", color, bad, out)
					}
				}
			}
		})
	}
}
