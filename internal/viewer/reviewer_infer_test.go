package viewer

import (
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/impactbench/impactbench/internal/labels"
	"github.com/impactbench/impactbench/internal/layout"
)

// TestReviewerCannotRedrawTheQueue: a reviewer's queue is the study's
// calibration queue as the researcher set it. The triage queue (rows where
// judges disagree) or a draw of their own (per=1 under a few seeds sorts the
// items by target × judge verdict) would tell them what blind answers
// withhold, so every queue route refuses kind, seed, per, overlap and width
// from a reviewer (403) — and still takes them from the researcher.
func TestReviewerCannotRedrawTheQueue(t *testing.T) {
	project := TeamProject(t)
	s, base := StartForTest(t, Options{ProjectDir: project, Reviewers: []string{"ana", "bo"}, Seed: 3})
	ana, research := teamHeaders(base, tokenOf(t, s, "ana")), teamHeaders(base, tokenOf(t, s, ""))
	item := reviewQueue{s}.itemOfConv(s.bench("first").index(s), 0)
	routes := []struct{ method, path, body string }{
		{"GET", "/api/queue", ""}, {"GET", "/api/next", ""},
		{"POST", "/api/skip", `{"item":"` + item + `"}`}, {"POST", "/api/unskip", `{}`}, {"POST", "/api/hold", `{"item":"` + item + `"}`},
	}
	for _, rt := range routes {
		for _, q := range []string{"kind=triage", "kind=triage&bench=first", "per=1", "kind=calibration&per=1", "seed=7", "overlap=1", "width=0.5"} {
			path := rt.path + "?" + q
			if code, body := do(t, base, req{rt.method, path, rt.body, ana}); code != http.StatusForbidden {
				t.Errorf("ana: %s %s: %d, want 403: %.200s", rt.method, path, code, body)
			}
			if code, body := do(t, base, req{rt.method, path + "&labeler=zed", rt.body, research}); code != http.StatusOK {
				t.Errorf("researcher: %s %s: %d: %.200s", rt.method, path, code, body)
			}
		}
		for _, q := range []string{"", "?kind=calibration", "?bench=second"} {
			if code, body := do(t, base, req{rt.method, rt.path + q, rt.body, ana}); code != http.StatusOK {
				t.Errorf("ana: %s %s%s: %d: %.200s", rt.method, rt.path, q, code, body)
			}
		}
	}
}

// TestPlayAliasesSayNothingOfTheConfigOrder: a reviewer's Play page lists
// the targets by alias in the aliases' own order, not config.yaml's (the
// n-th alias would be the n-th target of a list they may know), and their
// played conversations by time, not grouped by target in that order. The
// aliases are new at each start.
func TestPlayAliasesSayNothingOfTheConfigOrder(t *testing.T) {
	project := TeamProject(t)
	var targets []string
	for i := range 8 {
		targets = append(targets, fmt.Sprintf("zzz-target-%d", i))
	}
	s, base := StartForTest(t, Options{ProjectDir: project, Reviewers: []string{"ana"}, Play: NewQuietPlayer(targets...)})
	ana := teamHeaders(base, tokenOf(t, s, "ana"))
	info := func() (out struct {
		Targets       []string  `json:"targets"`
		Conversations []playRow `json:"conversations"`
	}) {
		t.Helper()
		code, body := do(t, base, req{"GET", "/api/b/first/play", "", ana})
		if code != 200 {
			t.Fatalf("play info: %d %s", code, body)
		}
		must(t, json.Unmarshal([]byte(body), &out))
		return out
	}
	got := info().Targets
	var inConfigOrder []string
	for _, tg := range targets {
		inConfigOrder = append(inConfigOrder, playPage{s}.playAlias("first", tg))
	}
	if !slices.IsSorted(got) || len(got) != len(targets) {
		t.Errorf("aliases %v: want them sorted (config order: %v)", got, inConfigOrder)
	}
	// Play against every target, last configured first: the list must not
	// come back grouped in config order.
	for i := len(targets) - 1; i >= 0; i-- {
		if code, body := do(t, base, req{"POST", "/api/b/first/play/start", `{"target":"` + inConfigOrder[i] + `","scenario":"m01_s001_v01"}`, ana}); code != 201 {
			t.Fatalf("start: %d %s", code, body)
		}
	}
	rows := info().Conversations
	var rowTargets []string
	for _, r := range rows {
		rowTargets = append(rowTargets, r.Target)
	}
	if slices.Equal(rowTargets, inConfigOrder) {
		t.Errorf("played conversations listed in config order of their targets: %v", rowTargets)
	}
	if !slices.IsSortedFunc(rows, func(a, b playRow) int {
		return cmp.Or(strings.Compare(a.Started, b.Started), strings.Compare(a.ConvID, b.ConvID))
	}) {
		t.Errorf("played conversations not by time then id: %+v", rows)
	}
	s2, _ := StartForTest(t, Options{ProjectDir: project, Reviewers: []string{"ana"}, Play: NewQuietPlayer(targets...)})
	if a, b := (playPage{s}).playAlias("first", targets[0]), (playPage{s2}).playAlias("first", targets[0]); a == b {
		t.Errorf("alias %s the same on two starts", a)
	}
}

