//go:build darwin || dragonfly || freebsd || linux || netbsd || openbsd

package calibrate

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/impactbench/impactbench/internal/fault"
	"github.com/impactbench/impactbench/internal/hostile"
	"github.com/impactbench/impactbench/internal/layout"
)

// Only a missing or empty regular labels.jsonl is no labels. A named pipe
// or a device (both of size 0) is an input error naming the file: before,
// calibrate said "no labels" and aggregate and report left calibration
// out without a word.
func TestReadLabelsRefusesWhatIsNotAFile(t *testing.T) {
	for name, plant := range map[string]func(p string) error{
		"missing":    func(string) error { return nil },
		"empty":      func(p string) error { return os.WriteFile(p, nil, 0o644) },
		"named pipe": func(p string) error { hostile.Pipe(t, p); return nil },
		"device":     func(p string) error { return os.Symlink(os.DevNull, p) },
		"directory":  func(p string) error { return os.Mkdir(p, 0o755) },
	} {
		files := layout.Bench{Dir: t.TempDir()}
		if err := plant(files.Labels()); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		ls, err := ReadLabels(context.Background(), files)
		if name == "missing" || name == "empty" {
			if err != nil || ls != nil {
				t.Errorf("%s: %v %v, want no labels", name, ls, err)
			}
			continue
		}
		if fault.KindOf(err) != fault.Input || !strings.Contains(err.Error(), filepath.Base(files.Labels())) {
			t.Errorf("%s: %v (kind %v), want an input error naming labels.jsonl", name, err, fault.KindOf(err))
		}
	}
}
