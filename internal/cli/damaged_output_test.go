package cli

import (
	"os"
	"strings"
	"testing"
)

// A stage whose output is damaged (cut short) does not keep it as a hand
// edit and exit 0, leaving run and aggregate to fail on it later: it is
// bad input, exit 2 naming the file, and the file is left as it was
// (troubleshooting.md: restore it, or delete it and rerun that phase).
func TestStageRefusesADamagedOutputItWouldKeep(t *testing.T) {
	tests := []struct {
		stage, file string
	}{
		{"evaluate", "scores.json"},
		{"simulate", "conversations.json"},
	}
	for _, tt := range tests {
		t.Run(tt.stage, func(t *testing.T) {
			dir := copyProject(t)
			path := benchFile(dir, "runs", "offline-careful", tt.file)
			raw := readBytes(t, path)
			if err := os.WriteFile(path, raw[:len(raw)/2], 0o644); err != nil {
				t.Fatal(err)
			}
			before := snapshot(t, dir)
			code, _, errs := run(t, dir, tt.stage, "example", "offline-careful")
			if code != ExitUsage || !strings.Contains(errs, tt.file) {
				t.Errorf("%s over a damaged %s: exit %d, want %d naming it; stderr:\n%s", tt.stage, tt.file, code, ExitUsage, errs)
			}
			assertSameFiles(t, before, snapshot(t, dir))
		})
	}
}