// TestUnreadableLabelsAreNeverSilent: a labels.jsonl with a bad line takes
// its benchmark out of the study's queue. The queue then says so — to the
// researcher reviewing blind too, naming the file and line but no target —
// and never that the review plan is complete: before, the blind
// researcher's answer held no note, and with the other benchmark's rows
// all labelled the queue said the plan was complete.
func TestUnreadableLabelsAreNeverSilent(t *testing.T) {
	project := filepath.Join(t.TempDir(), "project")
	for _, b := range []string{"tiny", "broken"} {
		WriteSynth(t, project, SynthSpec{Name: b, Metrics: 1, ScensPerMetric: 2, Targets: []string{"zebratarget"}, Samples: 1, Msgs: 2, MsgLen: 60, Judges: 1})
	}
	s, base := StartForTest(t, Options{ProjectDir: project, Reviewers: []string{"ana"}, Blind: true, Seed: 5, Overlap: 0, OverlapSet: true})
	ana, research := teamHeaders(base, tokenOf(t, s, "ana")), teamHeaders(base, tokenOf(t, s, ""))
	bad := layout.Bench{Dir: layout.BenchDir(project, "broken")}.Labels()
	must(t, os.WriteFile(bad, []byte(`{"conv_id": "m01_s001_v01__zebratarget__s0", "zebratarget": 1}`+"\n"), 0o644))
	type answer struct {
		Items    []studyItemView `json:"items"`
		Notes    []string        `json:"notes"`
		PlanDone bool            `json:"plan_done"`
	}
	// ana labels every row of tiny: all the queue can still bring her.
	for {
		q := getAs[answer](t, base, "/api/queue", ana)
		if len(q.Items) == 0 {
			break
		}
		if q.Items[0].Bench != "tiny" {
			t.Fatalf("an item of the unreadable benchmark: %+v", q.Items[0])
		}
		if code, body := do(t, base, req{"POST", "/api/label", `{"item":"` + q.Items[0].Item + `","present":true}`, ana}); code != 201 {
			t.Fatalf("label: %d %s", code, body)
		}
	}
	for _, c := range []struct {
		who, path string
		hdr       map[string]string
		want      string
	}{
		{"ana", "/api/queue", ana, "1 benchmark(s) could not be read"},
		{"researcher", "/api/queue?labeler=ana", research, bad},
	} {
		q := getAs[answer](t, base, c.path, c.hdr)
		if q.PlanDone {
			t.Errorf("%s: plan_done with a benchmark left out", c.who)
		}
		t.Logf("%s: %q", c.who, q.Notes)
		if len(q.Notes) != 1 || !strings.Contains(q.Notes[0], c.want) || strings.Contains(q.Notes[0], "zebratarget") {
			t.Errorf("%s: notes %q, want one naming %q and no target", c.who, q.Notes, c.want)
		}
		if n := getAs[nextAnswer](t, base, c.path[:len("/api/")]+"next"+c.path[len("/api/queue"):], c.hdr); n.Item != nil || n.PlanDone {
			t.Errorf("%s: next %+v: want no item and the plan not done", c.who, n)
		}
	}
}

// TestMineSaysWhichLabelsCannotBeRead: /api/mine ({labels, notes}) lists
// the labeller's labels and, for a benchmark whose labels.jsonl cannot be
// read, a note — to a reviewer how many benchmarks, to the researcher
// reviewing blind the file and line without a target's name. Before, the
// answer was a bare list that left such a benchmark out without a word.
func TestMineSaysWhichLabelsCannotBeRead(t *testing.T) {
	mineNotes(t, func(path string) {
		must(t, os.WriteFile(path, []byte(`{"conv_id": "m01_s001_v01__zebratarget__s0", "zebratarget": 1}`+"\n"), 0o644))
	}, "line 1")
}

