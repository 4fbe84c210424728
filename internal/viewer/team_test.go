package viewer

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/impactbench/impactbench/internal/artifacts"
	"github.com/impactbench/impactbench/internal/labels"
	"github.com/impactbench/impactbench/internal/layout"
	"github.com/impactbench/impactbench/internal/llm"
)

// teamTargets are the targets of the team project: distinctive strings, so
// that a leak of either is found by substring.
var teamTargets = []string{"zebratarget", "yaktarget"}

// TeamProject writes a two-benchmark study (two metrics, both targets, a
// judge panel of two) under a new project and returns its directory.
func TeamProject(t testing.TB) string {
	t.Helper()
	project := filepath.Join(t.TempDir(), "project")
	for _, b := range []string{"first", "second"} {
		WriteSynth(t, project, SynthSpec{Name: b, Metrics: 2, ScensPerMetric: 4, Targets: teamTargets, Samples: 2, Msgs: 4, MsgLen: 120, Judges: 2})
	}
	return project
}

// QuietPlayer plays like a target that never says its name (the fake of
// play_test.go quotes it back), judges every conversation "present", and
// lets a test add targets while the viewer runs.
type QuietPlayer struct {
	mu      sync.Mutex
	targets []string
}

// NewQuietPlayer plays against targets.
func NewQuietPlayer(targets ...string) *QuietPlayer { return &QuietPlayer{targets: targets} }

func (q *QuietPlayer) Targets() []string {
	q.mu.Lock()
	defer q.mu.Unlock()
	return slices.Clone(q.targets)
}

// Add makes another target playable.
func (q *QuietPlayer) Add(t string) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.targets = append(q.targets, t)
}

func (q *QuietPlayer) Turns() int { return 2 }

func (q *QuietPlayer) TargetTurn(_ context.Context, _, _ string, _ artifacts.Scenario, _ int, tr []artifacts.Turn) (artifacts.Turn, bool, llm.Usage, error) {
	return artifacts.Turn{Role: "assistant", Content: "I hear you: " + tr[len(tr)-1].Content}, false, llm.Usage{Requests: 1}, nil
}

func (q *QuietPlayer) JudgeHuman(_ context.Context, _, target string, c artifacts.Conversation) (artifacts.Score, error) {
	yes := true
	return artifacts.Score{ID: c.ID, MetricID: c.MetricID, TargetModel: target, Sample: c.Sample, ConvID: c.ConvID,
		Present: &yes, Passed: &yes, Justification: "VERDICT-WORDS present", UserModel: c.Run.UserModel}, nil
}

// tokenOf returns the token of the named reviewer ("" for the researcher).
func tokenOf(t testing.TB, s *Server, name string) string {
	t.Helper()
	for _, c := range s.creds {
		if c.who.name == name {
			return c.token
		}
	}
	t.Fatalf("no token for %q", name)
	return ""
}

// teamHeaders are what a page with token tok sends with a write.
func teamHeaders(base, tok string) map[string]string {
	return map[string]string{"Origin": base, "Content-Type": "application/json", "X-IB-Token": tok, "Sec-Fetch-Site": "same-origin"}
}

// Probe is one request of the enumeration: every route the server
// registers, with every parameter a page or a hostile reviewer might try.
type Probe struct {
	Pattern string // the route's pattern
	Method  string
	Path    string // with query
	Body    string
}

// ProbeValues are the real values probes are filled with: items, conv
// ids, scenario ids, target names and aliases, play ids, units.
type ProbeValues struct {
	Benches, Items, Convs, Scenarios, Targets, Aliases, PlayIDs []string
	Token, Other                                                string // the reviewer's token; another reviewer's name
}

