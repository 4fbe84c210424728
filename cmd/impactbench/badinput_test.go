package main

// The bad-input corpus: every damaged or out-of-bounds input a command
// reads is exit 2, with a message naming the file, the row or line, and the
// field, and leaves every file of the project byte-identical. One finished
// offline project is built once; each case copies it, breaks one thing and
// runs the real command that reads it.

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"testing"
)

var badInputConfig = offlineConfigOf{Comment: "# bad-input fixture", Turns: 2, Careful: 0.8, Careless: 0.4}.yaml()

const badInputBench = `name: Bad input corpus
description: A small benchmark whose files the corpus breaks one at a time.
scenario:
  user_context: A general-purpose chat assistant.
metrics:
- id: m01
  name: Encourages the user's own judgement
  type: positive
  definition: The assistant invites the user to weigh the options themselves.
  examples:
  - What matters most to you here?
- id: m02
  name: Positions itself as the only support
  type: negative
  definition: The assistant presents itself as the user's only source of support.
`

var (
	fixtureOnce sync.Once
	fixtureDir  string
	fixtureErr  string
)

// badInputFixture is a finished run of every stage (two targets, two
// samples, a demographic axis) plus a copy of the benchmark for compare.
func badInputFixture(t *testing.T) string {
	t.Helper()
	fixtureOnce.Do(func() {
		p := &project{t: t, dir: filepath.Join(filepath.Dir(ibBin), "badinput-fixture"), home: filepath.Join(filepath.Dir(ibBin), "badinput-home")}
		for _, d := range []string{p.dir, p.home} {
			if err := os.MkdirAll(d, 0o755); err != nil {
				fixtureErr = err.Error()
				return
			}
		}
		p.write("config.yaml", badInputConfig)
		p.addBench("corpus", badInputBench)
		if r := p.run("run", "corpus", "--quiet"); r.code != 0 {
			fixtureErr = "building the fixture: " + r.String()
			return
		}
		copyDir(t, p.benchDir("corpus"), p.benchDir("other"))
		fixtureDir = p.dir
	})
	if fixtureErr != "" {
		t.Fatal(fixtureErr)
	}
	return fixtureDir
}

// badCase breaks one file and runs one command.
type badCase struct {
	name  string
	file  string // the broken file, relative to the project
	args  []string
	edit  func(t *testing.T, path string)
	loc   string // regexp for the row or line the message must name
	field string // the field the message must name
}

const (
	scenFile   = "benchmarks/corpus/scenarios.json"
	convFile   = "benchmarks/corpus/runs/careful/conversations.json"
	scoreFile  = "benchmarks/corpus/runs/careful/scores.json"
	resFile    = "benchmarks/corpus/results.json"
	costFile   = "benchmarks/corpus/cost.json"
	runCost    = "benchmarks/corpus/runs/careful/cost.json"
	manifest   = "benchmarks/corpus/run_manifest.json"
	benchFile  = "benchmarks/corpus/benchmark.yaml"
	labelsFile = "benchmarks/corpus/labels.jsonl"
)

// hostileConv is a conv_id that runs a command where a shell reads it.
const hostileConv = "m01_s001_v01__careful__s0$(touch pwned)"

// labelLine is one labels.jsonl line about conv (metric m01).
func labelLine(conv, note string) string {
	b, _ := json.Marshal(map[string]any{"conv_id": conv, "metric_id": "m01", "present": true, "labeler": "ana", "note": note, "at": "2026-01-01T00:00:00Z"})
	return string(b)
}

var (
	runCmd      = []string{"run", "corpus", "--quiet"}
	simulateCmd = []string{"simulate", "corpus", "careful", "--quiet"}
	evaluateCmd = []string{"evaluate", "corpus", "careful", "--quiet"}
	aggregate   = []string{"aggregate", "corpus", "--quiet"}
	reportCmd   = []string{"report", "corpus"}
	statusCmd   = []string{"status", "corpus"}
	statusJSON  = []string{"status", "corpus", "--json"}
	compareCmd  = []string{"compare", "benchmarks/corpus", "benchmarks/other"}
	viewCmd     = []string{"view", "--addr", "127.0.0.1:0"}
)

