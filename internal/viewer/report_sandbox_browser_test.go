package viewer_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/impactbench/impactbench/internal/report"
	"github.com/impactbench/impactbench/internal/viewer"
)

// attackJS is what a crafted report.html in a shared benchmark folder would
// run: open the viewer's page in a popup and read its session token (or
// fetch the page and cut the token out), read another benchmark's
// conversations, and record a forged label with the token. It leaves what
// it got in window.__attack.
const attackJS = `(async function () {
  var A = window.__attack = { origin: String(window.origin), token: '', steps: {}, done: false };
  function note(k, v) { A.steps[k] = String(v); }
  var popup = null;
  try { popup = window.open('/'); note('open', popup ? 'opened' : 'blocked'); } catch (e) { note('open', 'threw ' + e); }
  if (popup) {
    for (var i = 0; i < 50 && !A.token; i++) {
      await new Promise(function (r) { setTimeout(r, 100); });
      try { var m = popup.document.querySelector('meta[name=ib-token]'); if (m) A.token = m.content; } catch (e) { note('popupDOM', 'denied ' + e); break; }
    }
  }
  try {
    var t = await (await fetch('/')).text();
    var mm = t.match(/name="ib-token" content="([0-9a-f]+)"/);
    if (mm) A.token = A.token || mm[1];
    note('fetchPage', 'read ' + t.length);
  } catch (e) { note('fetchPage', 'failed ' + e); }
  var f = popup && A.token ? popup.fetch.bind(popup) : fetch;
  try {
    var r = await f('/api/b/victim/convs');
    note('readConvs', r.status + ' ' + (await r.text()).length);
  } catch (e) { note('readConvs', 'failed ' + e); }
  try {
    var p = await f('/api/b/victim/labels', { method: 'POST',
      headers: { 'Content-Type': 'application/json', 'X-IB-Token': A.token },
      body: JSON.stringify({ conv_id: 'm01_s001_v01__alpha__s0', metric_id: 'm01', present: true, labeler: 'mallory', note: 'forged' }) });
    note('postLabel', p.status);
  } catch (e) { note('postLabel', 'failed ' + e); }
  try { if (popup) popup.close(); } catch (e) {}
  A.done = true;
  return true;
})()`

type attackResult struct {
	Origin string            `json:"origin"`
	Token  string            `json:"token"`
	Steps  map[string]string `json:"steps"`
	Done   bool              `json:"done"`
}

// TestBrowserReportCannotActInViewerOrigin: a benchmark folder holding only
// benchmark.yaml and a crafted report.html (newer than its inputs, as a
// clone leaves it) must not get a script to act as the viewer. Two files:
// a plain page, which the viewer does not serve (this build did not write
// it) and replaces with a report built now; and one that begins exactly as
// this build's reports do, which is served, but whose extra script does not
// run (the header allows only the report's own scripts). In both, the same
// attack run in the served page by the test (DevTools evaluation passes the
// page's script policy) runs in an opaque origin, opens no popup, gets no
// token, reads nothing and writes no label.
func TestBrowserReportCannotActInViewerOrigin(t *testing.T) {
	script := `<script>document.getElementById('go').addEventListener('click', function () { ` + attackJS + ` });</script>`
	body := `<button id="go">Open the leaderboard</button><p id="crafted"></p>` + script + `</body></html>`
	own := ownReportHead(t)
	for _, tc := range []struct {
		name, page string
		served     bool // the viewer serves the file itself
	}{
		{"plain page", `<!DOCTYPE html><html><head><title>Evil report</title></head><body>` + body, false},
		{"own report head", own + `<title>Evil report</title></head><body>` + body, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			project := filepath.Join(t.TempDir(), "project")
			victim, _ := viewer.WriteSynth(t, project, viewer.SynthSpec{Name: "victim", Metrics: 2, ScensPerMetric: 1,
				Targets: []string{"alpha"}, Samples: 1, Msgs: 2, MsgLen: 40, Judges: 1})
			evil := filepath.Join(project, "benchmarks", "evil")
			noErr(t, os.MkdirAll(evil, 0o755))
			yml := "name: Evil\ndescription: shared folder\nmetrics:\n  - id: m01\n    name: M\n    type: positive\n    definition: D.\n"
			noErr(t, os.WriteFile(filepath.Join(evil, "benchmark.yaml"), []byte(yml), 0o644))
			craftedPath := filepath.Join(evil, "report.html")
			noErr(t, os.WriteFile(craftedPath, []byte(tc.page), 0o644))
			future := time.Now().Add(time.Hour)
			noErr(t, os.Chtimes(craftedPath, future, future))
			_, base := viewer.StartForTest(t, viewer.Options{ProjectDir: project})
			ctx, _ := newBrowser(t, base, 1200, 800)

			navigate(t, ctx, base+"/report/evil")
			if served := evalJS[bool](t, ctx, `!!document.getElementById('crafted')`); served != tc.served {
				t.Fatalf("crafted file served as is: %v, want %v", served, tc.served)
			}
			// A real click (input events, so the page has user activation
			// and a popup would not be blocked for want of one).
			if tc.served {
				cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
				if _, err := chromedp.Run(cctx, chromedp.Click("#go")); err != nil {
					t.Fatalf("click: %v", err)
				}
				cancel()
				pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
				_, _ = chromedp.Run(pctx, chromedp.Poll[bool](`!window.__attack || window.__attack.done`))
				cancel()
			}
			if ran := evalJS[bool](t, ctx, `!!window.__attack`); ran {
				t.Errorf("the crafted report's own script ran: %+v", evalJS[attackResult](t, ctx, `window.__attack`))
			}

			// The same attack, run in the served page with a user gesture.
			yes := true
			withGesture := func(p *runtime.EvaluateParams) { p.UserGesture = &yes }
			if _, err := chromedp.Run(ctx, chromedp.Evaluate[bool](attackJS, chromedp.EvalAwaitPromise, withGesture)); err != nil {
				t.Fatalf("attack: %v", err)
			}
			got := evalJS[attackResult](t, ctx, `window.__attack`)
			t.Logf("attack from the served report: %+v", got)
			if !got.Done {
				t.Fatalf("attack did not finish: %+v", got)
			}
			if got.Origin != "null" {
				t.Errorf("report runs in origin %q, want the opaque origin \"null\"", got.Origin)
			}
			if got.Token != "" {
				t.Errorf("attack read the session token")
			}
			if got.Steps["open"] != "blocked" {
				t.Errorf("popup: %s", got.Steps["open"])
			}
			for _, k := range []string{"fetchPage", "readConvs", "postLabel"} {
				if !strings.HasPrefix(got.Steps[k], "failed") {
					t.Errorf("%s: %s", k, got.Steps[k])
				}
			}
			if b, err := os.ReadFile(filepath.Join(victim, "labels.jsonl")); !os.IsNotExist(err) {
				t.Errorf("a label was written: %q", b)
			}
		})
	}
}