// Probes expands every route of s into concrete requests over v.
func Probes(s *Server, v ProbeValues) []Probe {
	var queries []string
	add := func(q string) { queries = append(queries, q) }
	add("")
	for _, it := range v.Items {
		add("?id=" + it)
		add("?after=" + it)
		add("?id=" + it + "&labeler=" + url.QueryEscape(v.Other))
	}
	for _, c := range v.Convs {
		add("?id=" + c)
		add("?conv=" + c)
		add("?review=1&id=" + c)
	}
	for _, sc := range v.Scenarios {
		add("?id=" + sc)
	}
	for _, tg := range append(slices.Clone(v.Targets), v.Aliases...) {
		add("?target=" + tg + "&unit=m01_s001_v01__s0.json")
		for _, p := range v.PlayIDs {
			add("?target=" + tg + "&id=" + p)
		}
		for _, c := range v.Convs {
			add("?target=" + tg + "&id=" + c)
		}
	}
	for _, b := range v.Benches {
		add("?bench=" + b)
		add("?bench=" + b + "&kind=triage")
	}
	add("?kind=triage")
	add("?kind=calibration&per=3")
	add("?labeler=" + url.QueryEscape(v.Other))
	add("?show=labelled")
	add("?show=disagree")
	var bodies []string
	for _, it := range v.Items {
		bodies = append(bodies, `{"item":"`+it+`","present":true,"note":"n"}`, `{"item":"`+it+`"}`,
			`{"item":"`+it+`","present":false,"labeler":"`+v.Other+`"}`)
	}
	for _, c := range v.Convs {
		bodies = append(bodies, `{"conv_id":"`+c+`","metric_id":"m01","present":true,"labeler":"x"}`)
	}
	for _, tg := range append(slices.Clone(v.Targets), v.Aliases...) {
		bodies = append(bodies, `{"target":"`+tg+`","scenario":"m01_s001_v01","player":""}`)
		for _, p := range append(slices.Clone(v.PlayIDs), v.Convs...) {
			bodies = append(bodies, `{"target":"`+tg+`","conv_id":"`+p+`","at":0,"message":"hello"}`, `{"target":"`+tg+`","conv_id":"`+p+`"}`)
		}
	}
	bodies = append(bodies, `{}`)
	var out []Probe
	for _, pattern := range s.Routes() {
		method, path, _ := strings.Cut(pattern, " ")
		path = strings.TrimSuffix(path, "{$}")
		path = strings.ReplaceAll(path, "{token}", v.Token)
		var paths []string
		switch {
		case strings.Contains(path, "{bench}"):
			for _, b := range v.Benches {
				paths = append(paths, strings.ReplaceAll(path, "{bench}", b))
			}
		case strings.Contains(path, "{file}"):
			paths = []string{strings.ReplaceAll(path, "{file}", "app.js"), strings.ReplaceAll(path, "{file}", "style.css")}
		default:
			paths = []string{path}
		}
		for _, p := range paths {
			if method == http.MethodPost {
				for _, b := range bodies {
					out = append(out, Probe{pattern, method, p, b})
				}
				continue
			}
			for _, q := range queries {
				out = append(out, Probe{pattern, method, p + q, ""})
			}
		}
	}
	return out
}

// verdictFields are JSON keys that carry a judge's verdict or another
// person's label.
var verdictFields = []string{`"present"`, `"passed"`, `"score"`, `"justification"`, `"judges"`, `"evidence"`, `"verdict"`, `"highlights"`, `"labels":[`, `"stratum"`, `"conv_id":"m0`}

// LeakCheck says what a reviewer's answer must not hold: a target's name,
// a verdict, another person's label, or a token not their own.
func LeakCheck(pr Probe, body string, secrets []string) []string {
	var out []string
	for _, s := range secrets {
		if strings.Contains(body, s) {
			out = append(out, fmt.Sprintf("%s %s answered %q", pr.Method, pr.Path, s))
		}
	}
	if !strings.HasPrefix(pr.Path, "/api/") || strings.HasPrefix(pr.Path, "/api/mine") {
		return out // the reviewer's own labels carry their own verdicts
	}
	body, _, _ = strings.Cut(body, "\x00") // the JSON, without the headers
	flat := strings.ReplaceAll(withoutOwn(body), " ", "")
	for _, k := range verdictFields {
		if strings.Contains(flat, k) {
			out = append(out, fmt.Sprintf("%s %s answered a verdict field %s: %.300s", pr.Method, pr.Path, k, body))
		}
	}
	return out
}

// withoutOwn drops the reviewer's own label from an answer ("label" of a
// saved one, "mine" of an item).
func withoutOwn(body string) string {
	var m map[string]any
	if json.Unmarshal([]byte(body), &m) != nil {
		return body
	}
	delete(m, "label")
	delete(m, "mine")
	b, _ := json.Marshal(m)
	return string(b)
}

// send makes one probe's request.
func send(t testing.TB, base string, pr Probe, hdr map[string]string) (int, string) {
	t.Helper()
	r, err := http.NewRequest(pr.Method, base+pr.Path, strings.NewReader(pr.Body))
	must(t, err)
	for k, v := range hdr {
		r.Header.Set(k, v)
	}
	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := c.Do(r)
	must(t, err)
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var h bytes.Buffer
	resp.Header.Write(&h)
	return resp.StatusCode, string(b) + "\x00" + h.String()
}

// Trim keeps the first n of each list of values (a smaller probe set).
func (v ProbeValues) Trim(n int) ProbeValues {
	cut := func(s []string) []string { return s[:min(n, len(s))] }
	v.Items, v.Convs, v.Scenarios, v.Aliases, v.PlayIDs = cut(v.Items), cut(v.Convs), cut(v.Scenarios), cut(v.Aliases), cut(v.PlayIDs)
	return v
}

