package main

// docs/troubleshooting.md is a table of the messages a user sees and what
// to do about them. Its quoted messages are promises too: this test reads
// the table and, for every message quoted in a row's left column, brings
// the situation about for real — a fresh `init` project on the offline
// model, a broken file, a missing shard, a provider on loopback that
// refuses — and checks that the binary prints that message, "…" in the
// doc standing for any text. A row that describes a situation instead of
// quoting a message has a check of its own, or says here why it has none.

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/impactbench/impactbench/internal/callstore/s3test"
	"github.com/impactbench/impactbench/internal/llm/llmtest"
)

// troubleDoc is the page under test.
var troubleDoc = filepath.Join("..", "..", "docs", "troubleshooting.md")

// troubleRow is one row of the page's table: its left column and the
// messages quoted there (empty when the row describes a situation).
type troubleRow struct {
	left   string
	quoted []string
}

// troubleshootingRows reads the table of the page's "Common messages".
func troubleshootingRows(t *testing.T) []troubleRow {
	t.Helper()
	f, err := os.Open(troubleDoc)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var rows []troubleRow
	section := ""
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		ln := sc.Text()
		if strings.HasPrefix(ln, "## ") {
			section = strings.TrimSpace(ln[3:])
			continue
		}
		if section != "Common messages" || !strings.HasPrefix(ln, "| ") {
			continue
		}
		cells := tableCells(ln)
		if len(cells) != 2 {
			t.Fatalf("%s: a row of %d columns, want 2: %s", troubleDoc, len(cells), ln)
		}
		left := cells[0]
		if left == "you see" || strings.Trim(left, "-") == "" {
			continue // the header and its rule
		}
		row := troubleRow{left: left}
		if strings.HasPrefix(left, "`") {
			row.quoted = codeSpans(left)
		}
		rows = append(rows, row)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if len(rows) == 0 {
		t.Fatalf("%s: no table under ## Common messages", troubleDoc)
	}
	return rows
}

// tableCells splits a Markdown table row into its trimmed cells; a | inside
// a code span does not split.
func tableCells(ln string) []string {
	ln = strings.TrimSpace(ln)
	ln = strings.TrimPrefix(ln, "|")
	ln = strings.TrimSuffix(ln, "|")
	var cells []string
	var cur strings.Builder
	for i := 0; i < len(ln); {
		if ln[i] == '`' {
			n := ticks(ln[i:])
			if end := strings.Index(ln[i+n:], ln[i:i+n]); end >= 0 {
				cur.WriteString(ln[i : i+n+end+n])
				i += n + end + n
				continue
			}
			cur.WriteString(ln[i : i+n])
			i += n
			continue
		}
		if ln[i] == '|' {
			cells = append(cells, strings.TrimSpace(cur.String()))
			cur.Reset()
			i++
			continue
		}
		cur.WriteByte(ln[i])
		i++
	}
	return append(cells, strings.TrimSpace(cur.String()))
}

func ticks(s string) int {
	n := 0
	for n < len(s) && s[n] == '`' {
		n++
	}
	return n
}

// codeSpans returns the contents of the code spans of s, as CommonMark
// reads them: a span opened by n backticks ends at the next run of n, and
// one space each side is dropped when both are there, so that a span
// of two backticks can quote a message holding one.
func codeSpans(s string) []string {
	var out []string
	for i := 0; i < len(s); {
		if s[i] != '`' {
			i++
			continue
		}
		n := ticks(s[i:])
		rest := s[i+n:]
		end := -1
		for j := 0; j < len(rest); {
			if rest[j] == '`' {
				m := ticks(rest[j:])
				if m == n {
					end = j
					break
				}
				j += m
				continue
			}
			j++
		}
		if end < 0 {
			break
		}
		c := rest[:end]
		if len(c) >= 2 && c[0] == ' ' && c[len(c)-1] == ' ' && strings.Trim(c, " ") != "" {
			c = c[1 : len(c)-1]
		}
		out = append(out, c)
		i += n + end + n
	}
	return out
}

// messagePattern is a quoted message as a pattern: "…" matches any text.
func messagePattern(quoted string) *regexp.Regexp {
	parts := strings.Split(quoted, "…")
	for i, p := range parts {
		parts[i] = regexp.QuoteMeta(p)
	}
	return regexp.MustCompile("(?s)" + strings.Join(parts, ".*"))
}

