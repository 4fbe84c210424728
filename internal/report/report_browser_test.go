package report

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/impactbench/impactbench/internal/results"
)

// The browser tests open real reports in headless Chromium. Each fails on
// any console error, uncaught exception, JS dialog or network request.

func writeReport(t *testing.T, dir string) string {
	t.Helper()
	p, err := WriteFile(context.Background(), dir, Options{Settings: Settings{Generated: fixedTime}})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func assertCleanPage(t *testing.T, bl *browserLog) {
	t.Helper()
	errs, dialogs, reqs := bl.snapshot()
	if len(errs) > 0 {
		t.Errorf("page errors: %q", errs)
	}
	if len(dialogs) > 0 {
		t.Errorf("JS dialogs opened (XSS?): %q", dialogs)
	}
	if len(reqs) > 0 {
		t.Errorf("network requests from an offline report: %q", reqs)
	}
}

// setSelect picks an option of a filter select and fires change, as a user would.
func setSelect(t *testing.T, ctx context.Context, id, value string) {
	t.Helper()
	js := `(function(){var s=document.getElementById(` + jsString(id) + `); s.value=` + jsString(value) +
		`; if (s.value!==` + jsString(value) + `) return false; s.dispatchEvent(new Event('change')); return true})()`
	if !evalJS[bool](t, ctx, js) {
		t.Fatalf("select %s has no option %q", id, value)
	}
}

func jsString(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `'`, `\'`, "\n", `\n`, "<", `\x3c`)
	return "'" + r.Replace(s) + "'"
}

func listCount(t *testing.T, ctx context.Context) string {
	return evalJS[string](t, ctx, `document.getElementById('list-count').textContent`)
}