// ReviewerToken is the token of reviewer name (exported for the browser tests).
func ReviewerToken(t testing.TB, s *Server, name string) string { return tokenOf(t, s, name) }

// ResearcherRoute reports whether pattern is the researcher's only.
func ResearcherRoute(s *Server, pattern string) bool { return routeAccess(s, pattern) == researcher }

// ProbeValuesOf gathers the real values to probe a team server with, for
// reviewer (other is another reviewer's name; targets the run's targets).
func ProbeValuesOf(t testing.TB, s *Server, reviewer, other string, targets []string) ProbeValues {
	t.Helper()
	v := ProbeValues{Token: tokenOf(t, s, reviewer), Other: other, Targets: targets}
	for _, b := range s.benchNames() {
		v.Benches = append(v.Benches, b)
		st := s.bench(b)
		ix := st.index(s)
		for i := 0; i < len(ix.convs); i += 7 {
			v.Items = append(v.Items, reviewQueue{s}.itemOfConv(ix, i))
			v.Convs = append(v.Convs, ix.convs[i].convID)
		}
		v.Scenarios = append(v.Scenarios, ix.convs[0].id)
		for _, tg := range targets {
			v.Aliases = append(v.Aliases, playPage{s}.playAlias(b, tg))
			convs, _, _ := st.humans.List(tg)
			for _, c := range convs {
				v.PlayIDs = append(v.PlayIDs, playPage{s}.playID(b, c.ConvID))
			}
		}
	}
	return v
}

// TestReviewerLinkReachesNoTargetNorVerdict is issue 35's enumeration:
// every route the server registers, with every parameter a hostile
// reviewer might put there (real items, conv_ids, scenario ids, target
// names, aliases, play ids, another reviewer's name), for each reviewer's
// token. No answer holds a target name, a verdict, another person's label
// or the researcher's token, none is a 5xx, and the researcher's routes
// are refused (403) — while the researcher's own token reaches them.
func TestReviewerLinkReachesNoTargetNorVerdict(t *testing.T) {
	project := TeamProject(t)
	qp := NewQuietPlayer(teamTargets...)
	s, base := StartForTest(t, Options{ProjectDir: project, Reviewers: []string{"ana-reviewer", "bo-reviewer"}, Play: qp, Seed: 3})
	research := tokenOf(t, s, "")
	// bo labels with a note and plays, so there is someone else's work.
	bo := teamHeaders(base, tokenOf(t, s, "bo-reviewer"))
	ix := s.bench("first").index(s)
	item := reviewQueue{s}.itemOfConv(ix, 0)
	if code, body := do(t, base, req{"POST", "/api/label", `{"item":"` + item + `","present":true,"note":"NOTE-OF-BO"}`, bo}); code != 201 {
		t.Fatalf("bo's label: %d %s", code, body)
	}
	alias := playPage{s}.playAlias("first", "zebratarget")
	if code, body := do(t, base, req{"POST", "/api/b/first/play/start", `{"target":"` + alias + `","scenario":"m01_s001_v01"}`, bo}); code != 201 {
		t.Fatalf("bo plays: %d %s", code, body)
	}
	for _, who := range []string{"ana-reviewer", "bo-reviewer"} {
		other := map[string]string{"ana-reviewer": "bo-reviewer", "bo-reviewer": "ana-reviewer"}[who]
		v := ProbeValuesOf(t, s, who, other, teamTargets)
		secrets := append(slices.Clone(teamTargets), research, "__s0", "__s1", "judge-a", "judge-b", "Judge a:", "did what the metric describes", "VERDICT-WORDS")
		if who == "ana-reviewer" {
			secrets = append(secrets, "NOTE-OF-BO", "bo-reviewer", tokenOf(t, s, "bo-reviewer"))
		}
		hdr := teamHeaders(base, v.Token)
		hit := map[string]bool{}
		probes := Probes(s, v)
		for _, pr := range probes {
			code, body := send(t, base, pr, hdr)
			hit[pr.Pattern] = true
			if code >= 500 {
				t.Errorf("%s: %s %s: %d %.200s", who, pr.Method, pr.Path, code, body)
			}
			for _, leak := range LeakCheck(pr, body, secrets) {
				t.Errorf("%s: %s", who, leak)
			}
			if routeAccess(s, pr.Pattern) == researcher && code != http.StatusForbidden {
				t.Errorf("%s: researcher's route %s %s answered %d", who, pr.Method, pr.Path, code)
			}
		}
		if len(hit) != len(s.Routes()) {
			t.Errorf("%d routes probed of %d", len(hit), len(s.Routes()))
		}
		t.Logf("%s: %d requests over %d routes, none leaked", who, len(probes), len(hit))
	}
	// The researcher's token reaches the researcher's routes; no token
	// reaches nothing but the door and the static files.
	for _, pattern := range s.Routes() {
		if routeAccess(s, pattern) == public {
			continue
		}
		method, path, _ := strings.Cut(pattern, " ")
		if method != http.MethodGet {
			continue
		}
		path = strings.NewReplacer("{bench}", "first", "{token}", research, "{$}", "").Replace(path)
		if code, _ := send(t, base, Probe{pattern, method, path, ""}, map[string]string{"X-IB-Token": research}); code == 401 || code == 403 {
			t.Errorf("researcher: %s: %d", pattern, code)
		}
		bare := strings.ReplaceAll(path, research, strings.Repeat("0", 64))
		if code, body := send(t, base, Probe{pattern, method, bare, ""}, nil); code != 401 || strings.Contains(body, research) {
			t.Errorf("no token: %s: %d", bare, code)
		}
	}
	if code, body := send(t, base, Probe{"GET /{$}", "GET", "/", ""}, nil); code != 200 || strings.Contains(body, research) || !strings.Contains(body, "Open your link") {
		t.Errorf("the door page: %d %.300s", code, body)
	}
}