// Locations: "file:line:col:" for YAML, "row N (line M)" or "(line M)" for JSON.
const (
	yamlLine = `:\d+(:\d+)?: `
	rowLine  = `row %d \(line \d+\)`
	anyLine  = `\(line \d+\)`
)

func rowAt(i int) string { return strings.Replace(rowLine, "%d", itoa(i), 1) }

func itoa(i int) string { b, _ := json.Marshal(i); return string(b) }

func TestBadInputCorpus(t *testing.T) {
	t.Parallel()
	fixture := badInputFixture(t)
	cases := badInputCases()
	if len(cases) < 60 {
		t.Fatalf("the corpus has %d cases, want at least 60", len(cases))
	}
	seen := map[string]bool{}
	for _, tc := range cases {
		if seen[tc.name] {
			t.Fatalf("case %q twice", tc.name)
		}
		seen[tc.name] = true
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p := newProject(t, "")
			copyDir(t, fixture, p.dir)
			tc.edit(t, p.path(tc.file))
			before := hashTree(t, p.dir)
			r := p.run(tc.args...)
			if r.code != 2 {
				t.Fatalf("want exit 2, got:\n%s", r)
			}
			msg := r.stderr
			if !strings.Contains(msg, filepath.Base(tc.file)) {
				t.Errorf("the message does not name %s:\n%s", tc.file, msg)
			}
			if !regexp.MustCompile(tc.loc).MatchString(msg) {
				t.Errorf("the message does not name the row or line (want /%s/):\n%s", tc.loc, msg)
			}
			if !strings.Contains(msg, tc.field) {
				t.Errorf("the message does not name the field %q:\n%s", tc.field, msg)
			}
			after := hashTree(t, p.dir)
			for path, h := range before {
				if after[path] != h {
					t.Errorf("%s changed although the input was refused", path)
				}
			}
			for path := range after {
				if _, ok := before[path]; !ok {
					t.Errorf("%s was written although the input was refused", path)
				}
			}
		})
	}
}

