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
	"testing"

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

// TestUnreachableProvider: a target whose endpoint is down fails every
// conversation for one reason, said once with the count, and no row is
// said to come from the store; the credentials
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
		// The failed conversations' null verdicts call no judge, on the
		// first run as on the rerun: none of them is a row "from the
		// store, not paid again" (docs/reruns.md, Failures).
		if strings.Contains(r.stderr, "from the store") {
			t.Errorf("%v: the summary counts rows that called nothing as taken from the store:\n%s", args, r.stderr)
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

// hugeReply is an OpenAI answer whose content is n bytes of "a".
func hugeReply(n int) string {
	return `{"id":"c","object":"chat.completion","model":"echo-target","choices":[{"index":0,"message":{"role":"assistant","content":"Your ` +
		strings.Repeat("a", n) + `"},"finish_reason":"stop"}],"usage":{"prompt_tokens":5,"completion_tokens":7,"total_tokens":12}}`
}