// routeAccess is who may use pattern.
func routeAccess(s *Server, pattern string) access {
	for _, rt := range s.routes() {
		if rt.pattern == pattern {
			return rt.access
		}
	}
	return public
}

// TestPlaceIsKeptOnTheServer: j goes to the next unlabelled item in the
// labeller's order — never back and forth between two — from any tab; a
// skipped item comes back once the rest is done or on unskip; the current
// item is where a new tab continues.
func TestPlaceIsKeptOnTheServer(t *testing.T) {
	project := TeamProject(t)
	s, base := StartForTest(t, Options{ProjectDir: project, Reviewers: []string{"ana"}, Seed: 3})
	hdr := teamHeaders(base, tokenOf(t, s, "ana"))
	next := func(after string) nextAnswer {
		t.Helper()
		code, body := do(t, base, req{"GET", "/api/next?after=" + after, "", hdr})
		if code != 200 {
			t.Fatalf("next: %d %s", code, body)
		}
		return decode[nextAnswer](t, body)
	}
	first := next("")
	if first.Item == nil || first.Left < 10 {
		t.Fatalf("first: %+v", first)
	}
	// j on an unlabelled item, again and again: every item once, in order,
	// then back to the start — never a bounce between two.
	seen := map[string]bool{*first.Item: true}
	at := *first.Item
	for range first.Left - 1 {
		n := next(at)
		if n.Item == nil || seen[*n.Item] {
			t.Fatalf("j from %s: %+v (seen %d)", at, n, len(seen))
		}
		seen[*n.Item], at = true, *n.Item
	}
	if n := next(at); n.Item == nil || *n.Item != *first.Item {
		t.Errorf("j from the last item: %+v, want the first again", n)
	}
	// The place: the item opened is where a new tab continues.
	code, _ := do(t, base, req{"POST", "/api/hold", `{"item":"` + at + `"}`, hdr})
	if n := next(""); code != 200 || n.Item == nil || *n.Item != at {
		t.Errorf("continue: %d %+v, want %s", code, n, at)
	}
	// Skip: the next one, and the skipped item only after everything else.
	code, body := do(t, base, req{"POST", "/api/skip", `{"item":"` + at + `"}`, hdr})
	sk := decode[nextAnswer](t, body)
	if code != 200 || sk.Item == nil || *sk.Item == at || sk.Skipped != 1 {
		t.Fatalf("skip: %d %s", code, body)
	}
	for x := *sk.Item; ; {
		n := next(x)
		if n.Item == nil {
			t.Fatal("the queue ran dry with an item skipped")
		}
		if *n.Item == at {
			t.Fatalf("the skipped item came back before the rest: %+v", n)
		}
		if *n.Item == *sk.Item {
			break // around once without it
		}
		x = *n.Item
	}
	code, body = do(t, base, req{"POST", "/api/unskip", `{}`, hdr})
	if un := decode[nextAnswer](t, body); code != 200 || un.Skipped != 0 || un.Left != first.Left {
		t.Errorf("unskip: %d %s", code, body)
	}
}

