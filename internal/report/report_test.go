package report

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	stdhtml "html"
	"io"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/impactbench/impactbench/internal/artifacts"
	"github.com/impactbench/impactbench/internal/human"
	"github.com/impactbench/impactbench/internal/llm"
)

var fixedTime = time.Date(2026, 7, 1, 12, 0, 0, 0, time.UTC)

func buildHTML(t *testing.T, dir string) string {
	t.Helper()
	in, err := Load(dir, Settings{Generated: fixedTime})
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := Build(context.Background(), in, &buf); err != nil {
		t.Fatal(err)
	}
	return buf.String()
}

// island extracts a <script … id="id"> element's text.
func island(t *testing.T, html, id string) string {
	t.Helper()
	re := regexp.MustCompile(`<script type="[^"]+" id="` + regexp.QuoteMeta(id) + `">([^<]*)</script>`)
	m := re.FindStringSubmatch(html)
	if m == nil {
		t.Fatalf("no island %s", id)
	}
	return m[1]
}

func inflateChunk(t *testing.T, b64 string, v any) {
	t.Helper()
	raw, err := base64.StdEncoding.DecodeString(b64)
	if err != nil {
		t.Fatal(err)
	}
	zr, err := gzip.NewReader(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatal(err)
	}
}

func near(a, b float64) bool { return math.Abs(a-b) < 5e-4 }

func TestNoExternalLoads(t *testing.T) {
	html := buildHTML(t, miniBench(t))
	// No attribute or CSS may point anywhere: the report must work offline
	// and must not leak that it was opened.
	for _, re := range []*regexp.Regexp{
		regexp.MustCompile(`(?i)\b(src|href|action|formaction|poster|data)\s*=\s*["']?\s*(https?:|//|ftp:)`),
		regexp.MustCompile(`(?i)url\(\s*["']?\s*(https?:|//)`),
		regexp.MustCompile(`(?i)@import`),
		regexp.MustCompile(`(?i)<(link|iframe|object|embed|base)\b`),
		regexp.MustCompile(`sourceMappingURL`),
	} {
		if loc := re.FindStringIndex(html); loc != nil {
			t.Errorf("external reference %q matched: …%s…", re, html[max(0, loc[0]-40):min(len(html), loc[1]+40)])
		}
	}
	csp := regexp.MustCompile(`<meta http-equiv="Content-Security-Policy" content="([^"]+)">`).FindStringSubmatch(html)
	if csp == nil {
		t.Fatal("no CSP meta tag")
	}
	policy := stdhtml.UnescapeString(csp[1])
	for _, want := range []string{"default-src 'none'", "img-src data:", "base-uri 'none'"} {
		if !strings.Contains(policy, want) {
			t.Errorf("CSP %q lacks %q", policy, want)
		}
	}
	if strings.Contains(policy, "unsafe-eval") || regexp.MustCompile(`script-src[^;]*'unsafe-inline'`).MatchString(policy) {
		t.Errorf("CSP allows arbitrary scripts: %s", policy)
	}
	// The hashes must match the inline scripts, or the browser blocks them.
	scripts := regexp.MustCompile(`<script>((?s).*?)</script>`).FindAllStringSubmatch(html, -1)
	if len(scripts) != 2 {
		t.Fatalf("want 2 executable inline scripts (Chart.js, app), got %d", len(scripts))
	}
	for _, s := range scripts {
		sum := sha256.Sum256([]byte(s[1]))
		h := "'sha256-" + base64.StdEncoding.EncodeToString(sum[:]) + "'"
		if !strings.Contains(policy, h) {
			t.Errorf("CSP lacks hash %s of an inline script", h)
		}
	}
}

