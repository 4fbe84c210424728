package viewer

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestStudyQueueMatchesReference: the study's queue read merged from the
// benchmarks' kept queues (queueCache, queueResult.each and total) answers
// what drawing, filtering and sorting every item at each request answered
// (refStudyQueue, refNext: the code as it was), on randomised projects
// and labels, for reviewers (their promised queues) and the researcher
// (the plan's queue under a labeler's name or none, triage, per=), with
// rows held here and on another view server, skipped rows, and a labels
// file that cannot be read for a while.
func TestStudyQueueMatchesReference(t *testing.T) {
	for seed := range uint64(6) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) { checkQueueAgainstRef(t, seed) })
	}
}

func checkQueueAgainstRef(t *testing.T, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, 77))
	project := t.TempDir()
	nb := 2 + rng.IntN(3)
	for k := range nb {
		sp := SynthSpec{Name: fmt.Sprintf("b%d", k), Metrics: 1 + rng.IntN(3), ScensPerMetric: 2 + rng.IntN(6),
			Targets: []string{"t1", "t2", "t3"}[:1+rng.IntN(3)], Samples: 1 + rng.IntN(4), Msgs: 2, MsgLen: 8, Judges: 1 + rng.IntN(2)}
		WriteSynth(t, project, sp)
	}
	clock := time.Date(2026, 11, 30, 4, 0, 0, 0, time.UTC)
	s, _ := StartForTest(t, Options{ProjectDir: project, Reviewers: []string{"ana", "bo"}, Seed: seed + 1,
		Overlap: 0.3, OverlapSet: true, Now: func() time.Time { return clock }})
	q := reviewQueue{s}
	names := q.benchNames()
	var all []string // every item of the study
	for _, b := range names {
		ix := s.bench(b).index(s)
		for i := range ix.convs {
			all = append(all, q.itemOfConv(ix, i))
		}
	}
	people := []string{"ana", "bo", "cy"}
	type ask struct {
		who string
		p   queueParams
	}
	base := queueParams{kind: "calibration", seed: s.opts.Seed, overlap: s.opts.Overlap, halfWidth: s.opts.PlanHalfWidth}
	reviewer := base
	reviewer.promised = true
	asks := []ask{{"ana", reviewer}, {"bo", reviewer}, {"", base}, {"cy", base}, {"ana", base}}
	triage := base
	triage.kind = "triage"
	perTwo := base
	perTwo.per = 2
	asks = append(asks, ask{"cy", triage}, ask{"bo", perTwo})
	for round := range 12 {
		// Labels, holds, skips and an unreadable labels file, at random.
		for range rng.IntN(8) {
			st, ix, i, _ := q.findItem(all[rng.IntN(len(all))])
			c := ix.convs[i]
			must(t, st.labels.Append(Label{ConvID: c.convID, MetricID: c.metric, Present: rng.IntN(2) == 0,
				Labeler: people[rng.IntN(len(people))], At: clock}))
			clock = clock.Add(time.Second)
		}
		for range rng.IntN(3) {
			s.places.take(people[rng.IntN(2)], all[rng.IntN(len(all))], clock)
		}
		if rng.IntN(3) == 0 {
			st, ix, i, _ := q.findItem(all[rng.IntN(len(all))])
			s.shared.take(st, ix.convs[i].convID, "remote", clock)
		}
		for range rng.IntN(3) {
			s.places.skip(people[rng.IntN(3)], all[rng.IntN(len(all))])
		}
		if rng.IntN(5) == 0 {
			s.places.unskip(people[rng.IntN(3)])
		}
		if rng.IntN(6) == 0 {
			clock = clock.Add(holdFor) // the holds lapse
		}
		bad, badWas := "", []byte(nil)
		if rng.IntN(5) == 0 {
			bad = s.bench(names[rng.IntN(len(names))]).labels.(*FileLabels).Path
			var err error
			if badWas, err = os.ReadFile(bad); err != nil && !os.IsNotExist(err) {
				t.Fatal(err)
			}
			must(t, os.WriteFile(bad, append(slices.Clone(badWas), "{not json\n"...), 0o644))
		}
		for k, a := range asks {
			for _, keep := range []bool{false, true} {
				p := a.p
				p.keepHeld = keep
				benches := names
				if (round+k)%3 == 0 {
					benches = names[:1]
				}
				// The reference first or last: it may refill a promise.
				var ref refQueue
				var got queueResult
				if (round+k)%2 == 0 {
					ref = q.refStudyQueue(a.who, p, benches)
					got = q.studyQueue(a.who, p, benches)
				} else {
					got = q.studyQueue(a.who, p, benches)
					ref = q.refStudyQueue(a.who, p, benches)
				}
				where := fmt.Sprintf("round %d, %q %+v", round, a.who, p)
				if items := got.first(math.MaxInt); !reflect.DeepEqual(items, ref.items) {
					t.Fatalf("%s: items\n got %d %v\nwant %d %v", where, len(items), items, len(ref.items), ref.items)
				}
				if n := got.total(); n != len(ref.items) {
					t.Fatalf("%s: total %d, want %d", where, n, len(ref.items))
				}
				if n := min(len(ref.items), 3); !reflect.DeepEqual(got.first(n), ref.items[:n]) {
					t.Fatalf("%s: first %d differ", where, n)
				}
				got.parts, ref.queueResult.parts = nil, nil
				if !reflect.DeepEqual(got, ref.queueResult) {
					t.Fatalf("%s: queue\n got %+v\nwant %+v", where, got, ref.queueResult)
				}
				if a.who == "" || keep {
					continue
				}
				afters := []string{"", all[rng.IntN(len(all))], "r" + "AAAAAAAAAAAAAAAA", s.places.view(a.who).Current}
				if len(ref.items) > 0 {
					afters = append(afters, ref.items[0].Item, ref.items[len(ref.items)-1].Item, ref.items[rng.IntN(len(ref.items))].Item)
				}
				for _, after := range afters {
					want := q.refNext(a.who, p, benches, after)
					if got := q.next(a.who, p, benches, after); !reflect.DeepEqual(got, want) {
						t.Fatalf("%s: next after %q: got %+v (%v), want %+v (%v)", where, after, got, deref(got.Item), want, deref(want.Item))
					}
				}
			}
		}
		// Her place: the next item, opened (so next from her place stays).
		for _, who := range people[:2] {
			if n := q.next(who, reviewer, names, ""); n.Item != nil && rng.IntN(2) == 0 {
				s.places.open(who, *n.Item)
			}
		}
		if bad != "" {
			must(t, os.WriteFile(bad, badWas, 0o644))
		}
	}
}