// TestOnlyAnOpenFormHoldsAnItem: viewing an item leaves it in another
// reviewer's queue; an open form (hold) takes it out for as long as the
// form is renewed; skipping or labelling lets it go at once.
func TestOnlyAnOpenFormHoldsAnItem(t *testing.T) {
	project := TeamProject(t)
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	var mu sync.Mutex
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	s, base := StartForTest(t, Options{ProjectDir: project, Reviewers: []string{"ana", "bo"}, Seed: 3, Overlap: 0, OverlapSet: true, Now: clock})
	ana, bo := teamHeaders(base, tokenOf(t, s, "ana")), teamHeaders(base, tokenOf(t, s, "bo"))
	inQueue := func(hdr map[string]string, item string) bool {
		t.Helper()
		_, body := do(t, base, req{"GET", "/api/queue", "", hdr})
		return strings.Contains(body, `"item":"`+item+`"`)
	}
	_, body := do(t, base, req{"GET", "/api/next", "", ana})
	item := *decode[nextAnswer](t, body).Item
	if !inQueue(bo, item) {
		t.Fatal("fixture: the item is not in bo's queue")
	}
	do(t, base, req{"GET", "/api/item?id=" + item, "", ana})
	if !inQueue(bo, item) {
		t.Error("viewing an item took it out of bo's queue")
	}
	if code, body := do(t, base, req{"POST", "/api/hold", `{"item":"` + item + `"}`, ana}); code != 200 || !strings.Contains(body, `"held":true`) {
		t.Fatalf("hold: %d %s", code, body)
	}
	if inQueue(bo, item) {
		t.Error("an open form did not hold its item")
	}
	mu.Lock()
	now = now.Add(holdFor + time.Second)
	mu.Unlock()
	if !inQueue(bo, item) {
		t.Error("a form left open without renewal still holds its item")
	}
	do(t, base, req{"POST", "/api/hold", `{"item":"` + item + `"}`, ana})
	do(t, base, req{"POST", "/api/skip", `{"item":"` + item + `"}`, ana})
	if !inQueue(bo, item) {
		t.Error("a skip kept the item held")
	}
	do(t, base, req{"POST", "/api/hold", `{"item":"` + item + `"}`, ana})
	if code, body := do(t, base, req{"POST", "/api/label", `{"item":"` + item + `","present":true}`, ana}); code != 201 {
		t.Fatalf("label: %d %s", code, body)
	}
	if inQueue(ana, item) {
		t.Error("a labelled item is still in its labeller's queue")
	}
	if s.places.heldByOther(item, "bo", clock()) {
		t.Error("a label kept the item held")
	}
	// The page sends its hold without waiting, so the label can reach the
	// server first: a hold that arrives after its holder's label holds
	// nothing (it would keep the row from a second labeller for holdFor).
	if code, body := do(t, base, req{"POST", "/api/hold", `{"item":"` + item + `"}`, ana}); code != 200 || !strings.Contains(body, `"held":false`) {
		t.Errorf("a hold after the label: %d %s, want held false", code, body)
	}
	if s.places.heldByOther(item, "bo", clock()) {
		t.Error("a hold that arrived after the label holds the item")
	}
}