// mineNotes makes a study of two benchmarks, tiny and broken; ana labels
// a row of tiny, then spoil makes broken's labels file unreadable, and
// each /api/mine answer must list ana's label and one note (the
// researcher's holding want).
func mineNotes(t *testing.T, spoil func(path string), want string) {
	t.Helper()
	project := filepath.Join(t.TempDir(), "project")
	for _, b := range []string{"tiny", "broken"} {
		WriteSynth(t, project, SynthSpec{Name: b, Metrics: 1, ScensPerMetric: 2, Targets: []string{"zebratarget"}, Samples: 1, Msgs: 2, MsgLen: 60, Judges: 1})
	}
	s, base := StartForTest(t, Options{ProjectDir: project, Reviewers: []string{"ana"}, Blind: true, Seed: 5, Overlap: 0, OverlapSet: true})
	ana, research := teamHeaders(base, tokenOf(t, s, "ana")), teamHeaders(base, tokenOf(t, s, ""))
	n := getAs[nextAnswer](t, base, "/api/next?bench=tiny", ana)
	if n.Item == nil {
		t.Fatal("fixture: nothing for ana in tiny")
	}
	if code, body := do(t, base, req{"POST", "/api/label", `{"item":"` + *n.Item + `","present":true}`, ana}); code != 201 {
		t.Fatalf("label: %d %s", code, body)
	}
	bad := layout.Bench{Dir: layout.BenchDir(project, "broken")}.Labels()
	spoil(bad)
	type answer struct {
		Labels []mineRow `json:"labels"`
		Notes  []string  `json:"notes"`
	}
	for _, c := range []struct {
		who, path string
		hdr       map[string]string
		want      string
	}{
		{"ana", "/api/mine", ana, "1 benchmark(s) could not be read, so your labels there are not listed"},
		{"researcher", "/api/mine?labeler=ana", research, want},
	} {
		m := getAs[answer](t, base, c.path, c.hdr)
		t.Logf("%s: %q", c.who, m.Notes)
		if len(m.Labels) != 1 || m.Labels[0].Item != *n.Item {
			t.Errorf("%s: labels %+v, want ana's one", c.who, m.Labels)
		}
		if len(m.Notes) != 1 || !strings.Contains(m.Notes[0], c.want) || strings.Contains(m.Notes[0], "zebratarget") {
			t.Errorf("%s: notes %q, want one saying %q and no target", c.who, m.Notes, c.want)
		}
		if c.who == "researcher" && !strings.Contains(m.Notes[0], bad) {
			t.Errorf("researcher: note %q does not name %s", m.Notes[0], bad)
		}
	}
}

// TestTeamLabelsAtOnceOnTwoServers: two viewers on one project (two
// researchers), each with ana and bo, all four labelling 50 items in
// parallel while asking for their next item and holding it: every
// labels.jsonl stays readable, with each accepted label once and nothing
// else.
func TestTeamLabelsAtOnceOnTwoServers(t *testing.T) {
	project := TeamProject(t)
	type client struct {
		name string
		base string
		hdr  map[string]string
	}
	var clients []client
	for range 2 {
		s, base := StartForTest(t, Options{ProjectDir: project, Reviewers: []string{"ana", "bo"}, Blind: true, Seed: 2})
		for _, who := range []string{"ana", "bo"} {
			clients = append(clients, client{who, base, teamHeaders(base, tokenOf(t, s, who))})
		}
	}
	type sent struct{ who, note string }
	var mu sync.Mutex
	var accepted []sent
	var odd []int
	var wg sync.WaitGroup
	for ci, c := range clients {
		var q struct {
			Items []studyItemView `json:"items"`
		}
		code, body := do(t, c.base, req{"GET", "/api/queue", "", c.hdr})
		if code != 200 || json.Unmarshal([]byte(body), &q) != nil {
			t.Fatalf("%s's queue: %d %.200s", c.name, code, body)
		}
		for k := range 50 {
			it := q.Items[k%len(q.Items)].Item
			note := fmt.Sprintf("client %d label %d %s", ci, k, strings.Repeat("x", 3000))
			wg.Go(func() {
				call(c.base, req{"GET", "/api/next?after=" + it, "", c.hdr})
				call(c.base, req{"POST", "/api/hold", `{"item":"` + it + `"}`, c.hdr})
				code := call(c.base, req{"POST", "/api/label", `{"item":"` + it + `","present":true,"note":"` + note + `"}`, c.hdr})
				if code != 201 && code != 403 && code != 409 {
					mu.Lock()
					odd = append(odd, code)
					mu.Unlock()
				}
				if code == 201 {
					mu.Lock()
					accepted = append(accepted, sent{c.name, note})
					mu.Unlock()
				}
			})
		}
	}
	wg.Wait()
	if len(odd) > 0 {
		t.Errorf("labels answered %v (want 201, or 403 for a row another took, 409 for one another has open)", odd)
	}
	got := map[sent]int{}
	for _, b := range []string{"first", "second"} {
		ls, err := labels.Read(layout.Bench{Dir: layout.BenchDir(project, b)}.Labels(), labels.Known{})
		if err != nil {
			t.Fatalf("%s: %v", b, err)
		}
		for _, l := range ls {
			got[sent{l.Labeler, l.Note}]++
		}
	}
	// A label on a row another took meanwhile is refused (403,
	// TestReviewerLabelsOnlyWhatWasAskedOfThem), as is one on a row
	// another has open on the same server (409,
	// TestAnItemOpenElsewhereIsLabelledByItsHolder); most are not.
	if len(accepted) < 100 {
		t.Errorf("%d of 200 labels accepted", len(accepted))
	}
	for _, a := range accepted {
		if got[a] != 1 {
			t.Errorf("%s's %.20s… is in the files %d times", a.who, a.note, got[a])
		}
		delete(got, a)
	}
	if len(got) != 0 {
		t.Errorf("%d lines no request sent", len(got))
	}
}

