package viewer_test

import (
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/impactbench/impactbench/internal/viewer"
)

// firstPaintBudget is the acceptance bound for a 20,000-conversation run.
const firstPaintBudget = 2000 // ms

// TestScale20kFirstPaint serves a 20,000-conversation run (2,000 scenarios
// × 5 targets × 2 samples, 12 messages of upstream-like length each: about
// 230 MB of JSON) and measures, in headless Chromium, the time from
// navigation to the run page showing its progress, leaderboard and first
// page of conversations. It logs the cold index build as well. It takes
// about a minute, so it runs only with IMPACTBENCH_SCALE=1:
//
//	IMPACTBENCH_SCALE=1 go test -run TestScale20kFirstPaint -v ./internal/viewer/
func TestScale20kFirstPaint(t *testing.T) {
	if os.Getenv("IMPACTBENCH_SCALE") == "" {
		t.Skip("set IMPACTBENCH_SCALE=1 to run the 20,000-conversation first-paint test")
	}
	project := filepath.Join(t.TempDir(), "project")
	t0 := time.Now()
	_, n := viewer.WriteSynth(t, project, viewer.SynthSpec{Name: "synth", Metrics: 50, ScensPerMetric: 40,
		Targets: []string{"model-a", "model-b", "model-c", "model-d", "model-e"}, Samples: 2, Msgs: 12, MsgLen: 1500, Judges: 3})
	var size int64
	_ = filepath.WalkDir(project, func(_ string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if info, err := d.Info(); err == nil {
				size += info.Size()
			}
		}
		return nil
	})
	t.Logf("generated %d conversations (%.0f MB of JSON) in %v", n, float64(size)/1e6, time.Since(t0).Round(time.Millisecond))
	if n != 20000 {
		t.Fatalf("%d conversations", n)
	}
	srv, base := viewer.StartForTest(t, viewer.Options{ProjectDir: project, Blind: true, Samples: 2})
	t1 := time.Now()
	srv.Warm()
	t.Logf("cold index build (what `view` does at start, in the background): %v", time.Since(t1).Round(time.Millisecond))

	for _, p := range []string{"/api/b/synth/progress", "/api/b/synth/convs?metric=m07&verdict=0", "/api/b/synth/queue?kind=triage",
		"/api/b/synth/queue?kind=calibration&labeler=ana", "/api/b/synth/convs?text=someone+you+trust", "/api/b/synth/convs?text=someone+you+trust&offset=50"} {
		t2 := time.Now()
		resp, err := http.Get(base + p)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		t.Logf("GET %s: %d, %d bytes in %v", p, resp.StatusCode, len(b), time.Since(t2).Round(time.Millisecond))
	}

	ctx, bl := newBrowser(t, base, 1400, 1000)
	var best float64
	for i := range 3 {
		navigate(t, ctx, "about:blank")
		navigate(t, ctx, base+"/#/b/synth")
		waitJS(t, ctx, `!!window.__viewer && window.__viewer.runPaintMs > 0`, 60*time.Second)
		ms := evalJS[float64](t, ctx, `window.__viewer.runPaintMs`)
		fcp := evalJS[float64](t, ctx, `(performance.getEntriesByName('first-contentful-paint')[0] || {startTime: -1}).startTime`)
		t.Logf("load %d: first contentful paint %.0f ms; progress + leaderboard + first list page painted %.0f ms after navigation", i+1, fcp, ms)
		if i == 0 || ms < best {
			best = ms
		}
		if i == 0 && ms > firstPaintBudget {
			t.Errorf("first load painted after %.0f ms, budget %d", ms, firstPaintBudget)
		}
	}
	if got := evalJS[string](t, ctx, `document.getElementById('list-count').textContent`); !strings.HasPrefix(got, "20,000 of 20,000") {
		t.Errorf("list: %q", got)
	}
	rows := evalJS[int](t, ctx, `document.querySelectorAll('#lb-table tbody tr').length`)
	if rows != 5 {
		t.Errorf("leaderboard rows: %d", rows)
	}
	// Cold: a fresh server whose first request builds the index.
	_, cold := viewer.StartForTest(t, viewer.Options{ProjectDir: project, Blind: true, Samples: 2})
	bl.setOrigin(cold, base) // the warm viewer's page may still ask for its favicon.ico
	navigate(t, ctx, cold+"/#/b/synth")
	waitJS(t, ctx, `!!window.__viewer && window.__viewer.runPaintMs > 0`, 60*time.Second)
	t.Logf("cold server (index built on the first request): painted %.0f ms after navigation", evalJS[float64](t, ctx, `window.__viewer.runPaintMs`))
	if dir := os.Getenv("VIEWER_SCREENSHOTS"); dir != "" {
		screenshot(t, ctx, filepath.Join(dir, "viewer-20k.png"))
	}
	assertClean(t, bl)
}