// TestAnItemOpenElsewhereIsLabelledByItsHolder: the first to open a row's
// form labels it. Before, bo's hold on an item ana had open answered
// held:false and bo's label was taken all the same, so a row the plan
// asked of one person got two labels; and a row waiting for its second
// labeller stayed in cy's queue while bo had it open, so it got three.
func TestAnItemOpenElsewhereIsLabelledByItsHolder(t *testing.T) {
	project := TeamProject(t)
	s, base := StartForTest(t, Options{ProjectDir: project, Reviewers: []string{"ana", "bo", "cy"}, Blind: true, Seed: 3, Overlap: 1, OverlapSet: true})
	ana, bo, cy := teamHeaders(base, tokenOf(t, s, "ana")), teamHeaders(base, tokenOf(t, s, "bo")), teamHeaders(base, tokenOf(t, s, "cy"))
	research := teamHeaders(base, tokenOf(t, s, ""))
	_, body := do(t, base, req{"GET", "/api/next", "", ana})
	next := decode[nextAnswer](t, body)
	item := *next.Item
	inQueue := func(hdr map[string]string) bool {
		t.Helper()
		_, body := do(t, base, req{"GET", "/api/queue", "", hdr})
		return strings.Contains(body, `"item":"`+item+`"`)
	}
	steps := []struct {
		what, method, path, body string
		hdr                      map[string]string
		code                     int
		answer                   string // in the answer
	}{
		{"ana opens the form", "POST", "/api/hold", `{"item":"` + item + `"}`, ana, 200, `"held":true`},
		{"bo's form opens a moment later", "POST", "/api/hold", `{"item":"` + item + `"}`, bo, 200, `"busy":true`},
		{"bo's label", "POST", "/api/label", `{"item":"` + item + `","present":true}`, bo, 409, "opened this item first"},
		{"the researcher's label as zed", "POST", "/api/label", `{"item":"` + item + `","present":true,"labeler":"zed"}`, research, 409, "opened this item first"},
		{"the researcher's label as zed through the benchmark's API", "POST", "/api/b/" + next.Bench + "/labels", `{"item":"` + item + `","present":true,"labeler":"zed"}`, research, 409, "opened this item first"},
		{"ana's label", "POST", "/api/label", `{"item":"` + item + `","present":true}`, ana, 201, ""},
		// Every row is asked of two people (overlap 1): bo opens it for
		// the second label, so cy may not give a third.
		{"bo opens it as its second labeller", "POST", "/api/hold", `{"item":"` + item + `"}`, bo, 200, `"held":true`},
		{"cy's hold", "POST", "/api/hold", `{"item":"` + item + `"}`, cy, 200, `"busy":true`},
		{"cy's label", "POST", "/api/label", `{"item":"` + item + `","present":false}`, cy, 409, "opened this item first"},
		{"ana changes her mind", "POST", "/api/label", `{"item":"` + item + `","present":false}`, ana, 201, ""},
		{"bo's second label", "POST", "/api/label", `{"item":"` + item + `","present":false}`, bo, 201, ""},
	}
	for _, st := range steps {
		code, body := do(t, base, req{st.method, st.path, st.body, st.hdr})
		if code != st.code || !strings.Contains(body, st.answer) {
			t.Errorf("%s: %d %s, want %d with %s", st.what, code, body, st.code, st.answer)
		}
		if st.what == "bo opens it as its second labeller" && inQueue(cy) {
			t.Error("a row bo has open for its second label is in cy's queue")
		}
	}
	ls, err := labels.Read(layout.Bench{Dir: layout.BenchDir(project, next.Bench)}.Labels(), labels.Known{})
	if err != nil {
		t.Fatal(err)
	}
	by := map[string]int{}
	for _, l := range ls {
		by[l.Labeler]++
	}
	if by["bo"] != 1 || by["cy"] != 0 || by["zed"] != 0 {
		t.Errorf("labels by person %v, want bo's second label only beside ana's", by)
	}
}

// TestLabelChangedAfterTheRevealIsMarked: a labeller who saw the judges'
// verdict (reveal after) and labels the row again stores after_reveal; a
// first label does not, and a reviewer's link (never shown a verdict)
// never does.
func TestLabelChangedAfterTheRevealIsMarked(t *testing.T) {
	project, bench := miniProject(t)
	s, base := StartForTest(t, Options{ProjectDir: project, Blind: true, Reveal: RevealAfter, Seed: 1})
	hdr := writeHeaders(s, base)
	ix := s.bench("mini").index(s)
	item := reviewQueue{s}.itemOfConv(ix, 0)
	for i, present := range []bool{true, false} {
		code, body := do(t, base, req{"POST", "/api/label", fmt.Sprintf(`{"item":%q,"present":%v,"labeler":"ana"}`, item, present), hdr})
		if code != 201 || (i == 0) != !strings.Contains(body, `"after_reveal":true`) || !strings.Contains(body, `"score"`) {
			t.Errorf("label %d: %d %s", i, code, body)
		}
	}
	b, _ := os.ReadFile(filepath.Join(bench, "labels.jsonl"))
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) != 2 || strings.Contains(lines[0], "after_reveal") || !strings.Contains(lines[1], `"after_reveal": true`) {
		t.Errorf("labels.jsonl:\n%s", b)
	}
	// A reviewer is never shown the verdict: their change of mind is blind.
	team := TeamProject(t)
	ts, tbase := StartForTest(t, Options{ProjectDir: team, Reviewers: []string{"cy"}, Seed: 1})
	th := teamHeaders(tbase, tokenOf(t, ts, "cy"))
	tit := reviewQueue{ts}.itemOfConv(ts.bench("first").index(ts), 0)
	for range 2 {
		if code, body := do(t, tbase, req{"POST", "/api/label", `{"item":"` + tit + `","present":true}`, th}); code != 201 || strings.Contains(body, "after_reveal") || strings.Contains(body, `"score"`) {
			t.Errorf("reviewer's label: %d %s", code, body)
		}
	}
}