func TestUntrustedTextStaysInert(t *testing.T) {
	html := buildHTML(t, miniBench(t))
	// The payload appears in the page only encoded: in JSON islands with
	// \u003c escapes, or inside gzip+base64 chunks.
	for _, raw := range []string{"<script>window.__xss", "<img src=x", "<svg onload", "\u2028", "\u2029", "<b>bench"} {
		if strings.Contains(html, raw) {
			t.Errorf("raw untrusted text %q in HTML", raw)
		}
	}
	// Exactly: 2 JSON islands + 2 executable scripts + data chunks; every
	// <script has its own </script>, so nothing broke out of an element.
	opens := strings.Count(html, "<script")
	closes := strings.Count(html, "</script>")
	if opens != closes {
		t.Errorf("<script %d vs </script> %d", opens, closes)
	}
	ix := island(t, html, "ib-index")
	var index convIndex
	if err := json.Unmarshal([]byte(ix), &index); err != nil {
		t.Fatal(err)
	}
	if want := 4 + index.NChunks + index.NSChunks; opens != want {
		t.Errorf("%d script elements, want %d", opens, want)
	}
	// The title is escaped by html/template, the name in the data island by JSON.
	if !strings.Contains(html, "<title>Mini &lt;b&gt;bench&lt;/b&gt; · ImpactBench report</title>") {
		t.Error("title not escaped")
	}
	// Round trip: the chunk holds the payload byte for byte.
	var ch convChunk
	inflateChunk(t, island(t, html, "ibc-0"), &ch)
	found := false
	for _, s := range ch.Strs {
		found = found || s == xssPayload
	}
	if !found {
		t.Error("payload not preserved verbatim in the transcript chunk")
	}
}

func TestSummaryMini(t *testing.T) {
	in, err := Load(miniBench(t), Settings{})
	if err != nil {
		t.Fatal(err)
	}
	if len(in.Notes) != 0 {
		t.Fatalf("notes: %v", in.Notes)
	}
	s := buildSummary(&in, fixedTime)
	if s.Leaderboard.Source != "results" || len(s.Leaderboard.Rows) != 2 {
		t.Fatalf("leaderboard: %+v", s.Leaderboard)
	}
	a, b := s.Leaderboard.Rows[0], s.Leaderboard.Rows[1]
	// alpha: bootstrap CI from results.json is used as is.
	if a.Model != "alpha" || a.Pos.Method != methodBootstrap || !near(*a.Pos.Lo, 0.3333) || !near(*a.Pos.Hi, 1) || a.Pos.N != 3 || a.Null != 1 {
		t.Errorf("alpha pos: %+v", a.Pos)
	}
	// beta: upstream shape → Wilson from round(rate·n) = 3/4 and 1/3.
	if b.Pos.Method != methodWilson || b.Pos.K != 3 || !near(*b.Pos.Lo, 0.3006) || !near(*b.Pos.Hi, 0.9544) {
		t.Errorf("beta pos: %+v lo=%v hi=%v", b.Pos, *b.Pos.Lo, *b.Pos.Hi)
	}
	if b.Neg.K != 1 || !near(*b.Neg.Lo, 0.0615) || !near(*b.Neg.Hi, 0.7923) {
		t.Errorf("beta neg: %+v", b.Neg)
	}
	m01 := s.Heatmap.Cells["alpha"]["m01"]
	if m01.Method != methodGiven || !near(*m01.Lo, 0.2) || m01.N != 3 || m01.K != 2 {
		t.Errorf("heatmap alpha m01: %+v", m01)
	}
	if c := s.Heatmap.Cells["beta"]["m02"]; !near(*c.Rate, 0.3333) || c.Method != methodWilson {
		t.Errorf("heatmap beta m02: %+v", c)
	}
	// Demographics: alpha from results.json (significant m02 gap), beta recounted.
	var sig, betaRows int
	for _, r := range s.Demographic.Rows {
		if r.Model == "alpha" && r.Metric == "m02" && r.Flag == "significant" {
			sig++
		}
		if r.Model == "beta" {
			betaRows++
			if !r.Provisional {
				t.Error("beta demographic rows must be provisional")
			}
		}
	}
	if sig != 1 || betaRows != 3 || s.Demographic.Source != "results" {
		t.Errorf("demographics: sig=%d betaRows=%d source=%s", sig, betaRows, s.Demographic.Source)
	}
	if len(s.Demographic.Axes) != 1 || strings.Join(s.Demographic.Axes[0].Values, "|") != "Child or teenager (6-17)|Adult (18+)" {
		t.Errorf("axes: %+v", s.Demographic.Axes)
	}
	if !near(s.Cost.Total, 0.875) || s.Cost.Unknown != 1 || len(s.Cost.Rows) != 4 {
		t.Errorf("cost: %+v", s.Cost)
	}
	if s.Cost.Rows[1].Phase != "simulate" || s.Cost.Rows[2].Phase != "evaluate" {
		t.Errorf("cost rows not in pipeline order: %+v", s.Cost.Rows)
	}
	settings := map[string]string{}
	for _, kv := range s.Settings {
		settings[kv[0]] = kv[1]
	}
	if settings["Simulated user model"] != "offline-user" || settings["Turns per conversation"] != "2" || settings["Samples per scenario"] != "2" {
		t.Errorf("settings inferred from run records: %v", settings)
	}
}

