//go:build darwin || dragonfly || freebsd || linux || netbsd || openbsd

package prompts

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	fifo "github.com/impactbench/impactbench/internal/hostile"
)

// An override that is a named pipe or over MaxOverrideBytes is refused
// naming it, without waiting on the pipe or reading the file whole: before,
// a named pipe blocked every command that loads the prompts, and a sparse
// 1 GiB template was read (5.3 GB) and accepted.
func TestOverrideNotAFileOrTooLarge(t *testing.T) {
	for name, plant := range map[string]func(p string) error{
		"named pipe": func(p string) error { fifo.Pipe(t, p); return nil },
		"too large": func(p string) error {
			if err := os.WriteFile(p, []byte("{{.Metric}}"), 0o644); err != nil {
				return err
			}
			return os.Truncate(p, MaxOverrideBytes+1)
		},
	} {
		dir := t.TempDir()
		p := filepath.Join(dir, "gen_scenarios.tmpl")
		if err := plant(p); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		var err error
		fifo.NotBlocked(t, p, func() { _, err = Load(dir) })
		if err == nil || !strings.Contains(err.Error(), "gen_scenarios.tmpl") {
			t.Errorf("%s: %v, want an error naming the template", name, err)
		}
	}
}