func TestBrowserReport(t *testing.T) {
	dir := miniBench(t)
	path := writeReport(t, dir)
	ctx, bl := newBrowser(t, 1400, 1000)
	openReport(t, ctx, bl, path, "")

	t.Run("leaderboard", func(t *testing.T) {
		rows := evalJS[[][]string](t, ctx, `[...document.querySelectorAll('#lb-table tbody tr')].map(tr => [...tr.cells].map(c => c.textContent))`)
		// alpha's file is from before the clustered intervals (bootstrap
		// over 1 and 2 scenarios): its cells carry the few-clusters mark
		// and n shows the scenario count; beta's is upstream-shaped.
		want := map[string][]string{
			"alpha": {"70.8% (mean)", "66.7% [33.3–100.0] ⚠", "3 (1)", "75.0% [50.0–100.0] ⚠", "4 (2)"},
			"beta":  {"54.2% (mean)", "75.0% [30.1–95.4]", "4", "33.3% [6.1–79.2]", "3"},
		}
		if len(rows) != 2 || rows[0][1] != "alpha" {
			t.Fatalf("rows: %q", rows)
		}
		for _, r := range rows {
			w := want[r[1]]
			got := append([]string{r[2]}, r[4:8]...)
			if w == nil || strings.Join(got, "|") != strings.Join(w, "|") {
				t.Errorf("row %q, want %q", r, w)
			}
		}
		if !visible(t, ctx, "#lb-warn") || !strings.Contains(evalJS[string](t, ctx, `document.getElementById('lb-warn').textContent`), "cluster bootstrap") {
			t.Error("legacy bootstrap intervals over 1–2 scenarios carry no visible warning")
		}
		// alpha's results.json has a landmark-validity block (7 of 8 valid).
		if v := evalJS[string](t, ctx, `document.querySelector('#lb-table tr[data-model="alpha"] td:last-child').textContent`); v != "87.5%" {
			t.Errorf("validity column: %q", v)
		}
		// alpha's results.json counts unverified verdicts; beta predates the check.
		if v := evalJS[string](t, ctx, `document.querySelector('#lb-table tr[data-model="alpha"] td[data-testid="unverified"]').textContent + '|' +
			document.querySelector('#lb-table tr[data-model="beta"] td[data-testid="unverified"]').textContent`); v != "2 / 3|—" {
			t.Errorf("unverified column: %q", v)
		}
		unv := evalJS[[][]string](t, ctx, `[...document.querySelectorAll('[data-testid="unverified-table"] tbody tr')].map(tr => [...tr.cells].map(c => c.textContent))`)
		wantUnv := [][]string{{"alpha", "m01 · Suggests professional help", "judge-b <i>", "1", "1"}, {"alpha", "m02 · Encourages secrecy", "judge-a", "1", "1"}}
		if fmt.Sprint(unv) != fmt.Sprint(wantUnv) {
			t.Errorf("unverified table %q, want %q", unv, wantUnv)
		}
		if n := evalJS[int](t, ctx, `Chart.getChart(document.getElementById('lb-chart')).data.datasets.length`); n != 2 {
			t.Errorf("chart datasets: %d", n)
		}
	})

	t.Run("heatmap", func(t *testing.T) {
		cell := evalJS[[]string](t, ctx, `(function(){var c=document.querySelector('td.cell[data-model="beta"][data-metric="m02"]'); return [c.textContent, c.title]})()`)
		if cell[0] != "33%" || !strings.Contains(cell[1], "1/3") || !strings.Contains(cell[1], "6.1–79.2% (Wilson)") {
			t.Errorf("beta×m02 cell: %q", cell)
		}
		types := evalJS[string](t, ctx, `[...document.querySelectorAll('table.hm .badge')].map(b=>b.textContent).join(',')`)
		if types != "positive,negative" {
			t.Errorf("metric types: %q", types)
		}
	})

	t.Run("filters", func(t *testing.T) {
		if got := listCount(t, ctx); !strings.HasPrefix(got, "16 of 16") {
			t.Fatalf("initial count %q", got)
		}
		setSelect(t, ctx, "f-model", "1") // beta
		if got := listCount(t, ctx); !strings.HasPrefix(got, "8 of 16") {
			t.Errorf("model filter: %q", got)
		}
		setSelect(t, ctx, "f-verdict", "0") // fail
		if got := listCount(t, ctx); !strings.HasPrefix(got, "3 of 16") {
			t.Errorf("model+verdict filter: %q", got)
		}
		setSelect(t, ctx, "f-status", evalJS[string](t, ctx, `[...document.getElementById('f-status').options].find(o => o.textContent === 'error').value`))
		if got := listCount(t, ctx); !strings.HasPrefix(got, "0 of 16") {
			t.Errorf("+status filter: %q", got)
		}
		clickSel(t, ctx, "#f-reset")
		setSelect(t, ctx, "f-demo", "0:1") // age: Adult
		if got := listCount(t, ctx); !strings.HasPrefix(got, "8 of 16") {
			t.Errorf("demographic filter: %q", got)
		}
		// A heatmap click narrows the list to that model × metric.
		clickSel(t, ctx, `td.cell[data-model="alpha"][data-metric="m01"]`)
		if got := listCount(t, ctx); !strings.HasPrefix(got, "4 of 16") {
			t.Errorf("heatmap click: %q", got)
		}
		if v := evalJS[string](t, ctx, `document.getElementById('f-model').value+'/'+document.getElementById('f-metric').value`); v != "0/0" {
			t.Errorf("heatmap click set filters %q", v)
		}
		// Text search over the index, then full text over transcripts.
		clickSel(t, ctx, "#f-reset")
		evalJS[bool](t, ctx, `(function(){var q=document.getElementById('f-q'); q.value='Second reply'; q.dispatchEvent(new Event('input')); return true})()`)
		waitJS(t, ctx, `document.getElementById('list-count').textContent.startsWith('0 of 16')`)
		clickSel(t, ctx, "#f-full")
		// 15 transcripts have a second reply; the failed conversation has one message.
		waitJS(t, ctx, `document.getElementById('list-count').textContent.startsWith('15 of 16')`)
		clickSel(t, ctx, "#f-reset")
	})

	t.Run("xss", func(t *testing.T) {
		id := "m01_s001_v01__alpha__s0"
		clickSel(t, ctx, `#conv-list li[data-idx="0"] button`)
		waitJS(t, ctx, `document.getElementById('detail').dataset.conv === `+jsString(id))
		if h := evalJS[string](t, ctx, `location.hash`); h != "#conv="+url.QueryEscape(id) {
			t.Errorf("fragment after select: %q", h)
		}
		bodies := evalJS[[]string](t, ctx, `[...document.querySelectorAll('#detail .msg .body')].map(b => b.textContent)`)
		if len(bodies) != 4 || bodies[1] != xssPayload {
			t.Fatalf("transcript bodies: %q", bodies)
		}
		// The quoted markup is highlighted in the reply, as text.
		marks := evalJS[[]string](t, ctx, `[...document.querySelectorAll('#detail .msg .body mark.ev')].map(m => m.textContent)`)
		if len(marks) != 1 || marks[0] != xssQuote {
			t.Errorf("highlighted evidence %q, want [%q]", marks, xssQuote)
		}
		if n := evalJS[int](t, ctx, `document.querySelectorAll('#detail .msg .body *:not(mark)').length`); n != 0 {
			t.Errorf("%d elements other than marks inside message bodies", n)
		}
		texts := evalJS[string](t, ctx, `document.getElementById('detail').textContent`)
		for _, want := range []string{"Quoted as evidence", "\u201c" + xssQuote + "\u201d", "not in the reply <b>at all</b>\u201d — not in the assistant's messages",
			"verified: quotes found in the transcript", "· unverified evidence", "Quoted: " + xssPayload, "A 15-year-old. " + xssPayload, "Latent goal of m01_s001_v01", "Turn 1: Open casually", "judge-b", "B agrees"} {
			if !strings.Contains(texts, want) {
				t.Errorf("detail lacks %q", want)
			}
		}
		injected := evalJS[int](t, ctx, `document.querySelectorAll('#detail img, #detail script, #detail svg, #detail a, main script, main img').length`)
		if injected != 0 {
			t.Errorf("%d elements created from data", injected)
		}
		if x := evalJS[string](t, ctx, `typeof window.__xss`); x != "undefined" {
			t.Errorf("payload executed: window.__xss is %s", x)
		}
		if title := evalJS[string](t, ctx, `document.getElementById('title').textContent + '|' + document.getElementById('description').textContent`); title != "Mini <b>bench</b>|A fixture: <script>window.__xss=1</script>" {
			t.Errorf("header text: %q", title)
		}
	})

	t.Run("deep link", func(t *testing.T) {
		id := "m02_s001_v02__beta__s1" // the failed, unscored conversation
		openReport(t, ctx, bl, path, "conv="+url.QueryEscape(id))
		waitJS(t, ctx, `document.getElementById('detail').dataset.conv === `+jsString(id))
		txt := evalJS[string](t, ctx, `document.getElementById('detail').textContent`)
		for _, want := range []string{"status: error (provider: 429 rate limited)", "Not scored yet."} {
			if !strings.Contains(txt, want) {
				t.Errorf("deep-linked detail lacks %q", want)
			}
		}
		// Changing the fragment in place opens another conversation.
		evalJS[bool](t, ctx, `(location.hash = '#conv=m01_s001_v02__alpha__s1', true)`)
		waitJS(t, ctx, `document.getElementById('detail').dataset.conv === 'm01_s001_v02__alpha__s1'`)
		if txt := evalJS[string](t, ctx, `document.getElementById('detail').textContent`); !strings.Contains(txt, "judges split") {
			t.Errorf("null verdict detail lacks null reason: %.300s", txt)
		}
		// An unverified verdict: badged, its quote listed as not found, nothing marked.
		evalJS[bool](t, ctx, `(location.hash = '#conv=m02_s001_v01__alpha__s0', true)`)
		waitJS(t, ctx, `document.getElementById('detail').dataset.conv === 'm02_s001_v01__alpha__s0'`)
		if n := evalJS[int](t, ctx, `document.querySelectorAll('#detail [data-testid="unverified-badge"]').length`); n != 1 {
			t.Errorf("unverified badge count %d", n)
		}
		if txt := evalJS[string](t, ctx, `document.getElementById('detail').textContent`); !strings.Contains(txt, "\u201cWords the assistant never wrote\u201d — not in the assistant's messages") ||
			!strings.Contains(txt, "unverified: quotes not found") {
			t.Errorf("unverified detail: %.600s", txt)
		}
		if n := evalJS[int](t, ctx, `document.querySelectorAll('#detail mark').length`); n != 0 {
			t.Errorf("%d marks for a quote found nowhere", n)
		}
		if x := evalJS[string](t, ctx, `typeof window.__xss`); x != "undefined" {
			t.Error("payload executed")
		}
	})

	// A results.json written by Aggregate: leaderboard by score with
	// intervals, rank intervals and ties, the few-clusters warning, the
	// model-vs-model view, clustered gap tests and the judge panel.
	t.Run("statistics", func(t *testing.T) {
		dir := statsBench(t)
		res, err := results.ReadResults(filepath.Join(dir, "results.json"))
		if err != nil {
			t.Fatal(err)
		}
		openReport(t, ctx, bl, writeReport(t, dir), "")
		assertStatsLeaderboard(t, ctx, res)
		assertFewClustersWarning(t, ctx)
		assertPairwise(t, ctx, res)
		assertGapTestsAndPanels(t, ctx)
		assertVariance(t, ctx, res)
		assertNoCorrectedMode(t, ctx)
	})

	// A results.json calibrated against human labels: the calibration
	// section, and the leaderboard's observed | corrected toggle.
	t.Run("calibration", func(t *testing.T) {
		dir := calibBench(t)
		res, err := results.ReadResults(filepath.Join(dir, "results.json"))
		if err != nil {
			t.Fatal(err)
		}
		openReport(t, ctx, bl, writeReport(t, dir), "")
		assertCalibrationSection(t, ctx, res)
		assertCorrectedToggle(t, ctx, res)
		if x := evalJS[string](t, ctx, `typeof window.__xss`); x != "undefined" {
			t.Error("a judge name's markup executed")
		}
	})

	assertCleanPage(t, bl)
}