// ownReportHead is how a report this build writes begins, up to its title.
func ownReportHead(t *testing.T) string {
	t.Helper()
	project := filepath.Join(t.TempDir(), "project")
	bench, _ := viewer.WriteSynth(t, project, viewer.SynthSpec{Name: "x", Metrics: 1, ScensPerMetric: 1,
		Targets: []string{"alpha"}, Samples: 1, Msgs: 2, MsgLen: 10, Judges: 1})
	in, err := report.Load(bench, report.Settings{})
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	if err := report.Build(context.Background(), in, &b); err != nil {
		t.Fatal(err)
	}
	head, _, ok := strings.Cut(b.String(), "<title>")
	if !ok || !report.IsOwn([]byte(head)) {
		t.Fatalf("report head %q", head)
	}
	return head
}

// TestBrowserReportRendersSandboxed: the report impactbench wrote, served
// from disk under the sandbox, still renders: leaderboard, charts, and a
// transcript opened from the list (gzip chunks decoded in the page, the
// address updated with the conversation), with no error in the page.
func TestBrowserReportRendersSandboxed(t *testing.T) {
	project := filepath.Join(t.TempDir(), "project")
	bench, _ := viewer.WriteSynth(t, project, viewer.SynthSpec{Name: "mini", Metrics: 2, ScensPerMetric: 2,
		Targets: []string{"alpha", "beta"}, Samples: 2, Msgs: 4, MsgLen: 80, Judges: 2, XSS: true})
	in, err := report.Load(bench, report.Settings{})
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(filepath.Join(bench, "report.html"))
	if err != nil {
		t.Fatal(err)
	}
	if err := report.Build(context.Background(), in, f); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	// A marker in the file on disk proves the page came from it.
	b, err := os.ReadFile(filepath.Join(bench, "report.html"))
	if err != nil {
		t.Fatal(err)
	}
	b = []byte(strings.Replace(string(b), "</body>", "<p id=\"from-disk\" hidden></p></body>", 1))
	if err := os.WriteFile(filepath.Join(bench, "report.html"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	future := time.Now().Add(time.Hour)
	if err := os.Chtimes(filepath.Join(bench, "report.html"), future, future); err != nil {
		t.Fatal(err)
	}
	_, base := viewer.StartForTest(t, viewer.Options{ProjectDir: project})
	ctx, bl := newBrowser(t, base, 1400, 1000)
	navigate(t, ctx, base+"/report/mini")
	waitJS(t, ctx, `window.__reportReady === true`, 30*time.Second)
	if !evalJS[bool](t, ctx, `!!document.getElementById('from-disk')`) {
		t.Error("the up-to-date report.html was not served from disk")
	}
	if o := evalJS[string](t, ctx, `String(window.origin)`); o != "null" {
		t.Errorf("report origin %q, want opaque", o)
	}
	if n := evalJS[int](t, ctx, `document.querySelectorAll('#lb-table tbody tr').length`); n != 2 {
		t.Errorf("leaderboard rows: %d", n)
	}
	if n := evalJS[int](t, ctx, `document.querySelectorAll('canvas').length`); n == 0 {
		t.Error("no chart drawn")
	}
	clickSel(t, ctx, "#conv-list li button")
	waitJS(t, ctx, `document.querySelectorAll('#detail .msg').length > 0`, 20*time.Second)
	id := evalJS[string](t, ctx, `document.getElementById('detail').dataset.conv`)
	if h := evalJS[string](t, ctx, `location.hash`); h != "#conv="+id {
		t.Errorf("hash %q after opening %s", h, id)
	}
	if x := evalJS[string](t, ctx, `typeof window.__xss`); x != "undefined" {
		t.Errorf("an XSS payload ran: window.__xss is %s", x)
	}
	assertClean(t, bl)
}

func noErr(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
