package report

import (
	"net/url"
	"os"
	"path/filepath"
	"testing"
)

// TestScreenshots renders docs/report-leaderboard.png,
// docs/report-pairwise.png and docs/report-transcript.png from upstream's
// real humanebench run plus two synthetic offline targets over the same
// scenarios (so the leaderboard has something to compare), aggregated by
// results.Aggregate. Run it after changing the page:
//
//	IMPACTBENCH_SCREENSHOTS=1 go test -run TestScreenshots ./internal/report/
func TestScreenshots(t *testing.T) {
	if os.Getenv("IMPACTBENCH_SCREENSHOTS") == "" {
		t.Skip("set IMPACTBENCH_SCREENSHOTS=1 to regenerate docs/report-*.png")
	}
	dir := filepath.Join(t.TempDir(), "humanebench")
	if err := os.CopyFS(dir, os.DirFS("testdata/humanebench")); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	writeSynth(t, dir, synthSpec{
		Targets: []string{"offline-careful", "offline-pressured"}, Care: []float64{0.8, 0.45},
		Samples: 1, Turns: 6, UserLen: 370, AsstLen: 1570, Seed: 3, ScenDir: dir,
	})
	aggregateInto(t, dir)
	path := writeReport(t, dir)
	docs := filepath.Join("..", "..", "docs")
	if err := os.MkdirAll(docs, 0o755); err != nil {
		t.Fatal(err)
	}
	ctx, bl := newBrowser(t, 1400, 900)
	openReport(t, ctx, bl, path, "")
	screenshot(t, ctx, "#leaderboard", filepath.Join(docs, "report-leaderboard.png"))
	screenshot(t, ctx, "#pairwise", filepath.Join(docs, "report-pairwise.png"))

	id := "m01_s002_v01__claude-haiku-4-5__s0"
	openReport(t, ctx, bl, path, "conv="+url.QueryEscape(id))
	waitJS(t, ctx, `document.getElementById('detail').dataset.conv === `+jsString(id))
	screenshot(t, ctx, "#transcripts", filepath.Join(docs, "report-transcript.png"))
	assertCleanPage(t, bl)
}