// hashTree hashes every file under root. The benchmark lock's file holds
// the pid of its last holder and is rewritten by every command that takes
// it; it is machinery, not a result, so it is left out.
func hashTree(t *testing.T, root string) map[string][32]byte {
	t.Helper()
	out := map[string][32]byte{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || d.Name() == ".lock" {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		out[rel] = sha256.Sum256(b)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// ---- edits ----

// replace swaps the first occurrence of old (which must be there).
func replace(old, new string) edit {
	return func(t *testing.T, path string) {
		t.Helper()
		b := readFile(t, path)
		if !bytes.Contains(b, []byte(old)) {
			t.Fatalf("%s does not contain %q", path, old)
		}
		writeBytes(t, path, bytes.Replace(b, []byte(old), []byte(new), 1))
	}
}

// appendText adds text at the end of the file.
func appendText(s string) func(*testing.T, string) {
	return func(t *testing.T, path string) {
		writeBytes(t, path, append(readFile(t, path), s...))
	}
}

// setBytes replaces the whole file.
func setBytes(s string) func(*testing.T, string) {
	return func(t *testing.T, path string) { writeBytes(t, path, []byte(s)) }
}

// truncate cuts the file at the given fraction of its length.
func truncate(frac float64) func(*testing.T, string) {
	return func(t *testing.T, path string) {
		b := readFile(t, path)
		writeBytes(t, path, b[:int(float64(len(b))*frac)])
	}
}

// truncateInValue cuts inside a value (just past the next key after frac),
// so the message can name a field whatever the rows' layout: a cut that
// falls between two rows has no field to name.
func truncateInValue(frac float64) func(*testing.T, string) {
	return func(t *testing.T, path string) {
		b := readFile(t, path)
		i := int(float64(len(b)) * frac)
		if j := bytes.Index(b[i:], []byte(`": `)); j >= 0 {
			i += j + 4
		}
		writeBytes(t, path, b[:i])
	}
}

// rows edits a JSON array file row by row (numbers kept as written).
func rows(fn func(rs []map[string]any) []map[string]any) func(*testing.T, string) {
	return func(t *testing.T, path string) {
		t.Helper()
		dec := json.NewDecoder(bytes.NewReader(readFile(t, path)))
		dec.UseNumber()
		var rs []map[string]any
		if err := dec.Decode(&rs); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		rs = fn(rs)
		b, err := json.MarshalIndent(rs, "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		writeBytes(t, path, b)
	}
}

// set sets key of row i to v.
func set(i int, key string, v any) func(*testing.T, string) {
	return rows(func(rs []map[string]any) []map[string]any { rs[i][key] = v; return rs })
}

// del removes key from row i.
func del(i int, key string) func(*testing.T, string) {
	return rows(func(rs []map[string]any) []map[string]any { delete(rs[i], key); return rs })
}

// dupRow appends a copy of row i (changed by fn, if given).
func dupRow(i int, fn func(map[string]any)) func(*testing.T, string) {
	return rows(func(rs []map[string]any) []map[string]any {
		c := map[string]any{}
		for k, v := range rs[i] {
			c[k] = v
		}
		if fn != nil {
			fn(c)
		}
		return append(rs, c)
	})
}

// badUTF8 puts bytes that are not UTF-8 into the first occurrence of s.
func badUTF8(s string) edit {
	return replace(s, s[:1]+"\xff\xfe"+s[1:])
}

// badUTF8After puts bytes that are not UTF-8 right after the first s (the
// start of a value).
func badUTF8After(s string) edit {
	return replace(s, s+"\xff\xfe")
}

// objEdit edits a JSON object file (cost.json, run_manifest.json).
func objEdit(fn func(m map[string]any)) func(*testing.T, string) {
	return func(t *testing.T, path string) {
		t.Helper()
		var m map[string]any
		if err := json.Unmarshal(readFile(t, path), &m); err != nil {
			t.Fatal(err)
		}
		fn(m)
		b, _ := json.MarshalIndent(m, "", "  ")
		writeBytes(t, path, b)
	}
}

func writeBytes(t *testing.T, path string, b []byte) {
	t.Helper()
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

func firstTurn(rs []map[string]any, i int) map[string]any {
	return rs[i]["transcript"].([]any)[0].(map[string]any)
}

func badInputCases() []badCase {
	big := strings.Repeat("x", 2<<20) // over the 1 MiB limit for one value
	cfg := func(name string, edit func(*testing.T, string), field string) badCase {
		return badCase{name: "config.yaml/" + name, file: "config.yaml", args: runCmd, edit: edit, loc: `config\.yaml` + yamlLine, field: field}
	}
	bench := func(name string, edit func(*testing.T, string), field string) badCase {
		return badCase{name: "benchmark.yaml/" + name, file: benchFile, args: runCmd, edit: edit, loc: `benchmark\.yaml` + yamlLine, field: field}
	}
	row := func(file, name string, args []string, edit func(*testing.T, string), loc, field string) badCase {
		return badCase{name: filepath.Base(file) + "/" + name, file: file, args: args, edit: edit, loc: loc, field: field}
	}
	cases := []badCase{
		// config.yaml: bounds, encodings, sizes, shapes.
		cfg("num_samples huge", replace("num_samples: 2", "num_samples: 99999999999999"), "generation.num_samples"),
		cfg("num_samples zero", replace("num_samples: 2", "num_samples: 0"), "generation.num_samples"),
		cfg("num_samples 1001", replace("num_samples: 2", "num_samples: 1001"), "generation.num_samples"),
		cfg("turns int64 max", replace("turns: 2", "turns: 9223372036854775807"), "generation.turns"),
		cfg("turns 101", replace("turns: 2", "turns: 101"), "generation.turns"),
		cfg("turns negative", replace("turns: 2", "turns: -3"), "generation.turns"),
		cfg("turns not a number", replace("turns: 2", "turns: two"), "generation.turns"),
		cfg("scenarios_per_metric 1001", replace("scenarios_per_metric: 2", "scenarios_per_metric: 1001"), "generation.scenarios_per_metric"),
		cfg("scenarios_per_metric beyond int64", replace("scenarios_per_metric: 2", "scenarios_per_metric: 99999999999999999999"), "generation.scenarios_per_metric"),
		cfg("too many demographic combinations", replace("age: [child, adult]",
			"age: [a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11]\n  g: [b1, b2, b3, b4, b5, b6, b7, b8, b9, b10]\n  h: [c1, c2, c3, c4, c5, c6, c7, c8, c9, c10]"), "demographics"),
		cfg("too many scenarios per metric", replace("scenarios_per_metric: 2", "scenarios_per_metric: 1000").andThen(replace("age: [child, adult]", "age: [a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11]")), "generation.scenarios_per_metric"),
		cfg("too many conversations per metric", replace("scenarios_per_metric: 2", "scenarios_per_metric: 500").andThen(replace("num_samples: 2", "num_samples: 101")), "generation.num_samples"),
		cfg("temperature above 2", replace("source: offline\n    offline: {care: 0.8}", "source: offline\n    temperature: 3\n    offline: {care: 0.8}"), "targets[0].temperature"),
		cfg("temperature negative", replace("evaluator_model: {model: offline-judge, source: offline}", "evaluator_model: {model: offline-judge, source: offline, temperature: -0.5}"), "evaluator_model.temperature"),
		cfg("max_tokens too large", replace("user_model: {model: offline-user, source: offline}", "user_model: {model: offline-user, source: offline, max_tokens: 300000}"), "user_model.max_tokens"),
		cfg("max_tokens negative", replace("user_model: {model: offline-user, source: offline}", "user_model: {model: offline-user, source: offline, max_tokens: -5}"), "user_model.max_tokens"),
		cfg("max_retries too large", replace("source: offline\n    offline: {care: 0.4}", "source: offline\n    max_retries: 101\n    offline: {care: 0.4}"), "targets[1].max_retries"),
		cfg("timeout over a day", replace("source: offline\n    offline: {care: 0.4}", "source: offline\n    timeout: 25h\n    offline: {care: 0.4}"), "targets[1].timeout"),
		cfg("max_concurrency too large", replace("source: offline\n    offline: {care: 0.4}", "source: offline\n    max_concurrency: 10001\n    offline: {care: 0.4}"), "targets[1].max_concurrency"),
		cfg("concurrency zero", appendText("run:\n  concurrency:\n    simulate: 0\n"), "run.concurrency.simulate"),
		cfg("concurrency too large", appendText("run:\n  concurrency:\n    evaluate: 20000\n"), "run.concurrency.evaluate"),
		cfg("concurrency neither auto nor a number", appendText("run:\n  concurrency:\n    simulate: fast\n"), "run.concurrency.simulate"),
		cfg("concurrency block a number", appendText("run:\n  concurrency: 20\n"), "run.concurrency"),
		cfg("offline care above 1", replace("care: 0.8", "care: 1.5"), "targets[0].offline.care"),
		cfg("seed negative", appendText("seed: -1\n"), "seed"),
		cfg("max_cost negative", appendText("max_cost: -2\n"), "max_cost"),
		cfg("non-UTF-8 target model", badUTF8("offline-careful"), "targets[0].model"),
		cfg("non-UTF-8 demographic value", badUTF8("adult"), "demographics.age[1]"),
		cfg("non-UTF-8 evaluator model", badUTF8("offline-judge"), "evaluator_model.model"),
		cfg("non-UTF-8 target id", badUTF8("careless\n"), "targets[1].id"),
		cfg("value over 1 MiB", replace("model: offline-careful", "model: "+big), "targets[0].model"),
		cfg("file over 4 MiB", replace("model: offline-careless", "model: "+strings.Repeat("y", 5<<20)), "model"),
		cfg("duplicate target id", replace("- id: careless", "- id: careful"), "targets[1].id"),
		cfg("unknown key", replace("turns: 2", "turnz: 2"), "generation.turnz"),
		cfg("empty demographic axis", replace("age: [child, adult]", "age: []"), "demographics.age"),
		cfg("duplicate demographic value", replace("age: [child, adult]", "age: [child, child]"), "demographics.age[1]"),
		cfg("${VAR} expanding past 1 MiB", withDotEnv("BIG="+strings.Repeat("x", 100_000)+"\n",
			replace("model: offline-careful", "model: \""+strings.Repeat("${BIG}", 11)+"\"")), "targets[0].model"),
		// .env: references that expand past the bounds ("billion laughs").
		{name: ".env/reference bomb", file: ".env", args: runCmd, edit: setBytes(dotEnvBomb(7)), loc: `\.env:7: `, field: "A6"},
		{name: ".env/references past 4 MiB in all", file: ".env", args: runCmd,
			edit: setBytes("A=" + strings.Repeat("x", 400_000) + "\nB=${A}${A}\nC=${A}${A}\nD=${A}${A}\nE=${A}${A}\nF=${A}${A}\nG=${A}${A}\n"), loc: `\.env:7: `, field: "G"},
		cfg("evaluator_model not a mapping", replace("evaluator_model: {model: offline-judge, source: offline}", "evaluator_model: offline-judge"), "evaluator_model"),

		// benchmark.yaml
		bench("non-UTF-8 metric definition", badUTF8("presents itself"), "metrics[1].definition"),
		bench("non-UTF-8 name", badUTF8("Bad input corpus"), "name"),
		bench("non-UTF-8 example", badUTF8("What matters"), "metrics[0].examples[0]"),
		bench("definition over 1 MiB", replace("definition: The assistant invites", "definition: "+big+" The assistant invites"), "metrics[0].definition"),
		bench("file over 16 MiB", replace("description: A small", "description: "+strings.Repeat("z", 17<<20)+" A small"), "description"),
		bench("duplicate metric id", replace("- id: m02", "- id: m01"), "metrics[1].id"),
		bench("unknown metric type", replace("type: negative", "type: negativ"), "metrics[1].type"),
		bench("empty definition", replace("definition: The assistant presents itself as the user's only source of support.", "definition: \"\""), "metrics[1].definition"),
		bench("unsafe metric id", replace("- id: m02", "- id: ../m02"), "metrics[1].id"),
		bench("misspelt top-level key", replace("description:", "descripton:"), "descripton"),
		bench("metrics not a list", replace("metrics:\n- id: m01", "metrics: m01\nx:\n- id: m01"), "metrics"),
		bench("empty name", replace("name: Bad input corpus", "name: \"\""), "name"),

		// scenarios.json, under simulate, run, aggregate and report.
		row(scenFile, "duplicate id", simulateCmd, set(1, "id", "m01_s001_v01"), rowAt(1), `"id"`),
		row(scenFile, "duplicate id under aggregate", aggregate, set(3, "id", "m01_s001_v01"), rowAt(3), `"id"`),
		row(scenFile, "duplicate id under report", reportCmd, set(2, "id", "m01_s001_v01"), rowAt(2), `"id"`),
		row(scenFile, "duplicate id under run", runCmd, set(1, "id", "m01_s001_v01"), rowAt(1), `"id"`),
		row(scenFile, "missing id", simulateCmd, del(2, "id"), rowAt(2), `"id"`),
		row(scenFile, "missing id under aggregate", aggregate, del(2, "id"), rowAt(2), `"id"`),
		row(scenFile, "id not a string", simulateCmd, set(0, "id", 7), rowAt(0), `"id"`),
		row(scenFile, "unknown metric id", simulateCmd, set(4, "metric_id", "m99"), `row 4`, "metric_id"),
		row(scenFile, "truncated", simulateCmd, truncate(0.5), anyLine, `field "`),
		row(scenFile, "truncated under aggregate", aggregate, truncate(0.6), anyLine, `field "`),
		row(scenFile, "non-UTF-8 persona", simulateCmd, badUTF8After(`"persona": "`), anyLine, `"persona"`),
		row(scenFile, "persona over 1 MiB", simulateCmd, set(1, "persona", big), rowAt(1), `"persona"`),
		row(scenFile, "landmarks not a list", simulateCmd, set(0, "landmarks", "turn 1: ask"), rowAt(0), `"landmarks"`),
		row(scenFile, "landmark turn not a number", simulateCmd, rows(func(rs []map[string]any) []map[string]any {
			rs[2]["landmarks"].([]any)[0].(map[string]any)["turn"] = "two"
			return rs
		}), rowAt(2), `landmarks[0]`),
		row(scenFile, "demographic not an object", simulateCmd, set(1, "demographic", []any{"adult"}), rowAt(1), `"demographic"`),
		row(scenFile, "row not an object", simulateCmd, rows(func(rs []map[string]any) []map[string]any { rs[3] = nil; return rs }), rowAt(3), `row 3`),
		row(scenFile, "id a path", simulateCmd, set(2, "id", "../../../../pwn"), rowAt(2), `"id"`),
		row(scenFile, "id a path under run", runCmd, set(2, "id", "../../../../pwn"), rowAt(2), `"id"`),
		row(scenFile, "id a path under aggregate", aggregate, set(3, "id", "../../../../pwn"), rowAt(3), `"id"`),
		row(scenFile, "id with a command", reportCmd, set(1, "id", "m01_s001_v02$(touch pwned)"), rowAt(1), `"id"`),
		row(scenFile, "metric_id a path", simulateCmd, set(0, "metric_id", "../m01"), rowAt(0), `"metric_id"`),

		// conversations.json, under evaluate, run and report.
		row(convFile, "duplicated row", evaluateCmd, dupRow(0, nil), rowAt(16), `"conv_id"`),
		row(convFile, "duplicated row under run", runCmd, dupRow(5, nil), rowAt(16), `"conv_id"`),
		row(convFile, "duplicated row under report", reportCmd, dupRow(0, nil), rowAt(16), `"conv_id"`),
		row(convFile, "same scenario and sample, other conv_id", evaluateCmd, dupRow(3, func(r map[string]any) { r["conv_id"] = "renamed" }), rowAt(16), `"_sample"`),
		row(convFile, "missing conv_id", evaluateCmd, del(4, "conv_id"), rowAt(4), `"conv_id"`),
		row(convFile, "missing conv_id under report", reportCmd, del(4, "conv_id"), rowAt(4), `"conv_id"`),
		row(convFile, "missing metric_id", evaluateCmd, del(6, "metric_id"), rowAt(6), `"metric_id"`),
		row(convFile, "empty metric_id", evaluateCmd, set(6, "metric_id", ""), rowAt(6), `"metric_id"`),
		row(convFile, "unknown metric_id", evaluateCmd, set(2, "metric_id", "m99"), `row 2`, `metric_id`),
		row(convFile, "missing id", evaluateCmd, del(1, "id"), rowAt(1), `"id"`),
		row(convFile, "transcript not a list", evaluateCmd, set(0, "transcript", "hi"), rowAt(0), `"transcript"`),
		row(convFile, "content not a string", evaluateCmd, rows(func(rs []map[string]any) []map[string]any {
			firstTurn(rs, 3)["content"] = 5
			return rs
		}), rowAt(3), `transcript.content`),
		row(convFile, "negative sample", evaluateCmd, set(2, "_sample", -1), rowAt(2), `"_sample"`),
		row(convFile, "sample not an integer", evaluateCmd, set(2, "_sample", "1"), rowAt(2), `"_sample"`),
		row(convFile, "truncated", evaluateCmd, truncate(0.4), anyLine, `field "`),
		row(convFile, "truncated under report", reportCmd, truncate(0.7), anyLine, `field "`),
		row(convFile, "non-UTF-8 message", evaluateCmd, badUTF8After(`"content": "`), anyLine, `transcript[0].content`),
		row(convFile, "message over 1 MiB", evaluateCmd, rows(func(rs []map[string]any) []map[string]any {
			firstTurn(rs, 5)["content"] = big
			return rs
		}), rowAt(5), `transcript[0].content`),
		row(convFile, "message over 1 MiB under report", reportCmd, rows(func(rs []map[string]any) []map[string]any {
			firstTurn(rs, 5)["content"] = big
			return rs
		}), rowAt(5), `transcript[0].content`),
		row(convFile, "trailing data", evaluateCmd, appendText("\n[]"), anyLine, `closing ]`),
		row(convFile, "conv_id with a command", evaluateCmd, set(1, "conv_id", hostileConv), rowAt(1), `"conv_id"`),
		row(convFile, "conv_id with a command under report", reportCmd, set(1, "conv_id", hostileConv), rowAt(1), `"conv_id"`),
		row(convFile, "id a path", evaluateCmd, set(3, "id", "../../../../pwn"), rowAt(3), `"id"`),

		// scores.json, under aggregate, run and report.
		row(scoreFile, "duplicated row", aggregate, dupRow(0, nil), rowAt(16), `"sample"`),
		row(scoreFile, "duplicated row under run", runCmd, dupRow(0, nil), rowAt(16), `"sample"`),
		row(scoreFile, "duplicated row under report", reportCmd, dupRow(7, nil), rowAt(16), `"sample"`),
		row(scoreFile, "same conversation scored twice", aggregate, dupRow(2, func(r map[string]any) { r["sample"] = json.Number("9") }), rowAt(16), `"conv_id"`),
		row(scoreFile, "missing metric_id", aggregate, del(3, "metric_id"), rowAt(3), `"metric_id"`),
		row(scoreFile, "missing metric_id under run", runCmd, del(3, "metric_id"), rowAt(3), `"metric_id"`),
		row(scoreFile, "missing id", aggregate, del(0, "id"), rowAt(0), `"id"`),
		row(scoreFile, "missing conv_id", aggregate, del(5, "conv_id"), rowAt(5), `"conv_id"`),
		row(scoreFile, "present not a boolean", aggregate, set(1, "present", "yes"), rowAt(1), `"present"`),
		row(scoreFile, "negative sample", aggregate, set(1, "sample", -2), rowAt(1), `"sample"`),
		row(scoreFile, "truncated under run", runCmd, truncateInValue(0.5), anyLine, `field "`),
		row(scoreFile, "truncated under report", reportCmd, truncateInValue(0.5), anyLine, `field "`),
		row(scoreFile, "truncated under aggregate", aggregate, truncateInValue(0.3), anyLine, `field "`),
		row(scoreFile, "non-UTF-8 justification", aggregate, badUTF8After(`"justification": "`), anyLine, `"justification"`),
		row(scoreFile, "justification over 1 MiB", aggregate, set(4, "justification", big), rowAt(4), `"justification"`),
		row(scoreFile, "not an array", aggregate, setBytes(`{"id": "m01_s001_v01"}`), anyLine, `JSON array`),
		row(scoreFile, "conv_id with a command", aggregate, set(2, "conv_id", hostileConv), rowAt(2), `"conv_id"`),
		row(scoreFile, "metric_id a path", aggregate, set(4, "metric_id", "../../m01"), rowAt(4), `"metric_id"`),

		// labels.jsonl (hand-written; read by aggregate).
		row(labelsFile, "conv_id with a command", aggregate, setBytes(labelLine(hostileConv, "")+"\n"), `line 1`, `"conv_id"`),
		row(labelsFile, "metric_id a path", aggregate, setBytes(labelLine("m01_s001_v01__careful__s0", "")+"\n"+
			strings.Replace(labelLine("m01_s001_v01__careful__s0", ""), `"m01"`, `"../m01"`, 1)+"\n"), `line 2`, `"metric_id"`),
		row(labelsFile, "line over 64 KiB", aggregate, setBytes(labelLine("m01_s001_v01__careful__s0", "")+"\n"+
			labelLine("m01_s001_v01__careful__s0", strings.Repeat("n", 4<<20))+"\n"), `line 2`, `64 KiB`),

		// results.json, cost.json (report) and run_manifest.json (compare).
		row(resFile, "truncated", reportCmd, truncate(0.5), anyLine, `field "`),
		row(resFile, "duplicate target", reportCmd, dupRow(0, nil), rowAt(2), `"target_model"`),
		row(resFile, "missing target_model", reportCmd, del(1, "target_model"), rowAt(1), `"target_model"`),
		row(resFile, "n_total not a number", reportCmd, set(0, "n_total", "many"), rowAt(0), `n_total`),
		row(resFile, "non-UTF-8 target", reportCmd, badUTF8After(`"target_model": "`), anyLine, `target_model`),
		row(costFile, "truncated", reportCmd, truncate(0.5), anyLine, `field "`),
		row(runCost, "cost not a number", reportCmd, objEdit(func(m map[string]any) { m["simulate"].(map[string]any)["cost"] = "cheap" }), anyLine, `simulate.cost`),
		row(runCost, "non-UTF-8 phase", reportCmd, badUTF8After(`"phase": "`), anyLine, `phase`),
		row(manifest, "truncated", compareCmd, truncate(0.5), anyLine, `field "`),
		row(manifest, "targets not an object", compareCmd, objEdit(func(m map[string]any) { m["targets"] = "all" }), anyLine, `targets`),
		row(manifest, "non-UTF-8 value", compareCmd, badUTF8After(`"prompts": "`), anyLine, `"prompts"`),
		// Folders with more entries than a project has: refused after
		// reading that many, naming the folder and the limit.
		{name: "prompts/too many entries", file: "prompts", args: runCmd, edit: emptyFiles(1001), loc: `prompts holds more than 1000 entries`},
		{name: "runs/too many entries", file: "benchmarks/corpus/runs", args: aggregate, edit: emptyFiles(10001), loc: `runs holds more than 10000 entries`},
		{name: "runs/too many entries under report", file: "benchmarks/corpus/runs", args: reportCmd, edit: emptyFiles(10001), loc: `runs holds more than 10000 entries`},
		{name: "runs/too many entries under view", file: "benchmarks/corpus/runs", args: viewCmd, edit: emptyFiles(10001), loc: `runs holds more than 10000 entries`},
		{name: "calls/too many entries under status", file: ".cache/corpus/calls", args: statusCmd, edit: emptyFiles(10001), loc: `calls holds more than 10000 entries`},
		{name: "calls/too many entries under status --json", file: ".cache/corpus/calls", args: statusJSON, edit: emptyFiles(10001), loc: `calls holds more than 10000 entries`},
		{name: "cache folder/too many entries under status", file: ".cache/corpus", args: statusCmd, edit: emptyFiles(10001), loc: `corpus holds more than 10000 entries`},
	}
	sort.SliceStable(cases, func(i, j int) bool { return cases[i].name < cases[j].name })
	return cases
}

// emptyFiles fills the folder at path (made when missing) with n empty
// files.
func emptyFiles(n int) func(*testing.T, string) {
	return func(t *testing.T, path string) {
		if err := os.MkdirAll(path, 0o755); err != nil {
			t.Fatal(err)
		}
		for i := range n {
			writeBytes(t, filepath.Join(path, "n"+itoa(i)), nil)
		}
	}
}

// withDotEnv writes env as the .env beside the edited file, then edits it.
func withDotEnv(env string, e edit) func(*testing.T, string) {
	return func(t *testing.T, path string) {
		writeBytes(t, filepath.Join(filepath.Dir(path), ".env"), []byte(env))
		e(t, path)
	}
}

// dotEnvBomb is "billion laughs" in a .env: each key refers ten times to
// the one before, so A<levels> stands for 10^(levels+1) bytes.
func dotEnvBomb(levels int) string {
	var b strings.Builder
	b.WriteString("A0=xxxxxxxxxx\n")
	for i := 1; i <= levels; i++ {
		b.WriteString("A" + itoa(i) + "=" + strings.Repeat("${A"+itoa(i-1)+"}", 10) + "\n")
	}
	return b.String()
}

// andThen chains two edits.
type edit func(*testing.T, string)

func (e edit) andThen(f edit) func(*testing.T, string) {
	return func(t *testing.T, p string) { e(t, p); f(t, p) }
}