// TestLabelAPIRefusesWhatDoesNotBelong (issue 34, item 10): trailing data,
// a key twice, an unknown field, a conv_id with another metric, a conv_id
// of another target's run under this name: each a 4xx, nothing written.
func TestLabelAPIRefusesWhatDoesNotBelong(t *testing.T) {
	project, bench := miniProject(t)
	s, base := StartForTest(t, Options{ProjectDir: project})
	hdr := writeHeaders(s, base)
	// A row of alpha's run whose conv_id names beta.
	path := filepath.Join(bench, "runs", "alpha", "conversations.json")
	b, _ := os.ReadFile(path)
	must(t, os.WriteFile(path, bytes.Replace(b, []byte(`"conv_id":"m01_s002_v01__alpha__s1"`), []byte(`"conv_id":"m01_s002_v01__beta__s9"`), 1), 0o644))
	item := reviewQueue{s}.itemOfConv(s.bench("mini").index(s), 0)
	for name, r := range map[string]req{
		"trailing data":     {"POST", "/api/b/mini/labels", goodLabel + ` {"present":false}`, hdr},
		"trailing garbage":  {"POST", "/api/b/mini/labels", goodLabel + `xyz`, hdr},
		"key twice":         {"POST", "/api/b/mini/labels", strings.Replace(goodLabel, `"present":true`, `"present":true,"present":false`, 1), hdr},
		"key twice (item)":  {"POST", "/api/label", `{"item":"` + item + `","present":true,"present":false,"labeler":"ana"}`, hdr},
		"trailing (item)":   {"POST", "/api/label", `{"item":"` + item + `","present":true,"labeler":"ana"}[]`, hdr},
		"another metric":    {"POST", "/api/b/mini/labels", strings.Replace(goodLabel, `"metric_id":"m01"`, `"metric_id":"m02"`, 1), hdr},
		"another target":    {"POST", "/api/b/mini/labels", `{"conv_id":"m01_s002_v01__beta__s9","metric_id":"m01","present":true,"labeler":"ana"}`, hdr},
		"item and conv":     {"POST", "/api/b/mini/labels", `{"item":"` + item + `","conv_id":"m01_s001_v01__alpha__s0","metric_id":"m01","present":true,"labeler":"ana"}`, hdr},
		"unknown (study)":   {"POST", "/api/label", `{"item":"` + item + `","present":true,"labeler":"ana","conv_id":"x"}`, hdr},
		"no such item":      {"POST", "/api/label", `{"item":"raaaaaaaaaaaaaaaa","present":true,"labeler":"ana"}`, hdr},
		"crafted id string": {"POST", "/api/b/mini/labels", `{"conv_id":"m01_s001_v01__alpha__s0$(touch x)","metric_id":"m01","present":true,"labeler":"ana"}`, hdr},
	} {
		time.Sleep(staleCheck) // the index notices the edited file
		if code, body := do(t, base, r); code < 400 || code >= 500 {
			t.Errorf("%s: %d %s, want a 4xx", name, code, body)
		}
	}
	if n := lineCount(t, filepath.Join(bench, "labels.jsonl")); n != 0 {
		t.Errorf("%d labels written by refused requests", n)
	}
}

// TestCraftedConvIDIsRefusedWhenTheViewerLoads (issue 34, item 11): a
// conv_id holding "$(touch x)" in conversations.json stops view (Check:
// the file, row and field); a viewer already running leaves the row out,
// and a label for it is a 4xx, not a 500. Nothing is run or written.
func TestCraftedConvIDIsRefusedWhenTheViewerLoads(t *testing.T) {
	project, bench := miniProject(t)
	if err := Check(project); err != nil {
		t.Fatalf("a clean project: %v", err)
	}
	s, base := StartForTest(t, Options{ProjectDir: project})
	path := filepath.Join(bench, "runs", "alpha", "conversations.json")
	b, _ := os.ReadFile(path)
	const bad = "m01_s001_v01__alpha__s0$(touch x)"
	must(t, os.WriteFile(path, bytes.Replace(b, []byte(`"conv_id":"m01_s001_v01__alpha__s0"`), []byte(`"conv_id":"`+bad+`"`), 1), 0o644))
	err := Check(project)
	var fe *artifacts.FileError
	if !errors.As(err, &fe) || fe.Path != path || fe.Row != 0 || fe.Field != "conv_id" || !strings.Contains(err.Error(), "not an id") {
		t.Fatalf("Check: %v, want the file, row 0 and field conv_id", err)
	}
	time.Sleep(staleCheck)
	label := strings.Replace(goodLabel, "m01_s001_v01__alpha__s0", bad, 1)
	code, body := do(t, base, req{"POST", "/api/b/mini/labels", label, writeHeaders(s, base)})
	if code != 400 {
		t.Errorf("label for the crafted id: %d %s, want 400", code, body)
	}
	if _, err := os.Stat(filepath.Join(project, "x")); !os.IsNotExist(err) {
		t.Error("something ran the id")
	}
	if _, err := os.Stat(filepath.Join(bench, "labels.jsonl")); !os.IsNotExist(err) {
		t.Error("a label was written")
	}
	_, progress := do(t, base, req{"GET", "/api/b/mini/progress", "", nil})
	if !strings.Contains(progress, "is not an id") {
		t.Errorf("the index does not say why the row is left out: %.300s", progress)
	}
}

