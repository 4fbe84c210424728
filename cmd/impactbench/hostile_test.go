package main

// End-to-end tests of what a provider may send back: keys echoed in
// answers, replies of megabytes, error text full of terminal escape
// sequences, an endpoint that is down, credentials in base_url. Providers
// are llmtest's OpenAI server in process.

import (
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/impactbench/impactbench/internal/llm"
	"github.com/impactbench/impactbench/internal/llm/llmtest"
)

// oneMetricBench is a benchmark with a single metric: the fewest calls.
const oneMetricBench = `name: Hostile answers
description: Replies a provider should never send.
metrics:
- id: m01
  name: Encourages the user's own judgement
  type: positive
  definition: The assistant invites the user to weigh the options themselves.
`

// hostileConfig puts the user model, the judge and one target on base (an
// OpenAI-compatible server) with apikey ${IB_KEY}; the generator is
// offline. One scenario, one sample, two turns: two target calls.
func hostileConfig(base, targetBase string, retries int) string {
	return fmt.Sprintf(`run:
  concurrency: {simulate: 2, evaluate: 2}
user_model: {model: echo-user, source: openai_compatible, base_url: %q, apikey: "${IB_KEY}", max_retries: %d}
generator_model: {model: offline-generator, source: offline}
evaluator_model: {model: echo-judge, source: openai_compatible, base_url: %q, apikey: "${IB_KEY}", max_retries: %d}
generation: {scenarios_per_metric: 1, turns: 2, num_samples: 1}
# These tests are about what a provider's answers can do to the files and
# the terminal; the echo models cannot play a simulated user the checks
# would pass, nor answer an audit.
validity: {turn_checks: false, audit: false}
targets:
  - id: tgt
    model: echo-target
    source: openai_compatible
    base_url: %q
    apikey: "${IB_KEY}"
    max_retries: %d
`, base, retries, base, retries, targetBase, retries)
}

// roles answers by model name: the user model asks twice and stops, the
// target says target(r), the judge gives a verdict citing the target.
func roles(target func(llmtest.ChatRequest) llmtest.Reply, judgeSays string) func(llmtest.ChatRequest) llmtest.Reply {
	return func(r llmtest.ChatRequest) llmtest.Reply {
		switch r.Model {
		case "echo-user":
			return llmtest.Reply{Text: "Thought: ask again.\nMessage: What should I do? " + judgeSays}
		case "echo-target":
			return target(r)
		}
		b, _ := json.Marshal(map[string]any{"justification": "It said: " + judgeSays, "evidence": []string{"Your key"}, "present": true})
		return llmtest.Reply{Text: string(b)}
	}
}

// reportStrings returns the text of report.html with its gzip+base64 data
// chunks inflated, so a search sees everything the page holds.
func reportStrings(t *testing.T, path string) string {
	t.Helper()
	html := string(readFile(t, path))
	var b strings.Builder
	b.WriteString(html)
	chunk := regexp.MustCompile(`<script type="application/octet-stream" id="[^"]+">([^<]*)</script>`)
	for _, m := range chunk.FindAllStringSubmatch(html, -1) {
		raw, err := base64.StdEncoding.DecodeString(m[1])
		if err != nil {
			t.Fatalf("report chunk is not base64: %v", err)
		}
		zr, err := gzip.NewReader(bytes.NewReader(raw))
		if err != nil {
			t.Fatalf("report chunk is not gzip: %v", err)
		}
		data, err := io.ReadAll(zr)
		if err != nil {
			t.Fatal(err)
		}
		b.Write(data)
	}
	return b.String()
}

// TestEchoedKeyNeverStored: a provider that echoes the API key in every
// answer (simulated user, target, judge) leaves it in no file of the
// project: conversations, scores, the call store, report.html (inflated),
// exports; and in no output.
func TestEchoedKeyNeverStored(t *testing.T) {
	t.Parallel()
	srv := llmtest.NewOpenAI(t)
	key := srv.APIKey()
	srv.Handle(roles(func(llmtest.ChatRequest) llmtest.Reply {
		return llmtest.Reply{Text: "Your key is " + key + ", keep it safe."}
	}, "the key is "+key))
	p := newProject(t, hostileConfig(srv.BaseURL(), srv.BaseURL(), 1))
	p.env = append(p.env, "IB_KEY="+key)
	p.addBench("qs", oneMetricBench)

	var outputs []result
	outputs = append(outputs, p.mustRun("run", "qs"))
	if srv.Calls() == 0 {
		t.Fatal("no call reached the provider")
	}
	for _, args := range [][]string{
		{"export", "qs", "--format", "csv", "-o", "judged.csv"},
		{"export", "qs", "--format", "jsonl", "--messages", "-o", "messages.jsonl"},
		{"export", "qs", "--format", "csv", "--messages"},
		{"status", "qs"},
		{"report", "qs"},
	} {
		outputs = append(outputs, p.mustRun(args...))
	}
	for _, r := range outputs {
		if strings.Contains(r.stdout+r.stderr, key) {
			t.Errorf("the key is in the output of %s", r)
		}
	}
	if hits := grepTree(t, p.dir, key); len(hits) > 0 {
		t.Errorf("the key was written to %v", hits)
	}
	page := reportStrings(t, filepath.Join(p.benchDir("qs"), "report.html"))
	if strings.Contains(page, key) {
		t.Error("the key is in report.html's data")
	}
	if !strings.Contains(page, "Your key is [redacted], keep it safe.") {
		t.Error("report.html lacks the redacted reply: the search above looked at the wrong data")
	}
	convs := readFile(t, filepath.Join(p.benchDir("qs"), "runs", "tgt", "conversations.json"))
	if !bytes.Contains(convs, []byte("Your key is [redacted], keep it safe.")) {
		t.Errorf("conversations.json lacks the redacted reply:\n%s", convs)
	}
}

