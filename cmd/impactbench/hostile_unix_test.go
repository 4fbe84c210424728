//go:build darwin || dragonfly || freebsd || linux || netbsd || openbsd

package main

// TestHugeRepliesAreCut measures the peak memory of an invocation through
// syscall.Rusage's Maxrss, and TestProviderErrorTextIsShownAsText reads
// status on a terminal (startPTY): neither is there on Windows.

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/impactbench/impactbench/internal/llm"
	"github.com/impactbench/impactbench/internal/llm/llmtest"
)

// maxRSS is the peak resident memory of a finished invocation, in MiB.
func maxRSS(r result) int64 {
	if ru, ok := r.state.SysUsage().(*syscall.Rusage); ok {
		if runtime.GOOS == "darwin" {
			return ru.Maxrss >> 20 // bytes on macOS
		}
		return ru.Maxrss >> 10 // KiB on Linux and the BSDs
	}
	return 0
}

// TestHugeRepliesAreCut: a target answering 4 MiB and 40 MiB replies (past
// the readers' 1 MiB limit for one value) does not poison the benchmark:
// the run completes with the replies cut at 256 KiB and marked truncated,
// memory stays bounded, and aggregate, report, status and export read the
// files.
func TestHugeRepliesAreCut(t *testing.T) {
	t.Parallel()
	for _, size := range []int{4 << 20, 40 << 20} {
		t.Run(fmt.Sprintf("%dMiB", size>>20), func(t *testing.T) {
			body := hugeReply(size)
			srv := llmtest.NewOpenAI(t)
			srv.Handle(roles(func(llmtest.ChatRequest) llmtest.Reply { return llmtest.Reply{Body: body} }, "fine"))
			p := newProject(t, hostileConfig(srv.BaseURL(), srv.BaseURL(), 1))
			p.env = append(p.env, "IB_KEY="+srv.APIKey())
			p.addBench("qs", oneMetricBench)
			start := time.Now()
			r := p.mustRun("run", "qs")
			t.Logf("%d MiB replies: run took %v, peak RSS %d MiB", size>>20, time.Since(start).Round(time.Millisecond), maxRSS(r))
			// About 120 MiB on a quiet machine. Under a loaded -race suite the
			// garbage of cut bodies is collected later (seen: 423 MiB); a
			// reply held whole would cost gigabytes (the old code peaked at
			// 12.2 GB on 40 MiB replies), so 1 GiB still catches it.
			if rss := maxRSS(r); rss > 1024 {
				t.Errorf("peak RSS %d MiB for %d MiB replies: replies are held whole", rss, size>>20)
			}
			var convs []struct {
				Transcript []struct{ Role, Content string }
				Status     string
				Truncated  []int
			}
			if err := json.Unmarshal(readFile(t, filepath.Join(p.benchDir("qs"), "runs", "tgt", "conversations.json")), &convs); err != nil {
				t.Fatal(err)
			}
			if len(convs) != 1 || convs[0].Status != "completed" || len(convs[0].Transcript) != 4 {
				t.Fatalf("conversations: %+v", convs)
			}
			if got := convs[0].Truncated; len(got) != 2 || got[0] != 1 || got[1] != 3 {
				t.Errorf("truncated %v, want [1 3] (both target replies)", got)
			}
			for _, i := range []int{1, 3} {
				c := convs[0].Transcript[i].Content
				if len(c) > llm.MaxReplyBytes || len(c) < llm.MaxReplyBytes/2 || !strings.HasPrefix(c, "Your aaa") {
					t.Errorf("reply %d: %d bytes, want the first %d", i, len(c), llm.MaxReplyBytes)
				}
			}
			// The second turn sent the cut reply back, not the whole one.
			for _, q := range srv.Requests() {
				if len(q.Raw) > 4*llm.MaxReplyBytes {
					t.Errorf("a request of %d bytes: the whole reply was sent on", len(q.Raw))
				}
			}
			for _, args := range [][]string{{"aggregate", "qs"}, {"report", "qs"}, {"status", "qs"}, {"export", "qs", "--messages", "-o", "m.csv"}, {"run", "qs"}} {
				p.mustRun(args...)
			}
		})
	}
}

// escapes are the sequences an outside review found in provider error
// text: a title change, a screen clear, an OSC 52 clipboard write.
var escapes = []string{"\x1b]0;pwned\x07", "\x1b[2J\x1b[H", "\x1b]52;c;cm0gLXJmIH4=\x07", "\u009b2J"}

// noControls fails when out holds a byte a terminal would act on
// (outside SGR colours when colour is allowed).
func noControls(t *testing.T, what, out string, colour bool) {
	t.Helper()
	if colour {
		out = regexp.MustCompile("\x1b\\[[0-9;]*m").ReplaceAllString(out, "")
	}
	for _, bad := range []string{"\x1b", "\x07", "\u009b", "\r"} {
		if strings.Contains(out, bad) {
			t.Errorf("%s: %q reached the terminal:\n%q", what, bad, clip(out))
		}
	}
}

// TestProviderErrorTextIsShownAsText: a provider whose error messages
// carry terminal escape sequences fails every conversation; run's stderr
// and status's stdout show the reasons, without the sequences.
func TestProviderErrorTextIsShownAsText(t *testing.T) {
	t.Parallel()
	srv := llmtest.NewOpenAI(t)
	srv.Handle(roles(func(llmtest.ChatRequest) llmtest.Reply {
		// Sequences first: status shows the first 100 characters of a reason.
		return llmtest.OpenAIError(400, "x", "", strings.Join(escapes, "")+" bad request")
	}, "fine"))
	p := newProject(t, hostileConfig(srv.BaseURL(), srv.BaseURL(), 1))
	p.env = append(p.env, "IB_KEY="+srv.APIKey())
	p.addBench("qs", oneMetricBench)
	r := p.run("run", "qs", "-v")
	if r.code != 1 || !strings.Contains(r.stderr, "bad request") {
		t.Fatalf("want exit 1 naming the provider's message:\n%s", r)
	}
	noControls(t, "run -v stderr", r.stderr, false)
	s := p.mustRun("status", "qs")
	if !strings.Contains(s.stdout, "]0;pwned") {
		t.Fatalf("status does not show the failure:\n%s", s)
	}
	noControls(t, "status", s.stdout, false)
	// On a terminal, with colour: only status's own colour codes.
	pp := p.startPTY("status", "qs")
	_, _, out := pp.wait(cmdTimeout)
	out = strings.ReplaceAll(out, "\r\n", "\n") // the terminal's own line ends
	if !strings.Contains(out, "\x1b[31m") {
		t.Errorf("status on a terminal is not coloured:\n%q", out)
	}
	noControls(t, "status on a terminal", out, true)
	// NO_COLOR: no colour at all.
	p.env = append(p.env, "NO_COLOR=1")
	pp = p.startPTY("status", "qs")
	_, _, out = pp.wait(cmdTimeout)
	out = strings.ReplaceAll(out, "\r\n", "\n")
	if !strings.Contains(out, "]0;pwned") || strings.Contains(out, "\x1b[") {
		t.Errorf("status with NO_COLOR:\n%q", out)
	}
}
