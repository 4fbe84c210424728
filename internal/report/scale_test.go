package report

import (
	"context"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// Scale budgets, set with headroom over the measured numbers (see
// internal/report/assets/README.md) so a regression that doubles the size
// or the load time fails, while machine noise does not.
const (
	scaleMaxBytes    = 160 << 20
	scaleMaxBuild    = 90 * time.Second
	scaleMaxReadyMs  = 10000
	scaleMaxFilterMs = 500
	scaleMaxOpenMs   = 2000
)

func dirSize(t testing.TB, dir string) int64 {
	var n int64
	err := filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			info, err := d.Info()
			if err != nil {
				return err
			}
			n += info.Size()
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TestScale20k builds a report for 20,000 synthetic conversations and loads
// it in headless Chromium. It takes about a minute, so it runs only with
// IMPACTBENCH_SCALE=1:
//
//	IMPACTBENCH_SCALE=1 go test -run TestScale20k -v ./internal/report/
func TestScale20k(t *testing.T) {
	if os.Getenv("IMPACTBENCH_SCALE") == "" {
		t.Skip("set IMPACTBENCH_SCALE=1 to run the 20,000-conversation scale test")
	}
	dir := t.TempDir()
	t0 := time.Now()
	spec := defaultScale()
	spec.XSSFirst = true
	n := writeSynth(t, dir, spec)
	t.Logf("generated %d conversations (%.0f MB of JSON) in %v", n, float64(dirSize(t, dir))/1e6, time.Since(t0).Round(time.Millisecond))

	t1 := time.Now()
	in, err := Load(dir, Settings{})
	if err != nil {
		t.Fatal(err)
	}
	loadDur := time.Since(t1)
	t2 := time.Now()
	f, err := os.Create(filepath.Join(dir, "report.html"))
	if err != nil {
		t.Fatal(err)
	}
	if err := Build(context.Background(), in, f); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	buildDur := time.Since(t2)
	info, _ := os.Stat(f.Name())
	t.Logf("report: %d bytes (%.1f MB); load %v + build %v = %v", info.Size(), float64(info.Size())/1e6,
		loadDur.Round(time.Millisecond), buildDur.Round(time.Millisecond), (loadDur + buildDur).Round(time.Millisecond))
	if info.Size() > scaleMaxBytes {
		t.Errorf("report is %d bytes, budget %d", info.Size(), scaleMaxBytes)
	}
	if loadDur+buildDur > scaleMaxBuild {
		t.Errorf("load+build took %v, budget %v", loadDur+buildDur, scaleMaxBuild)
	}

	ctx, bl := newBrowser(t, 1400, 1000)
	timings := openReport(t, ctx, bl, f.Name(), "")
	t.Logf("browser: script start %.0f ms, first render %.0f ms, ready (DOMContentLoaded, all chunks parsed) %.0f ms after navigation start",
		timings["scriptStartMs"], timings["firstRenderMs"], timings["domReadyMs"])
	if timings["domReadyMs"] > scaleMaxReadyMs {
		t.Errorf("ready after %.0f ms, budget %d", timings["domReadyMs"], scaleMaxReadyMs)
	}
	if got := listCount(t, ctx); !strings.HasPrefix(got, "20,000 of 20,000") {
		t.Fatalf("list: %q", got)
	}
	filterMs := evalJS[float64](t, ctx, `(function(){var t=performance.now(); var s=document.getElementById('f-demo'); s.value='0:1'; s.dispatchEvent(new Event('change')); return performance.now()-t})()`)
	t.Logf("filter over 20,000 rows + list render: %.1f ms (%s)", filterMs, listCount(t, ctx))
	if filterMs > scaleMaxFilterMs {
		t.Errorf("filter took %.0f ms, budget %d", filterMs, scaleMaxFilterMs)
	}
	// Open the last conversation (cold chunk): inflate + render.
	openMs := evalJS[float64](t, ctx, `(function(){var t=performance.now(); location.hash='#conv=m50_s005_v08__model-e__s1';
		return new Promise(function(res){(function w(){ if (document.getElementById('detail').dataset.conv==='m50_s005_v08__model-e__s1') res(performance.now()-t); else setTimeout(w, 5)})()})})()`)
	msgs := evalJS[int](t, ctx, `document.querySelectorAll('#detail .msg').length`)
	t.Logf("open a conversation from a cold chunk: %.0f ms (%d messages)", openMs, msgs)
	if msgs != 12 || openMs > scaleMaxOpenMs {
		t.Errorf("open: %d messages in %.0f ms (budget %d)", msgs, openMs, scaleMaxOpenMs)
	}
	// Full-text search inflates every chunk once (bounded LRU, so memory stays flat).
	clickSel(t, ctx, "#f-reset")
	fullMs := evalJS[float64](t, ctx, `(function(){var t=performance.now(); document.getElementById('f-q').value='zzq-no-such-word';
		var f=document.getElementById('f-full'); f.checked=true; f.dispatchEvent(new Event('change'));
		return new Promise(function(res){(function w(){
			if (document.getElementById('list-count').textContent.indexOf('0 of 20,000')===0) res(performance.now()-t);
			else if (performance.now()-t > 60000) res(-1); else setTimeout(w, 20)})()})})()`)
	if fullMs < 0 {
		t.Errorf("full-text search did not finish in 60 s: %q", listCount(t, ctx))
	}
	t.Logf("full-text search over all transcripts and judge text: %.0f ms", fullMs)
	heap := evalJS[float64](t, ctx, `performance.memory ? performance.memory.usedJSHeapSize/1e6 : -1`)
	t.Logf("JS heap after load: %.0f MB", heap)
	assertCleanPage(t, bl)
}

var (
	benchOnce sync.Once
	benchIn   Input
)

// BenchmarkBuild20k measures Build alone (data already loaded):
//
//	go test -run '^$' -bench Build20k -benchtime 3x ./internal/report/
func BenchmarkBuild20k(b *testing.B) {
	benchOnce.Do(func() {
		dir, err := os.MkdirTemp("", "ib-bench-")
		if err != nil {
			b.Fatal(err)
		}
		defer os.RemoveAll(dir)
		writeSynth(b, dir, defaultScale())
		if benchIn, err = Load(dir, Settings{}); err != nil {
			b.Fatal(err)
		}
	})
	b.ResetTimer()
	for b.Loop() {
		cw := &countWriter{}
		if err := Build(context.Background(), benchIn, cw); err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(cw.n), "bytes/report")
	}
}

type countWriter struct{ n int64 }

func (c *countWriter) Write(p []byte) (int, error) { c.n += int64(len(p)); return len(p), nil }

var _ io.Writer = (*countWriter)(nil)