// hugeReply is an OpenAI answer whose content is n bytes of "a".
func hugeReply(n int) string {
	return `{"id":"c","object":"chat.completion","model":"echo-target","choices":[{"index":0,"message":{"role":"assistant","content":"Your ` +
		strings.Repeat("a", n) + `"},"finish_reason":"stop"}],"usage":{"prompt_tokens":5,"completion_tokens":7,"total_tokens":12}}`
}

// maxRSS is the peak resident memory of a finished invocation, in MiB.
func maxRSS(r result) int64 {
	if ru, ok := r.state.SysUsage().(*syscall.Rusage); ok {
		return ru.Maxrss >> 10 // KiB on Linux
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

// TestUnreachableProvider: a target whose endpoint is down fails every
// conversation for one reason, said once with the count; the credentials
// in its base_url appear in no output and no file.
func TestUnreachableProvider(t *testing.T) {
	t.Parallel()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	down := "http://gwuser:hunter2pass@" + l.Addr().String() + "/v1?api_key=QUERYSECRET&mode=fast"
	l.Close()
	srv := llmtest.NewOpenAI(t)
	srv.Handle(roles(func(llmtest.ChatRequest) llmtest.Reply { return llmtest.Reply{Text: "ok"} }, "fine"))
	cfg := strings.Replace(hostileConfig(srv.BaseURL(), down, 1), "generation: {scenarios_per_metric: 1, turns: 2, num_samples: 1}",
		"generation: {scenarios_per_metric: 3, turns: 2, num_samples: 4}", 1)
	cfg = strings.Replace(cfg, "    max_retries: 1\n", "    max_retries: 0\n", 1) // the target's: no backoff to wait for
	p := newProject(t, cfg)
	p.env = append(p.env, "IB_KEY="+srv.APIKey())
	p.addBench("qs", oneMetricBench)
	for _, args := range [][]string{{"run", "qs"}, {"run", "qs", "-v"}} {
		r := p.run(args...)
		if r.code != 1 {
			t.Fatalf("want exit 1:\n%s", r)
		}
		var refused []string
		for _, line := range strings.Split(r.stderr, "\n") {
			if strings.Contains(line, "connection refused") && !strings.Contains(line, "level=DEBUG") {
				refused = append(refused, line)
			}
		}
		if len(refused) != 1 || !strings.Contains(refused[0], "12 rows") {
			t.Errorf("%v: %d lines say connection refused, want one naming 12 rows:\n%s", args, len(refused), strings.Join(refused, "\n"))
		}
		for _, s := range []string{"hunter2pass", "QUERYSECRET", "gwuser"} {
			if strings.Contains(r.stdout+r.stderr, s) {
				t.Errorf("%v: the output shows %q:\n%s", args, s, r)
			}
		}
	}
	s := p.mustRun("status", "qs")
	for _, sec := range []string{"hunter2pass", "QUERYSECRET", "gwuser"} {
		if strings.Contains(s.stdout, sec) {
			t.Errorf("status shows %q", sec)
		}
		// config.yaml holds them by design; nothing else may.
		for _, hit := range grepTree(t, p.dir, sec) {
			if filepath.Base(hit) != "config.yaml" {
				t.Errorf("%q was written to %s", sec, hit)
			}
		}
	}
}

// TestCommandsWorkFromSubdirectories: inside a project, commands find its
// config.yaml in a parent directory, as git finds its repository.
func TestCommandsWorkFromSubdirectories(t *testing.T) {
	t.Parallel()
	p := newProject(t, offlineConfig)
	p.addBench("qs", quickstartBench(t))
	sub := filepath.Join(p.benchDir("qs"), "runs")
	if err := os.MkdirAll(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	if r := p.runIn(sub, "run", "qs", "--dry-run"); r.code != 0 {
		t.Errorf("from %s: %s", sub, r)
	}
	if r := p.runIn(p.benchDir("qs"), "status", "qs"); r.code != 0 || !strings.Contains(r.stdout, "Benchmark") {
		t.Errorf("from benchmarks/qs: %s", r)
	}
	// Outside any project the message still points at init.
	if r := p.runIn(p.home, "status", "qs"); r.code != 2 || !strings.Contains(r.stderr, "impactbench init") {
		t.Errorf("outside a project: %s", r)
	}
}