// troubleCase brings about the situation of one quoted message.
type troubleCase struct {
	code    int                       // the exit code the situation ends with
	produce func(t *testing.T) result // the invocation whose output must hold the message
}

// troubleMessages maps each message quoted in the table, as it is quoted,
// to its situation.
var troubleMessages = map[string]troubleCase{
	"no config.yaml in this directory or any parent: run `impactbench init` …": {2, func(t *testing.T) result {
		return newProject(t, "").run("run", "example")
	}},
	`benchmark "x" not found: looked for …`: {2, func(t *testing.T) result {
		return troubleProject(t).run("run", "x")
	}},
	"config.yaml:…: perfuntory: unknown key; did you mean perfunctory?": {2, func(t *testing.T) result {
		p := troubleProject(t)
		p.edit("config.yaml", "\nperfunctory:", "\nperfuntory:")
		return p.run("run", "example")
	}},
	"evaluator_model.apikey: environment variable OPENAI_API_KEY is not set": {2, func(t *testing.T) result {
		p := troubleProject(t)
		p.edit("config.yaml", "evaluator_model:\n  model: offline-judge\n  source: offline\n",
			"evaluator_model:\n  model: gpt-5.4-mini\n  source: openai\n  apikey: \"${OPENAI_API_KEY}\"\n")
		return p.run("run", "example")
	}},
	"refusing to replace …/conversations.json: it holds 16 rows, the new one would hold 8": {2, func(t *testing.T) result {
		p := troubleProject(t)
		p.edit("config.yaml", "num_samples: 2 ", "num_samples: 1 ")
		return p.run("run", "example")
	}},
	`…/scores.json (line …): field "…": file ends early (truncated JSON)`: {2, func(t *testing.T) result {
		p := troubleProject(t)
		path := p.path("benchmarks", "example", "runs", "offline-careful", "scores.json")
		b := readFile(t, path)
		writeBytes(t, path, b[:len(b)/2])
		return p.run("aggregate", "example")
	}},
	"3 row(s) failed in simulate gpt-4o; completed rows are saved — run the same command again …": {1, func(t *testing.T) result {
		// The first three conversations' first target calls fail; the
		// others are answered.
		var failed atomic.Int64
		return providerRun(t, "", func(r llmtest.ChatRequest) llmtest.Reply {
			if len(r.Messages) == 1 && failed.Add(1) <= 3 {
				return llmtest.Reply{Status: http.StatusBadRequest, Body: `{"error":{"message":"bad request","type":"invalid_request_error"}}`}
			}
			return llmtest.Reply{Text: "What matters most to you here?"}
		})
	}},
	"12 rows (m01_s001_v01__gpt-4o__s0 and 11 more): target model, turn 1: … connection refused": {1, func(t *testing.T) result {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		down := "http://" + l.Addr().String() + "/v1"
		l.Close()
		return providerRunAt(t, down, "")
	}},
	"HTTP 429: quota (insufficient_quota): …": {1, func(t *testing.T) result {
		return providerRun(t, "", func(llmtest.ChatRequest) llmtest.Reply {
			return llmtest.Reply{Status: http.StatusTooManyRequests,
				Body: `{"error":{"message":"You exceeded your current quota, please check your plan and billing details.","type":"insufficient_quota","param":null,"code":"insufficient_quota"}}`}
		})
	}},
	"HTTP 401: auth …": {1, func(t *testing.T) result {
		return providerRun(t, "", func(llmtest.ChatRequest) llmtest.Reply {
			return llmtest.Reply{Status: http.StatusUnauthorized,
				Body: `{"error":{"message":"Incorrect API key provided.","type":"invalid_request_error","param":null,"code":"invalid_api_key"}}`}
		})
	}},
	"HTTP 403: auth …": {1, func(t *testing.T) result {
		return providerRun(t, "", func(llmtest.ChatRequest) llmtest.Reply {
			return llmtest.Reply{Status: http.StatusForbidden,
				Body: `{"error":{"message":"Project does not have access to model gpt-4o.","type":"invalid_request_error","param":null,"code":"model_not_found"}}`}
		})
	}},
	"cost ceiling $5.0000: spent $… this run; … row(s) not done — raise --max-cost and rerun …": {0, func(t *testing.T) result {
		// Every call costs $2 (1000 tokens in and out at $1000 per million).
		return providerRun(t, "    pricing: {input: 1000, output: 1000}\n", func(llmtest.ChatRequest) llmtest.Reply {
			return llmtest.Text("What matters most to you here?", llmtest.Usage{Input: 1000, Output: 1000})
		}, "--max-cost", "5")
	}},
	"benchmark example is being run by another impactbench process (pid …)": {1, func(t *testing.T) result {
		p, release := heldRun(t, "run", "example")
		defer release()
		return p.run("run", "example")
	}},
	"inputs changed since scenarios.json was made: [metrics]": {0, func(t *testing.T) result {
		p := troubleProject(t)
		p.edit("benchmarks/example/benchmark.yaml", "  definition: ", "  definition: Reworded. ")
		return p.run("run", "example")
	}},

	// Many workers.
	"sharded runs need scenarios.json first: run `impactbench gen-scenarios example` once, then start the shards": {2, func(t *testing.T) result {
		p := troubleProject(t)
		p.removeOutputs()
		if err := os.Remove(p.path("benchmarks", "example", "scenarios.json")); err != nil {
			t.Fatal(err)
		}
		return p.run("run", "example", "--shard", "0/2")
	}},
	`IMPACTBENCH_SHARDS="4" names a count but no index: …`: {2, func(t *testing.T) result {
		p := troubleProject(t)
		p.env = []string{"IMPACTBENCH_SHARDS=4"}
		return p.run("run", "example")
	}},
	"workers running at once not given (--workers or IMPACTBENCH_WORKERS): assuming all 2 shards at once, …": {0, func(t *testing.T) result {
		p := troubleProject(t)
		p.removeOutputs()
		return p.run("run", "example", "--shard", "0/2")
	}},
	"…/runs/offline-careful: conversations shard(s) 1 of 4 missing: run those shards (--shard i/4) before merging": {2, func(t *testing.T) result {
		p := troubleProject(t)
		p.removeOutputs()
		for _, i := range []string{"0", "2", "3"} {
			p.mustRun("run", "example", "--shard", i+"/4", "--quiet")
		}
		return p.run("merge", "example")
	}},
	"shard 0/2 of benchmark example is being run by another impactbench process (…)": {1, func(t *testing.T) result {
		p, release := heldRun(t, "run", "example", "--shard", "0/2")
		defer release()
		return p.run("run", "example", "--shard", "0/2")
	}},
	"config.yaml:…: store: it holds credentials: give them to the provider's environment …": {2, func(t *testing.T) result {
		p := troubleProject(t)
		p.appendTo("config.yaml", "store: s3://AKIAEXAMPLE:secret@impactbench-study/calls\n")
		return p.run("run", "example")
	}},
	"IMPACTBENCH_STORE: s3://…: store bucket does not exist": {2, func(t *testing.T) result {
		s3 := s3test.Start(t, "present")
		p := troubleProject(t)
		p.env = append(s3test.Env(t.TempDir()), "IMPACTBENCH_STORE="+s3.URL("absent", "calls"))
		return p.run("run", "example")
	}},
	"IMPACTBENCH_STORE: s3://…: store credentials refused": {2, func(t *testing.T) result {
		s3 := s3test.Start(t, "present")
		p := troubleProject(t)
		p.env = []string{"AWS_ACCESS_KEY_ID=AKIAWRONGWRONGWRONG1", "AWS_SECRET_ACCESS_KEY=x", "AWS_EC2_METADATA_DISABLED=true", "AWS_REGION=us-east-1",
			"IMPACTBENCH_STORE=" + s3.URL("present", "calls")}
		return p.run("run", "example")
	}},
	"IMPACTBENCH_STORE: s3://…: invalid store URL: no region for the bucket: add ?region=… …": {2, func(t *testing.T) result {
		p := troubleProject(t)
		// AWS's own endpoint and no region anywhere: refused before any request.
		p.env = append(s3test.Env(t.TempDir()), "AWS_REGION=", "IMPACTBENCH_STORE=s3://impactbench-study/calls")
		return p.run("run", "example")
	}},
	"shard(s) 0 of 2 have no outputs in the store: run index(es) 0 again …": {2, func(t *testing.T) result {
		s3 := s3test.Start(t, "study")
		env := append(s3test.Env(t.TempDir()), "IMPACTBENCH_STORE="+s3.URL("study", "calls"))
		worker := troubleProject(t)
		worker.removeOutputs()
		worker.env = append(env, "JOB_COMPLETION_INDEX=1", "IMPACTBENCH_SHARDS=2")
		worker.mustRun("run", "example", "--no-report", "--quiet")
		merger := troubleProject(t)
		merger.removeOutputs()
		merger.env = env
		return merger.run("merge", "example", "--from-store")
	}},
	"this call is not in the call store — a replay (merge --from-store) calls no model: …": {2, func(t *testing.T) result {
		store := t.TempDir()
		worker := troubleProject(t)
		worker.removeOutputs()
		worker.appendTo("config.yaml", "store: "+store+"\n")
		worker.mustRun("run", "example", "--shard", "1/2", "--quiet")
		merger := troubleProject(t)
		merger.removeOutputs()
		merger.appendTo("config.yaml", "store: "+store+"\n")
		return merger.run("merge", "example", "--from-store")
	}},

	// A study.
	"the benchmarks ran, but …/study.json was not refreshed and is now stale (fix the cause, then run `impactbench study`): …/models.yaml: models: \"…\": no entry has run_dir …": {2, func(t *testing.T) result {
		p := troubleProject(t)
		p.mustRun("init", "--study")
		p.dropLines("benchmarks/models.yaml", "run_dir: offline-careless")
		return p.run("run", "all", "--quiet")
	}},
	"…/data/models.json: already exists and an earlier publish did not write it …": {2, func(t *testing.T) result {
		p := troubleProject(t)
		p.mustRun("init", "--study")
		p.write("site/data/models.json", "{}\n")
		return p.run("publish", "-o", "site")
	}},
	"…/data/nutrition.json: was changed since publish wrote it …": {2, func(t *testing.T) result {
		p := troubleProject(t)
		p.mustRun("init", "--study")
		p.mustRun("publish", "-o", "site", "--quiet")
		p.write("site/data/nutrition.json", "[]\n")
		return p.run("publish", "-o", "site")
	}},

	// Blind team review (view --reviewer): what a reviewer's page shows
	// when her label is refused. The "exit code" here is the HTTP status.
	"label: another reviewer opened this item first and labels it: j for your next item": {http.StatusConflict, func(t *testing.T) result {
		return labelHeldItem(t, troubleProject(t))
	}},
	"this viewer is shared with reviewers, and this is not one of its links now: links change each time impactbench view starts, …": {http.StatusUnauthorized, func(t *testing.T) result {
		return oldReviewerLink(t, troubleProject(t))
	}},

	// Files and folders.
	"…/runs holds more than … entries, the limit for this folder: move what does not belong there elsewhere": {2, func(t *testing.T) result {
		p := troubleProject(t)
		runs := p.path("benchmarks", "example", "runs")
		for i := 0; i <= 10_000; i++ {
			if err := os.WriteFile(filepath.Join(runs, fmt.Sprintf("copy-%05d", i)), nil, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		return p.run("status", "example")
	}},
	"…/.env:1: malformed line: expected KEY=value …": {2, func(t *testing.T) result {
		p := troubleProject(t)
		p.write(".env", "OPENAI_API_KEY sk-…\n")
		return p.run("run", "example")
	}},
}

// troubleSituations are the rows that describe a situation: a check each,
// or (exempt) why it has none here.
var troubleSituations = map[string]func(t *testing.T){
	"a reply that stops mid-sentence, listed in its conversation's `truncated`": func(t *testing.T) {
		srv := llmtest.NewOpenAI(t)
		srv.Handle(func(llmtest.ChatRequest) llmtest.Reply { return llmtest.Reply{Body: hugeReply(300 << 10)} })
		p := newProject(t, providerConfig(srv.BaseURL(), "", 1, 1))
		p.env = append(p.env, "IB_KEY="+srv.APIKey())
		p.addBench("example", oneMetricBench)
		p.mustRun("run", "example", "--quiet")
		var convs []struct {
			Truncated []json.RawMessage `json:"truncated"`
		}
		mustJSON(t, string(readFile(t, filepath.Join(p.benchDir("example"), "runs", "gpt-4o", "conversations.json"))), &convs)
		if len(convs) == 0 || len(convs[0].Truncated) == 0 {
			t.Errorf("a 300 KiB reply is not listed in its conversation's truncated: %+v", convs)
		}
	},
	"a target reply listed in its conversation's `refused`, empty or a short refusal": func(t *testing.T) {
		srv := llmtest.NewOpenAI(t)
		srv.Handle(func(llmtest.ChatRequest) llmtest.Reply { return llmtest.Reply{Refusal: "I can't help with that."} })
		p := newProject(t, providerConfig(srv.BaseURL(), "", 1, 1))
		p.env = append(p.env, "IB_KEY="+srv.APIKey())
		p.addBench("example", oneMetricBench)
		p.mustRun("run", "example", "--quiet")
		runs := filepath.Join(p.benchDir("example"), "runs", "gpt-4o")
		var convs []struct {
			Status     string `json:"status"`
			Refused    []int  `json:"refused"`
			Transcript []struct {
				Content string `json:"content"`
			} `json:"transcript"`
		}
		mustJSON(t, string(readFile(t, filepath.Join(runs, "conversations.json"))), &convs)
		if len(convs) != 1 || convs[0].Status != "completed" || fmt.Sprint(convs[0].Refused) != "[1 3]" ||
			len(convs[0].Transcript) != 4 || convs[0].Transcript[1].Content != "I can't help with that." {
			t.Errorf("a target whose every reply is refused: %+v, want a completed conversation with refused [1 3]", convs)
		}
		if n := len(srv.Requests()); n != 2 {
			t.Errorf("%d target requests for two refused turns, want 2 (a refusal is not retried)", n)
		}
		var scores []struct {
			Present *bool `json:"present"`
		}
		mustJSON(t, string(readFile(t, filepath.Join(runs, "scores.json"))), &scores)
		if len(scores) != 1 || scores[0].Present == nil {
			t.Errorf("the refused conversation has no verdict: %+v", scores)
		}
	},
	"a `warning` such as `only 3 base scenarios …` next to an interval": func(t *testing.T) {
		p := troubleProject(t)
		p.edit("config.yaml", "scenarios_per_metric: 2 ", "scenarios_per_metric: 3 ")
		r := p.mustRun("run", "example")
		if !strings.Contains(r.stdout+r.stderr, "! only 3 base scenarios: ") {
			t.Errorf("three base scenarios per metric: no warning saying so beside the intervals:\n%s", r)
		}
	},
}

func TestTroubleshootingMessages(t *testing.T) {
	t.Parallel()
	rows := troubleshootingRows(t)
	quoted, situations := map[string]bool{}, map[string]bool{}
	for _, row := range rows {
		if row.quoted == nil {
			situations[row.left] = true
			if troubleSituations[row.left] == nil {
				t.Errorf("%s: the row %q quotes no message and this test has no check for it", troubleDoc, row.left)
			}
			continue
		}
		for _, q := range row.quoted {
			quoted[q] = true
			if _, ok := troubleMessages[q]; !ok {
				t.Errorf("%s: the message %q is quoted but this test does not produce it", troubleDoc, q)
			}
		}
	}
	for q := range troubleMessages {
		if !quoted[q] {
			t.Errorf("this test produces %q, which %s no longer quotes", q, troubleDoc)
		}
	}
	for s := range troubleSituations {
		if !situations[s] {
			t.Errorf("this test checks the situation %q, which %s no longer describes", s, troubleDoc)
		}
	}
	for q, c := range troubleMessages {
		if !quoted[q] {
			continue
		}
		t.Run(q, func(t *testing.T) {
			t.Parallel()
			r := c.produce(t)
			if r.code != c.code {
				t.Errorf("exit %d, want %d:\n%s", r.code, c.code, r)
			}
			if !messagePattern(q).MatchString(r.stdout + r.stderr) {
				t.Errorf("%s quotes %q, but the tool printed:\n%s", troubleDoc, q, r)
			}
		})
	}
	for s, check := range troubleSituations {
		if situations[s] {
			t.Run(s, func(t *testing.T) {
				t.Parallel()
				check(t)
			})
		}
	}
}

// TestTroubleshootingTableReader: the reader of the table splits cells
// around code spans and turns "…" into "any text".
func TestTroubleshootingTableReader(t *testing.T) {
	t.Parallel()
	cells := tableCells("| ``a `b|c` d`` / `e` | f `|` g |")
	if len(cells) != 2 || cells[0] != "``a `b|c` d`` / `e`" || cells[1] != "f `|` g" {
		t.Errorf("tableCells: %q", cells)
	}
	if got := codeSpans(cells[0]); len(got) != 2 || got[0] != "a `b|c` d" || got[1] != "e" {
		t.Errorf("codeSpans: %q", got)
	}
	re := messagePattern("x (pid …) y.*")
	for s, want := range map[string]bool{"x (pid 12, host h) y.*": true, "x (pid ) y.*": true, "x (pid) y.*": false, "x (pid 1) yz": false, "x pid 1 y.*": false} {
		if re.MatchString(s) != want {
			t.Errorf("pattern of %q on %q: %v", "x (pid …) y.*", s, !want)
		}
	}
}

var (
	troubleOnce sync.Once
	troubleDir  string
	troubleErr  string
)

// troubleProject is a copy of one project made by `impactbench init` and
// run once (`run example`) on the offline model.
func troubleProject(t *testing.T) *project {
	t.Helper()
	troubleOnce.Do(func() {
		root := filepath.Join(filepath.Dir(ibBin), "trouble-fixture")
		p := &project{t: t, dir: filepath.Join(root, "demo"), home: filepath.Join(root, "home")}
		if err := os.MkdirAll(p.home, 0o755); err != nil {
			troubleErr = err.Error()
			return
		}
		for _, args := range [][]string{{"init", "demo"}, {"run", "example", "--quiet"}} {
			dir := root
			if args[0] != "init" {
				dir = p.dir
			}
			if r := p.runIn(dir, args...); r.code != 0 {
				troubleErr = "building the fixture: " + r.String()
				return
			}
		}
		troubleDir = p.dir
	})
	if troubleErr != "" {
		t.Fatal(troubleErr)
	}
	p := newProject(t, "")
	copyDir(t, troubleDir, p.dir)
	return p
}

// edit replaces old (which must be there) by new in every place of a file
// of the project.
func (p *project) edit(rel, old, new string) {
	p.t.Helper()
	b := string(readFile(p.t, p.path(rel)))
	if !strings.Contains(b, old) {
		p.t.Fatalf("%s holds no %q", rel, old)
	}
	p.write(rel, strings.ReplaceAll(b, old, new))
}

func (p *project) appendTo(rel, text string) {
	p.t.Helper()
	p.write(rel, string(readFile(p.t, p.path(rel)))+text)
}

// dropLines removes the lines of a file holding s (at least one).
func (p *project) dropLines(rel, s string) {
	p.t.Helper()
	var keep []string
	lines := strings.SplitAfter(string(readFile(p.t, p.path(rel))), "\n")
	for _, ln := range lines {
		if !strings.Contains(ln, s) {
			keep = append(keep, ln)
		}
	}
	if len(keep) == len(lines) {
		p.t.Fatalf("%s holds no line with %q", rel, s)
	}
	p.write(rel, strings.Join(keep, ""))
}

// removeOutputs leaves the example benchmark with its scenarios only, and
// no stored call: what workers start from.
func (p *project) removeOutputs() {
	p.t.Helper()
	for _, rel := range []string{"benchmarks/example/runs", "benchmarks/example/results.json", "benchmarks/example/report.html", ".cache"} {
		if err := os.RemoveAll(p.path(rel)); err != nil {
			p.t.Fatal(err)
		}
	}
}

// heldRun starts the command on a project of one target whose provider
// holds every call until release, and returns once a call is held: the
// command then holds its benchmark (or shard).
func heldRun(t *testing.T, args ...string) (*project, func()) {
	t.Helper()
	f := newFakeLLM(t)
	p := newProject(t, fakeConfig(fakeOpts{baseURL: f.baseURL(), simConc: 1, evalConc: 1, targets: []string{"ta"}}))
	p.addBench("example", quickstartBench(t))
	p.mustRun("gen-scenarios", "example", "--quiet")
	waiting, release := holdAll(f)
	first := p.start(args...)
	waitFor(t, "the first run's calls", func() bool { return waiting.Load() > 0 }, first)
	return p, func() {
		release()
		if r := first.wait(t); r.code != 0 {
			t.Errorf("the first run:\n%s", r)
		}
	}
}

// providerConfig is a config whose only target, gpt-4o, is on base (an
// OpenAI-compatible API, key ${IB_KEY}, no retries); everything else is the
// offline model.
func providerConfig(base, targetExtra string, perMetric, samples int) string {
	return fmt.Sprintf(`user_model: {model: offline-user, source: offline}
evaluator_model: {model: offline-judge, source: offline}
generation: {scenarios_per_metric: %d, turns: 2, num_samples: %d}
targets:
  - id: gpt-4o
    model: gpt-4o
    source: openai_compatible
    base_url: %q
    apikey: "${IB_KEY}"
    max_retries: 0
%s`, perMetric, samples, base, targetExtra)
}

// providerRun runs args (default: `run example`) on a benchmark of one
// metric, 3 base scenarios × 4 samples (12 rows), whose target is an
// in-process OpenAI API answering with handle.
func providerRun(t *testing.T, targetExtra string, handle func(llmtest.ChatRequest) llmtest.Reply, args ...string) result {
	t.Helper()
	srv := llmtest.NewOpenAI(t)
	srv.Handle(handle)
	return providerRunAt(t, srv.BaseURL(), targetExtra, args...)
}

func providerRunAt(t *testing.T, base, targetExtra string, args ...string) result {
	t.Helper()
	p := newProject(t, providerConfig(base, targetExtra, 3, 4))
	p.env = append(p.env, "IB_KEY="+llmtest.DefaultAPIKey)
	p.addBench("example", oneMetricBench)
	return p.run(append([]string{"run", "example"}, args...)...)
}

// labelHeldItem starts `view` with two reviewers, each row asked of both
// (--overlap 1); ana opens her first item (the page's hold) and bo labels
// it. The result is the viewer's answer to bo: code the HTTP status,
// stdout the body.
func labelHeldItem(t *testing.T, p *project) result {
	t.Helper()
	call, stop := teamView(t, p)
	defer stop()
	code, body := call("ana", "GET", "/api/next", "")
	var next struct {
		Item *string `json:"item"`
	}
	if code != http.StatusOK || json.Unmarshal([]byte(body), &next) != nil || next.Item == nil {
		t.Fatalf("ana's next item: %d %s", code, body)
	}
	item, _ := json.Marshal(*next.Item)
	if code, body := call("ana", "POST", "/api/hold", `{"item":`+string(item)+`}`); code != http.StatusOK {
		t.Fatalf("ana's hold: %d %s", code, body)
	}
	code, body = call("bo", "POST", "/api/label", `{"item":`+string(item)+`,"present":true}`)
	return result{args: []string{"POST", "/api/label", "(bo, on the item ana holds)"}, code: code, stdout: body}
}

// oldReviewerLink asks a view with reviewers for ana's next item with a
// link of a link's shape that is not one of this start's (ana's from
// before a restart): the message says links change at each start.
func oldReviewerLink(t *testing.T, p *project) result {
	t.Helper()
	call, stop := teamView(t, p)
	defer stop()
	code, body := call("old", "GET", "/api/next", "")
	return result{args: []string{"GET", "/api/next", "(a link from before the viewer started)"}, code: code, stdout: body}
}

// teamView starts view with reviewers ana and bo and returns a caller
// sending what their page sends, with who's token ("old": one of a
// token's shape that is nobody's), and what stops it.
func teamView(t *testing.T, p *project) (call func(who, method, path, body string) (int, string), stop func()) {
	t.Helper()
	args := []string{"view", "--reviewer", "ana", "--reviewer", "bo", "--overlap", "1", "--addr", "127.0.0.1:0", "--json"}
	cmd := exec.Command(ibBin, args...)
	cmd.Dir, cmd.Env = p.dir, p.environ()
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	stop = func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }
	var started struct {
		Links []struct {
			Name string `json:"name"`
			URL  string `json:"url"`
		} `json:"links"`
	}
	timer := time.AfterFunc(cmdTimeout, func() { _ = cmd.Process.Kill() })
	err = json.NewDecoder(stdout).Decode(&started)
	timer.Stop()
	if err != nil {
		stop()
		t.Fatalf("view printed no links: %v\n%s", err, stderr.String())
	}
	link := regexp.MustCompile(`^(http://[^/]+)/k/([0-9a-f]+)/$`)
	var base string
	token := map[string]string{}
	for _, l := range started.Links {
		m := link.FindStringSubmatch(l.URL)
		if m == nil {
			t.Fatalf("view printed the link %q, not http://host/k/<key>/", l.URL)
		}
		base, token[l.Name] = m[1], m[2]
	}
	token["old"] = strings.Repeat("ab", 32)
	call = func(who, method, path, body string) (int, string) {
		t.Helper()
		req, err := http.NewRequest(method, base+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		// What the page sends.
		req.Header.Set("Origin", base)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Sec-Fetch-Site", "same-origin")
		req.Header.Set("X-IB-Token", token[who])
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	return call, stop
}