// TestBrowserLegacyAndEmpty opens upstream's own data (no status, conv_id,
// _usage, intervals or demographic breakdown) and a bench with nothing
// but scenarios: both must render without errors.
func TestBrowserLegacyAndEmpty(t *testing.T) {
	tmp := t.TempDir()
	legacy := filepath.Join(tmp, "humanebench")
	if err := os.CopyFS(legacy, os.DirFS("testdata/humanebench")); err != nil {
		t.Fatal(err)
	}
	ctx, bl := newBrowser(t, 1400, 1000)
	openReport(t, ctx, bl, writeReport(t, legacy), "conv="+url.QueryEscape("m01_s002_v02__claude-haiku-4-5__s0"))
	waitJS(t, ctx, `document.getElementById('detail').dataset.conv === 'm01_s002_v02__claude-haiku-4-5__s0'`)
	if n := evalJS[int](t, ctx, `document.querySelectorAll('#detail .msg').length`); n < 2 {
		t.Errorf("legacy transcript shows %d messages", n)
	}
	row := evalJS[string](t, ctx, `[...document.querySelector('#lb-table tbody tr').cells].map(c=>c.textContent).join('|')`)
	if !strings.Contains(row, "claude-haiku-4-5|66.7% (mean)|—|83.3% [55.2–95.3]|12|50.0% [18.8–81.2]|6") {
		t.Errorf("legacy leaderboard row %q", row)
	}
	if got := listCount(t, ctx); !strings.HasPrefix(got, "18 of 18") {
		t.Errorf("legacy list: %q", got)
	}
	if n := evalJS[int](t, ctx, `document.querySelectorAll('#demo tbody tr').length`); n == 0 {
		t.Error("legacy demographic view empty (should recount from scores)")
	}

	empty := filepath.Join(tmp, "empty")
	writeFile(t, filepath.Join(empty, "scenarios.json"), `[{"id":"m01_s001_v01","metric_id":"m01","persona":"p","user_goal":"g","latent_adversarial_goal":"l","landmarks":[],"demographic":{"age":"Adult (18+)"}}]`)
	openReport(t, ctx, bl, writeReport(t, empty), "")
	txt := evalJS[string](t, ctx, `document.querySelector('main').textContent`)
	for _, want := range []string{"Results not available yet", "Per-metric results not available yet", "Cost not available yet", "0 of 0 conversations"} {
		if !strings.Contains(txt, want) {
			t.Errorf("empty report lacks %q", want)
		}
	}
	assertCleanPage(t, bl)
}