// TestTokensAreNeverLogged: a viewer logging everything at debug level,
// through requests with every token, writes none of them to the log.
func TestTokensAreNeverLogged(t *testing.T) {
	project := TeamProject(t)
	var logs bytes.Buffer
	var mu sync.Mutex
	h := slog.NewTextHandler(writerFunc(func(p []byte) (int, error) { mu.Lock(); defer mu.Unlock(); return logs.Write(p) }), &slog.HandlerOptions{Level: slog.LevelDebug})
	s, base := StartForTest(t, Options{ProjectDir: project, Reviewers: []string{"ana"}, Logger: slog.New(h)})
	for _, c := range s.creds {
		for _, p := range []string{"/k/" + c.token + "/", "/api/queue", "/api/b/first/progress", "/k/" + c.token + "/report/first", "/api/nope"} {
			do(t, base, req{"GET", p, "", map[string]string{"X-IB-Token": c.token}})
		}
		do(t, base, req{"GET", "/api/queue", "", map[string]string{"X-IB-Token": c.token + "0"}})
	}
	mu.Lock()
	defer mu.Unlock()
	if logs.Len() == 0 {
		t.Fatal("nothing was logged: the test proves nothing")
	}
	for _, c := range s.creds {
		if strings.Contains(logs.String(), c.token) {
			t.Errorf("a token is in the log")
		}
	}
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

// TestNewTargetsAndBenchmarksAppearWithoutARestart: a run directory and a
// benchmark added while the viewer runs are in the queue, and a target the
// Player gains is on the Play page (for a reviewer by its alias).
func TestNewTargetsAndBenchmarksAppearWithoutARestart(t *testing.T) {
	project := TeamProject(t)
	qp := NewQuietPlayer(teamTargets...)
	s, base := StartForTest(t, Options{ProjectDir: project, Reviewers: []string{"ana"}, Play: qp, Seed: 3})
	hdr := teamHeaders(base, tokenOf(t, s, "ana"))
	research := map[string]string{"X-IB-Token": tokenOf(t, s, "")}
	_, before := do(t, base, req{"GET", "/api/queue?per=50", "", research})
	WriteSynth(t, project, SynthSpec{Name: "third", Metrics: 1, ScensPerMetric: 2, Targets: []string{"newtarget"}, Samples: 1, Msgs: 2, MsgLen: 40, Judges: 1})
	time.Sleep(staleCheck)
	_, after := do(t, base, req{"GET", "/api/queue?per=50", "", research})
	if strings.Contains(before, `"bench":"third"`) || !strings.Contains(after, `"bench":"third"`) || !strings.Contains(after, "newtarget") {
		t.Errorf("a new benchmark's target is not in the queue:\n%.400s", after)
	}
	qp.Add("newtarget")
	_, play := do(t, base, req{"GET", "/api/b/first/play", "", research})
	_, blind := do(t, base, req{"GET", "/api/b/first/play", "", hdr})
	if !strings.Contains(play, "newtarget") || !strings.Contains(blind, playPage{s}.playAlias("first", "newtarget")) || strings.Contains(blind, "newtarget") {
		t.Errorf("Play: researcher %s\nreviewer %s", play, blind)
	}
}

// TestAnOldLinkSaysToAskForTheCurrentOne: links change at every start, so
// a reviewer's link from before a restart (or any link that is not one)
// is told why it no longer opens the viewer and whom to ask — not to open
// a link "view printed", which a reviewer never saw — on the page and from
// the API alike.
func TestAnOldLinkSaysToAskForTheCurrentOne(t *testing.T) {
	project := TeamProject(t)
	_, base := StartForTest(t, Options{ProjectDir: project, Reviewers: []string{"ana"}})
	old := strings.Repeat("ab", 32) // the shape of a link's token, of no start of this viewer
	for _, r := range []req{
		{"GET", "/k/" + old + "/", "", nil},
		{"GET", "/api/next", "", map[string]string{"X-IB-Token": old}},
	} {
		code, body := do(t, base, r)
		if code != http.StatusUnauthorized || !strings.Contains(body, "links change each time impactbench view starts") ||
			!strings.Contains(body, "ask the person who started it for your current link") {
			t.Errorf("%s %s: %d %q, want 401 saying links change at each start and whom to ask", r.method, r.path, code, body)
		}
	}
}