func TestFlagRowDescriptive(t *testing.T) {
	r := func(k, n int) rateView { return wilsonView(k, n) }
	row := demoRow{Cells: []rateView{r(9, 10), r(5, 10)}}
	flagRow(&row)
	if row.Flag != "large" || !near(*row.Spread, 0.4) {
		t.Errorf("large gap not flagged: %+v", row)
	}
	small := demoRow{Cells: []rateView{r(2, 2), r(0, 2)}} // n below gapMinN: noise, not flagged
	flagRow(&small)
	if small.Flag != "" || small.Spread != nil {
		t.Errorf("small-n gap flagged: %+v", small)
	}
	tested := demoRow{Cells: []rateView{r(6, 10), r(5, 10)}, Tests: []gapView{{Significant: true}}}
	flagRow(&tested)
	if tested.Flag != "significant" {
		t.Errorf("significant test not flagged: %+v", tested)
	}
}

func TestStoreIndex(t *testing.T) {
	in, err := Load(miniBench(t), Settings{})
	if err != nil {
		t.Fatal(err)
	}
	s := buildSummary(&in, fixedTime)
	st, err := buildStore(context.Background(), &in, s.Metrics, s.Demographic.Axes)
	if err != nil {
		t.Fatal(err)
	}
	ix := st.Index
	if len(ix.T) != 16 || len(ix.SID) != 4 || ix.NChunks != 1 || len(ix.ID) != 0 {
		t.Fatalf("index sizes: t=%d sid=%d chunks=%d ids=%d", len(ix.T), len(ix.SID), ix.NChunks, len(ix.ID))
	}
	count := map[int]int{}
	for _, v := range ix.V {
		count[v]++
	}
	// 16 conversations: 1 null (alpha), 1 unscored (beta's failed one).
	if count[verdictNull] != 1 || count[verdictUnscored] != 1 || count[verdictPass]+count[verdictFail] != 14 {
		t.Errorf("verdict counts: %v", count)
	}
	// Ordered scenario → sample → target: alpha then beta for each.
	if ix.T[0] != 0 || ix.T[1] != 1 || ix.S[0] != 0 || ix.N[2] != 1 {
		t.Errorf("order: t=%v s=%v n=%v", ix.T[:4], ix.S[:4], ix.N[:4])
	}
	if ix.SD[0][0] != 0 || ix.SD[1][0] != 1 {
		t.Errorf("demographic value indices: %v", ix.SD)
	}
}

