package report

import (
	"encoding/json"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// addThoughts gives the first conversation of alpha's conversations.json
// the simulated user's hidden reasoning (with the XSS payload: it is model
// text and must stay text).
func addThoughts(t *testing.T, dir string) {
	t.Helper()
	path := filepath.Join(dir, "runs", "alpha", "conversations.json")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var convs []map[string]any
	if err := json.Unmarshal(b, &convs); err != nil {
		t.Fatal(err)
	}
	convs[0]["user_thoughts"] = []string{"PLAN-ONE " + xssPayload, "PLAN-TWO"}
	writeJSON(t, path, convs)
}

// TestBrowserTranscriptViewer: a #conv= link scrolls to the transcript,
// and the simulated user's hidden reasoning shows behind a toggle, as text.
func TestBrowserTranscriptViewer(t *testing.T) {
	dir := miniBench(t)
	addThoughts(t, dir)
	path := writeReport(t, dir)
	// A short window: the transcript viewer starts far below the fold.
	ctx, bl := newBrowser(t, 1200, 500)

	t.Run("deep link scrolls to the transcript", func(t *testing.T) {
		id := "m02_s001_v02__beta__s1"
		openReport(t, ctx, bl, path, "conv="+url.QueryEscape(id))
		waitJS(t, ctx, `document.getElementById('detail').dataset.conv === `+jsString(id))
		waitJS(t, ctx, `window.scrollY > 0`)
		top := evalJS[float64](t, ctx, `document.getElementById('detail').getBoundingClientRect().top`)
		if top < -1 || top > 100 {
			t.Errorf("the transcript is at %.0fpx from the top of the window after a deep link", top)
		}
	})

	t.Run("hidden reasoning behind a toggle", func(t *testing.T) {
		id := "m01_s001_v01__alpha__s0"
		openReport(t, ctx, bl, path, "conv="+url.QueryEscape(id))
		waitJS(t, ctx, `document.getElementById('detail').dataset.conv === `+jsString(id))
		visible := `[...document.querySelectorAll('#detail [data-testid=thought]')].filter(e => !e.hidden).map(e => e.textContent)`
		if n := evalJS[int](t, ctx, `document.querySelectorAll('#detail [data-testid=thought]').length`); n != 2 {
			t.Fatalf("%d thought elements, want one per user message with reasoning (2)", n)
		}
		if v := evalJS[[]string](t, ctx, visible); len(v) != 0 {
			t.Errorf("reasoning shown before the toggle: %q", v)
		}
		clickSel(t, ctx, `#detail [data-testid=show-thoughts]`)
		v := evalJS[[]string](t, ctx, visible)
		if len(v) != 2 || !strings.Contains(v[0], "PLAN-ONE "+xssPayload) || !strings.Contains(v[1], "PLAN-TWO") {
			t.Errorf("reasoning after the toggle: %q", v)
		}
		// Each thought sits in its own user message, above what was said.
		owner := evalJS[[]string](t, ctx, `[...document.querySelectorAll('#detail [data-testid=thought]')].map(e => e.parentElement.className)`)
		if strings.Join(owner, ",") != "msg user,msg user" {
			t.Errorf("thoughts inside %q", owner)
		}
		if x := evalJS[string](t, ctx, `typeof window.__xss`); x != "undefined" {
			t.Error("payload executed")
		}
		if n := evalJS[int](t, ctx, `document.querySelectorAll('#detail img, #detail script').length`); n != 0 {
			t.Errorf("%d elements created from the reasoning", n)
		}
		// A conversation without reasoning has no toggle.
		other := "m02_s001_v02__beta__s1"
		evalJS[bool](t, ctx, `(location.hash = '#conv=`+other+`', true)`)
		waitJS(t, ctx, `document.getElementById('detail').dataset.conv === `+jsString(other))
		if n := evalJS[int](t, ctx, `document.querySelectorAll('#detail [data-testid=show-thoughts]').length`); n != 0 {
			t.Errorf("a toggle on a conversation without reasoning")
		}
	})

	assertCleanPage(t, bl)
}

// TestBrowserPeoplesConversations: a conversation a person played shows in
// the transcript viewer with its player in the list and as the user's
// voice, and a draft says it is one.
func TestBrowserPeoplesConversations(t *testing.T) {
	dir := miniBench(t)
	judged, draft := addPlayed(t, dir)
	path := writeReport(t, dir)
	ctx, bl := newBrowser(t, 1200, 900)
	openReport(t, ctx, bl, path, "conv="+url.QueryEscape(judged))
	waitJS(t, ctx, `document.getElementById('detail').dataset.conv === `+jsString(judged))
	if who := evalJS[string](t, ctx, `document.querySelector('#detail .msg.user .who').textContent`); who != "Person · ana" {
		t.Errorf("the user of a played conversation shows as %q", who)
	}
	openReport(t, ctx, bl, path, "conv="+url.QueryEscape(draft))
	waitJS(t, ctx, `document.getElementById('detail').dataset.conv === `+jsString(draft))
	if head := evalJS[string](t, ctx, `document.querySelector('#detail .detail-head').textContent`); !strings.Contains(head, "played by a person: bo (a draft") {
		t.Errorf("draft head %q", head)
	}
	assertCleanPage(t, bl)
}
