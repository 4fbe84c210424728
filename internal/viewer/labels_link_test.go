package viewer

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// TestPostedLabelNeverWritesThroughALink: a labels.jsonl that is a
// symbolic link (here to a shell's startup file, which would run an
// appended line as code) is refused and the file it points at is left
// byte for byte as it was.
func TestPostedLabelNeverWritesThroughALink(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("symbolic links need privileges on Windows")
	}
	project, bench := miniProject(t)
	rc := filepath.Join(t.TempDir(), ".bashrc")
	const before = "# ~/.bashrc\nexport PATH=$HOME/bin:$PATH\n"
	must(t, os.WriteFile(rc, []byte(before), 0o644))
	must(t, os.Symlink(rc, filepath.Join(bench, "labels.jsonl")))
	s, base := StartForTest(t, Options{ProjectDir: project})
	hdr := map[string]string{"Origin": base, "Content-Type": "application/json", "X-IB-Token": s.Token()}
	code, body := do(t, base, req{"POST", "/api/b/mini/labels", goodLabel, hdr})
	if code < 400 || !strings.Contains(body, "symbolic link") {
		t.Errorf("POST through a linked labels.jsonl: %d %s, want a refusal naming the link", code, body)
	}
	if b, err := os.ReadFile(rc); err != nil || string(b) != before {
		t.Errorf("the link's target changed: %q (%v)", b, err)
	}
}
