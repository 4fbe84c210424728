package cli

import (
	"strings"
	"testing"
)

// The pipeline preset's shape flags: readable usage errors, and only with
// the preset they shape.
func TestBenchPipelineFlagErrors(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"bench", "--preset", "pipeline", "--demographics", "2,x"}, `--demographics "2,x": want the number of values of each demographic axis, each ≥ 1, e.g. 2,2`},
		{[]string{"bench", "--preset", "pipeline", "--demographics", "2,0"}, `--demographics "2,0": want`},
		{[]string{"bench", "--preset", "pipeline", "--metrics", "0"}, "--metrics 0, --scenarios-per-metric 9: want at least 1 each"},
		{[]string{"bench", "--preset", "pipeline", "--conversations", "10"}, "--conversations: the pipeline preset's conversations are --metrics × --scenarios-per-metric × the --demographics variants"},
		{[]string{"bench", "--preset", "small", "--metrics", "3"}, "shape the pipeline preset only (--preset pipeline)"},
	} {
		code, out, errs := run(t, dir, c.args...)
		if code != ExitUsage || !strings.Contains(errs, c.want) || out != "" {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want usage error %q", c.args, code, out, errs, c.want)
		}
	}
}
