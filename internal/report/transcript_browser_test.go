package report

import (
	"net/url"
	"strings"
	"testing"
)

// addThoughts gives the first conversation of alpha's conversations.json
// the simulated user's hidden reasoning (with the XSS payload: it is model
// text and must stay text).
func addThoughts(t *testing.T, dir string) {
	t.Helper()
	editConvs(t, dir, "alpha", func(convs []map[string]any) {
		convs[0]["user_thoughts"] = []string{"PLAN-ONE " + xssPayload, "PLAN-TWO"}
	})
}

// addTurnFlags marks messages of the same conversation as the row stores
// them: its first reply (the XSS payload) and its second, emptied, as
// refused by the provider; the second user message as made from a reply
// cut short; the first as repaired (and one _repairs entry that names no
// message, which marks nothing).
func addTurnFlags(t *testing.T, dir string) {
	t.Helper()
	editConvs(t, dir, "alpha", func(convs []map[string]any) {
		convs[0]["transcript"].([]any)[3].(map[string]any)["content"] = ""
		convs[0]["refused"] = []int{1, 3}
		convs[0]["truncated"] = []int{2}
		convs[0]["_repairs"] = []string{"message 0: removed quotes or emphasis around the message", "not a message " + xssPayload}
	})
}

// TestBrowserTranscriptViewer: a #conv= link scrolls to the transcript,
// the simulated user's hidden reasoning shows behind a toggle, as text,
// and the messages the row marks (refused by the provider, cut short,
// repaired) carry a badge saying so.
func TestBrowserTranscriptViewer(t *testing.T) {
	dir := miniBench(t)
	addThoughts(t, dir)
	addTurnFlags(t, dir)
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

	t.Run("hidden reasoning behind a toggle, badges on marked messages", func(t *testing.T) {
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
		// The refused replies carry the badge, in the assistant's messages;
		// the cut-short and repaired user messages theirs.
		badges := func(id string) []string {
			return evalJS[[]string](t, ctx, `[...document.querySelectorAll('#detail [data-testid=`+id+`]')].map(e => e.closest('.msg').className + ': ' + e.textContent)`)
		}
		if got := strings.Join(badges("refused-badge"), " | "); got != "msg assistant: provider safety stop | msg assistant: provider safety stop" {
			t.Errorf("refused badges: %q", got)
		}
		if got := strings.Join(badges("truncated-badge"), " | "); got != "msg user: cut short" {
			t.Errorf("cut-short badges: %q", got)
		}
		if got := strings.Join(badges("repair-badge"), " | "); got != "msg user: repaired: removed quotes or emphasis around the message" {
			t.Errorf("repair badges: %q", got)
		}
		// The refused reply's text stays text; the empty one says it has none.
		bodies := evalJS[[]string](t, ctx, `[...document.querySelectorAll('#detail .msg.assistant .body')].map(e => e.textContent)`)
		if len(bodies) != 2 || bodies[0] != xssPayload || !strings.HasPrefix(bodies[1], "(no text: the provider returned none") {
			t.Errorf("assistant messages: %q", bodies)
		}
		if x := evalJS[string](t, ctx, `typeof window.__xss`); x != "undefined" {
			t.Error("payload executed")
		}
		if n := evalJS[int](t, ctx, `document.querySelectorAll('#detail img, #detail script').length`); n != 0 {
			t.Errorf("%d elements created from the reasoning or a refused reply", n)
		}
		// A conversation without reasoning has no toggle, and one whose row
		// marks no message has no badge.
		other := "m02_s001_v02__beta__s1"
		evalJS[bool](t, ctx, `(location.hash = '#conv=`+other+`', true)`)
		waitJS(t, ctx, `document.getElementById('detail').dataset.conv === `+jsString(other))
		if n := evalJS[int](t, ctx, `document.querySelectorAll('#detail [data-testid=show-thoughts]').length`); n != 0 {
			t.Errorf("a toggle on a conversation without reasoning")
		}
		if n := evalJS[int](t, ctx, `document.querySelectorAll('#detail .who .badge').length`); n != 0 {
			t.Errorf("%d badges on a conversation whose row marks no message", n)
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