func deref(p *string) string {
	if p == nil {
		return "<nil>"
	}
	return *p
}

// TestStudyNextCostsWhatItAnswers: the next item and the first page of a
// study's queue cost what they answer, not the study's size: with nothing
// changed since the last request, GET /api/next and /api/queue allocate
// per benchmark (its labels and holds files looked at), not per item nor
// per label. Drawn at every request, a queue of 2,880 items took over
// 3,000 allocations, and a labels file of 900 lines read at every
// request as many more.
func TestStudyNextCostsWhatItAnswers(t *testing.T) {
	project := t.TempDir()
	for k := range 3 {
		WriteSynth(t, project, SynthSpec{Name: fmt.Sprintf("b%d", k), Metrics: 2, ScensPerMetric: 40, Targets: []string{"t1", "t2"}, Samples: 6, Msgs: 2, MsgLen: 8, Judges: 1})
	}
	s, _ := StartForTest(t, Options{ProjectDir: project, Reviewers: []string{"ana", "bo"}, Seed: 3})
	q := reviewQueue{s}
	p := queueParams{kind: "calibration", seed: 3, overlap: s.opts.Overlap, halfWidth: s.opts.PlanHalfWidth, promised: true}
	names := q.benchNames()
	// Late in a study: bo labelled 900 rows of a benchmark (written
	// here as the labels file's lines, without a thousand fsyncs).
	st := s.bench(names[0])
	ix := st.index(s)
	must(t, st.labels.Append(Label{ConvID: ix.convs[0].convID, MetricID: ix.convs[0].metric, Present: true, Labeler: "bo", At: time.Now()}))
	path := st.labels.(*FileLabels).Path
	line, err := os.ReadFile(path)
	must(t, err)
	var more []byte
	for i := 1; i < 900; i++ {
		l := strings.Replace(string(line), ix.convs[0].convID, ix.convs[i].convID, 1)
		more = append(more, strings.Replace(l, `"`+ix.convs[0].metric+`"`, `"`+ix.convs[i].metric+`"`, 1)...)
	}
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	must(t, err)
	_, err = f.Write(more)
	must(t, err)
	must(t, f.Close())
	if ls, err := st.labels.List(); err != nil || len(ls) != 900 {
		t.Fatalf("the labels file: %d labels, %v", len(ls), err)
	}
	first := q.next("ana", p, names, "")
	if first.Left < 1000 {
		t.Fatalf("ana's queue has %d items: the test wants a large one", first.Left)
	}
	for _, c := range []struct {
		name string
		f    func()
	}{
		{"next", func() { q.next("ana", p, names, *first.Item) }},
		{"first page", func() { sq := q.studyQueue("ana", p, names); sq.first(maxQueue) }},
	} {
		// Reading the labels and holds files, and the merge, are a few
		// dozen allocations per benchmark.
		limit := 100.0 * float64(len(names))
		if n := testing.AllocsPerRun(5, c.f); n > limit {
			t.Errorf("%s: %.0f allocations for a queue of %d items, want at most %.0f", c.name, n, first.Left, limit)
		}
	}
}

