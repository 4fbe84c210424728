package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// --half-width is a --plan flag ("with --plan: …"): without --plan it was
// ignored and the calibration the user did not ask for was written to
// results.json. It is refused (exit 2, naming --plan), nothing written,
// as export refuses --raw outside CSV.
func TestCalibrateHalfWidthNeedsPlan(t *testing.T) {
	dir := copyProject(t)
	writeAgreeingLabels(t, dir, "offline-careful")
	for _, args := range [][]string{{"calibrate", "example", "--half-width", "0.2"}, {"calibrate", "all", "--half-width", "0.2"}} {
		before := snapshot(t, dir)
		code, _, errs := run(t, dir, args...)
		if code != ExitUsage || !strings.Contains(errs, "--plan") {
			t.Errorf("%v: exit %d, want %d naming --plan; stderr %q", args, code, ExitUsage, errs)
		}
		assertSameFiles(t, before, snapshot(t, dir))
	}
	if code, _, errs := run(t, dir, "calibrate", "example", "--plan", "--half-width", "0.2"); code != 0 {
		t.Errorf("calibrate --plan --half-width 0.2: exit %d: %s", code, errs)
	}
}

// writeAgreeingLabels labels every judged row of target as its judge did.
func writeAgreeingLabels(t *testing.T, dir, target string) {
	t.Helper()
	var rows []struct {
		ConvID  string `json:"conv_id"`
		Metric  string `json:"metric_id"`
		Present *bool  `json:"present"`
	}
	if err := json.Unmarshal(readBytes(t, benchFile(dir, "runs", target, "scores.json")), &rows); err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	for _, r := range rows {
		if r.Present != nil {
			fmt.Fprintf(&b, `{"conv_id":%q,"metric_id":%q,"present":%v,"labeler":"me","at":"2026-11-29T00:00:00Z"}`+"\n", r.ConvID, r.Metric, *r.Present)
		}
	}
	if err := os.WriteFile(benchFile(dir, "labels.jsonl"), b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// publish's --addr acts only with --serve, and --serve serves what publish
// writes, which --dry-run does not: either combination was silently
// ignored (exit 0, nothing served). Refused, nothing written.
func TestPublishFlagsThatWouldBeIgnored(t *testing.T) {
	dir := studyProject(t)
	site := filepath.Join(dir, "site")
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"publish", "-o", site, "--addr", "127.0.0.1:0"}, "--serve"},
		{[]string{"publish", "-o", site, "--dry-run", "--serve", "--addr", "127.0.0.1:0"}, "--dry-run"},
	} {
		code, _, errs := run(t, dir, tt.args...)
		if code != ExitUsage || !strings.Contains(errs, tt.want) {
			t.Errorf("%v: exit %d, want %d naming %s; stderr %q", tt.args, code, ExitUsage, tt.want, errs)
		}
		if _, err := os.Stat(site); err == nil {
			t.Errorf("%v wrote %s", tt.args, site)
		}
	}
}