// call makes a request from a goroutine other than the test's: its status,
// 0 when it could not be made.
func call(base string, r req) int {
	hr, err := http.NewRequest(r.method, base+r.path, strings.NewReader(r.body))
	if err != nil {
		return 0
	}
	for k, v := range r.hdr {
		hr.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(hr)
	if err != nil {
		return 0
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode
}

// TestReviewerLabelsOnlyWhatWasAskedOfThem: a reviewer holds and labels
// only an item of their queue, one they hold (their form was open when
// another's label took it out of the queue), or one they labelled before.
// Before, any item id they had ever seen took a label: a row the plan
// asked of one person and bo had labelled got a second label from ana,
// and any item of a wider draw (per=1000) could be labelled.
func TestReviewerLabelsOnlyWhatWasAskedOfThem(t *testing.T) {
	project := TeamProject(t)
	s, base := StartForTest(t, Options{ProjectDir: project, Reviewers: []string{"ana", "bo"}, Blind: true, Seed: 4, Overlap: 0, OverlapSet: true})
	ana, bo, research := teamHeaders(base, tokenOf(t, s, "ana")), teamHeaders(base, tokenOf(t, s, "bo")), teamHeaders(base, tokenOf(t, s, ""))
	label := func(hdr map[string]string, item string, want int) {
		t.Helper()
		if code, body := do(t, base, req{"POST", "/api/label", `{"item":"` + item + `","present":true}`, hdr}); code != want {
			t.Errorf("label %s: %d, want %d: %s", item, code, want, body)
		}
	}
	hold := func(hdr map[string]string, item string, want string) {
		t.Helper()
		if code, body := do(t, base, req{"POST", "/api/hold", `{"item":"` + item + `"}`, hdr}); code != http.StatusOK || !strings.Contains(body, want) {
			t.Errorf("hold %s: %d %s, want 200 and %s", item, code, body, want)
		}
	}
	q := reviewQueue{s}
	params := queueParams{kind: "calibration", seed: 4, halfWidth: s.opts.PlanHalfWidth}
	queued := map[string]bool{}
	sq := q.studyQueue("ana", params, q.benchNames())
	for _, it := range sq.first(math.MaxInt) {
		queued[it.Item] = true
	}
	var outside string
	for _, b := range q.benchNames() {
		ix := s.bench(b).index(s)
		for i := range ix.convs {
			if id := q.itemOfConv(ix, i); !queued[id] && outside == "" {
				outside = id
			}
		}
	}
	if outside == "" || len(queued) < 3 {
		t.Fatalf("want items in and out of the queue: %d queued", len(queued))
	}
	var in []string
	for id := range queued {
		in = append(in, id)
	}
	slices.Sort(in)
	taken, open, mine := in[0], in[1], in[2]

	hold(ana, outside, `"gone":true`) // never asked of her: her page moves on
	label(ana, outside, http.StatusForbidden)
	label(bo, taken, http.StatusCreated) // bo labels a row asked of one person
	hold(ana, taken, `"gone":true`)
	label(ana, taken, http.StatusForbidden)
	hold(ana, open, `"held":true`)       // ana's form is open on it…
	label(bo, open, http.StatusConflict) // …so bo's label is refused
	label(ana, open, http.StatusCreated) // …and hers counts
	label(ana, mine, http.StatusCreated)
	label(ana, mine, http.StatusCreated) // a changed mind
	if code, body := do(t, base, req{"POST", "/api/label", `{"item":"` + outside + `","present":true,"labeler":"zed"}`, research}); code != http.StatusCreated {
		t.Errorf("the researcher labels any item: %d %s", code, body)
	}
}