func TestLegacyHumanebench(t *testing.T) {
	in, err := Load("testdata/humanebench", Settings{})
	if err != nil {
		t.Fatal(err)
	}
	if len(in.Runs) != 1 || len(in.Runs[0].Conversations) != 18 || len(in.Scenarios) != 18 || len(in.Results) != 1 {
		t.Fatalf("loaded: runs=%d scen=%d res=%d", len(in.Runs), len(in.Scenarios), len(in.Results))
	}
	if d := in.Scenarios[0].Demographic; len(d) != 2 || d[0].Axis != "age" || d[1].Axis != "gender" {
		t.Errorf("demographic order: %+v", d)
	}
	s := buildSummary(&in, fixedTime)
	if r := s.Leaderboard.Rows[0]; !near(*r.Pos.Rate, 0.8333) || r.Pos.K != 10 || r.Pos.Method != methodWilson {
		t.Errorf("legacy leaderboard: %+v", r.Pos)
	}
	// No by_demographic upstream: the view is recounted from scores.
	if s.Demographic.Source != "scores" || len(s.Demographic.Rows) == 0 {
		t.Errorf("demographic fallback: %+v", s.Demographic.Source)
	}
	html := buildHTML(t, "testdata/humanebench")
	var ix convIndex
	if err := json.Unmarshal([]byte(island(t, html, "ib-index")), &ix); err != nil {
		t.Fatal(err)
	}
	// Legacy rows have no status: one "" status, every row scored.
	if len(ix.Statuses) != 1 || ix.Statuses[0] != "" {
		t.Errorf("statuses: %q", ix.Statuses)
	}
	for i, v := range ix.V {
		if v == verdictUnscored {
			t.Errorf("conversation %d unmatched to its score", i)
		}
	}
}

func TestMissingFilesAndBrokenFiles(t *testing.T) {
	dir := t.TempDir()
	in, err := Load(dir, Settings{})
	if err != nil {
		t.Fatal(err)
	}
	if in.Benchmark.Name != filepath.Base(dir) {
		t.Errorf("name fallback: %q", in.Benchmark.Name)
	}
	var buf bytes.Buffer
	if err := Build(context.Background(), in, &buf); err != nil {
		t.Fatalf("empty bench: %v", err)
	}
	// Damaged files are bad input (exit 2), named with their row: a
	// report built from part of a file would show numbers that are wrong.
	for _, tc := range []struct{ rel, content, want string }{
		{"scenarios.json", "[{", "truncated"},
		{filepath.Join("runs", "x", "conversations.json"), `{"not":"an array"}`, "expected a JSON array"},
		{filepath.Join("runs", "x", "scores.json"), `[{"id":"a","metric_id":"m01"},{"id":"a","metric_id":"m01"}]`, `row 1 (line 1): field "sample": scenario "a" sample 0 (metric m01) is scored twice`},
		{"cost.json", `{"simulate": {"cost": "x"}}`, `field "simulate.cost"`},
	} {
		sub := t.TempDir()
		path := filepath.Join(sub, tc.rel)
		writeFile(t, path, tc.content)
		_, err = Load(sub, Settings{})
		var fe *artifacts.FileError
		if !errors.As(err, &fe) || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want an *artifacts.FileError naming the file and %q", tc.rel, err, tc.want)
		}
	}
	if _, err := Load(filepath.Join(dir, "nope"), Settings{}); err == nil {
		t.Error("missing dir: want error")
	}
}

