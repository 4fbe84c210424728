//go:build linux

package benchharness

import (
	"os"
	"path/filepath"
	"testing"
)

func TestRSSAnonKB(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		name, body string
		want       int64
	}{
		{"kernel status", "Name:\timpactbench\nVmHWM:\t  70000 kB\nVmRSS:\t   62464 kB\nRssAnon:\t   19808 kB\nRssFile:\t   42656 kB\n", 19808},
		{"no RssAnon line", "Name:\timpactbench\nVmRSS:\t 62464 kB\n", 0},
		{"empty value", "RssAnon:\n", 0},
	} {
		path := filepath.Join(dir, "status")
		if err := os.WriteFile(path, []byte(tc.body), 0o644); err != nil {
			t.Fatal(err)
		}
		if got := rssAnonKB(path); got != tc.want {
			t.Errorf("%s: %d kB, want %d", tc.name, got, tc.want)
		}
	}
	if got := rssAnonKB(filepath.Join(dir, "gone")); got != 0 {
		t.Errorf("a process that is gone: %d kB, want 0", got)
	}
	if got := rssAnonKB("/proc/self/status"); got <= 0 {
		t.Errorf("this process: %d kB, want its private memory", got)
	}
}