// TestQueueCacheIsBounded: the queues kept hold at most maxCachedItems
// items, whoever the researcher asks for.
func TestQueueCacheIsBounded(t *testing.T) {
	var c queueCache
	big := &benchQueue{items: make([]queueItem, maxCachedItems/3+1)}
	for k := range 10 {
		c.put(queueKey{who: fmt.Sprint("p", k), bench: "b"}, big)
		if c.items > maxCachedItems || c.items != len(c.m)*len(big.items) {
			t.Fatalf("after %d queues: %d items kept in %d queues", k+1, c.items, len(c.m))
		}
	}
	c.put(queueKey{who: "p9", bench: "b"}, big) // replaced, not added
	if c.items != len(c.m)*len(big.items) {
		t.Fatalf("%d items kept in %d queues", c.items, len(c.m))
	}
}

// TestLabelsOfSeesEveryChange: the labels kept as last read are read again
// when the file changes — a line appended by another process, the file
// replaced by another (a rename over it), removed, or made unreadable.
func TestLabelsOfSeesEveryChange(t *testing.T) {
	project := t.TempDir()
	WriteSynth(t, project, SynthSpec{Name: "b", Metrics: 1, ScensPerMetric: 3, Targets: []string{"t1"}, Samples: 2, Msgs: 2, MsgLen: 8, Judges: 1})
	s, _ := StartForTest(t, Options{ProjectDir: project, Reviewers: []string{"ana", "bo"}, Seed: 3})
	q := reviewQueue{s}
	st := s.bench("b")
	ix := st.index(s)
	path := st.labels.(*FileLabels).Path
	must(t, st.labels.Append(Label{ConvID: ix.convs[0].convID, MetricID: ix.convs[0].metric, Present: true, Labeler: "ana", At: time.Now()}))
	first, err := os.ReadFile(path)
	must(t, err)
	lineFor := func(i int, who string) string {
		l := strings.Replace(string(first), ix.convs[0].convID, ix.convs[i].convID, 1)
		return strings.Replace(l, `"ana"`, `"`+who+`"`, 1)
	}
	for _, c := range []struct {
		name   string
		change func()
		want   int // labels; -1: an error
	}{
		{"as written", func() {}, 1},
		{"a line appended by another process", func() {
			f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
			must(t, err)
			_, err = f.WriteString(lineFor(1, "bo"))
			must(t, err)
			must(t, f.Close())
		}, 2},
		{"replaced by a file of the same size", func() {
			tmp := path + ".new"
			must(t, os.WriteFile(tmp, []byte(lineFor(2, "ana")+lineFor(3, "bo")), 0o644))
			must(t, os.Rename(tmp, path))
		}, 2},
		{"a bad line", func() {
			f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
			must(t, err)
			_, err = f.WriteString("{not json\n")
			must(t, err)
			must(t, f.Close())
		}, -1},
		{"removed", func() { must(t, os.Remove(path)) }, 0},
	} {
		q.labelsOf(st) // kept as it was
		c.change()
		ls, err := q.labelsOf(st)
		want, werr := st.labels.List()
		switch {
		case c.want < 0 && err == nil:
			t.Errorf("%s: no error, want %v", c.name, werr)
		case c.want >= 0 && (err != nil || len(ls) != c.want || !sameLabels(ls, want)):
			t.Errorf("%s: %d labels (%v), want %d: %v", c.name, len(ls), err, c.want, want)
		}
	}
}