func TestWriteFileAtomicAndDeterministic(t *testing.T) {
	dir := miniBench(t)
	opts := Options{Settings: Settings{Generated: fixedTime}}
	p1, err := WriteFile(context.Background(), dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	first, _ := os.ReadFile(p1)
	p2, err := WriteFile(context.Background(), dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	second, _ := os.ReadFile(p2)
	if p1 != filepath.Join(dir, "report.html") || !bytes.Equal(first, second) {
		t.Error("same input must give the same bytes (diffable reports)")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := WriteFile(ctx, dir, Options{Output: "other.html"}); err == nil {
		t.Error("cancelled build: want error")
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".report-") || e.Name() == "other.html" {
			t.Errorf("left behind: %s", e.Name())
		}
	}
}

// TestAppHasNoHTMLSinks guards the page script's rule: data reaches the DOM
// only through textContent/createElement, so none of the APIs that parse
// markup or code may appear in it at all.
func TestAppHasNoHTMLSinks(t *testing.T) {
	for _, sink := range []string{"innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval(",
		"new Function", "setAttribute('on", "javascript:", ".href", ".src", "srcdoc", "createContextualFragment", "DOMParser"} {
		if strings.Contains(appJS, sink) {
			t.Errorf("app.js uses %s", sink)
		}
	}
}

// TestPeoplesConversationsInTheTranscriptViewer: conversations people
// played (judged, and a draft still being played) are in the transcript
// index after the simulated ones of their scenario, named by their player,
// the draft marked and unscored, the judged one with its verdict, and
// their messages in the chunks.
// addPlayed adds two conversations people played against alpha on
// m01_s001_v01: ana's, ended and judged (fail); bo's, a draft.
func addPlayed(t testing.TB, dir string) (judged, draft string) {
	t.Helper()
	st := human.Open(dir)
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	sc := artifacts.Scenario{ID: "m01_s001_v01", MetricID: "m01"}
	run := artifacts.RunInfo{TargetModel: "alpha", Turns: 2}
	play := func(who, msg string, end bool) string {
		c, err := st.Start("alpha", sc, who, run, now)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := st.Reply("alpha", c.ConvID, 0, artifacts.Turn{Role: "user", Content: msg}, artifacts.Turn{Role: "assistant", Content: "reply to " + who}, false, llm.Usage{}, 2, now); err != nil {
			t.Fatal(err)
		}
		if end {
			if _, err := st.End("alpha", c.ConvID, 2, now); err != nil {
				t.Fatal(err)
			}
		}
		return c.ConvID
	}
	judged, draft = play("ana", "PERSON-ANA says hi", true), play("bo", "PERSON-BO half", false)
	no := false
	if err := st.SetScore("alpha", human.Score{Score: artifacts.Score{ID: sc.ID, MetricID: "m01", TargetModel: "alpha", Sample: 0, ConvID: judged,
		Present: &no, Passed: &no}, User: human.User, Player: "ana", JudgedAt: now}); err != nil {
		t.Fatal(err)
	}
	return judged, draft
}

func TestPeoplesConversationsInTheTranscriptViewer(t *testing.T) {
	dir := miniBench(t)
	judged, draft := addPlayed(t, dir)
	html := buildHTML(t, dir)
	var ix convIndex
	if err := json.Unmarshal([]byte(island(t, html, "ib-index")), &ix); err != nil {
		t.Fatal(err)
	}
	if len(ix.T) != 18 || len(ix.P) != 2 || len(ix.Dr) != 1 {
		t.Fatalf("index: %d conversations, players %v, drafts %v", len(ix.T), ix.P, ix.Dr)
	}
	found := map[string]int{}
	for i, id := range ix.ID {
		found[id] = i
	}
	ij, id := found[judged], found[draft]
	if ix.P[ij] != "ana" || ix.V[ij] != verdictFail || ix.Dr[ij] || ix.P[id] != "bo" || !ix.Dr[id] || ix.V[id] != verdictUnscored || ix.Statuses[ix.St[id]] != "playing" {
		t.Errorf("judged %d: player %q verdict %d; draft %d: player %q verdict %d status %q", ij, ix.P[ij], ix.V[ij], id, ix.P[id], ix.V[id], ix.Statuses[ix.St[id]])
	}
	if ix.S[ij] != 0 || ij < 4 {
		t.Errorf("the people's conversations are not after the simulated ones of their scenario: %d", ij)
	}
	var ch convChunk
	inflateChunk(t, island(t, html, "ibc-0"), &ch)
	if !slices.Contains(ch.Strs, "PERSON-ANA says hi") || !slices.Contains(ch.Strs, "PERSON-BO half") || ch.Recs[ij].Score == nil {
		t.Errorf("chunk: people's messages or verdict missing")
	}
}
