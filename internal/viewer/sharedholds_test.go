package viewer

import (
	"bytes"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/impactbench/impactbench/internal/fsx"
	"github.com/impactbench/impactbench/internal/layout"
)

// twoServers are two viewers on one project (two researchers each
// starting one on a shared file system, or a restarted server beside a
// still-running one), with the same reviewers and one clock.
type twoServers struct {
	s      [2]*Server
	base   [2]string
	mu     sync.Mutex
	now    time.Time
	review []string
}

func startTwo(t *testing.T, project string, opts Options) *twoServers {
	t.Helper()
	ts := &twoServers{now: time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC), review: opts.Reviewers}
	opts.ProjectDir = project
	opts.Now = ts.clock
	for k := range ts.s {
		ts.s[k], ts.base[k] = StartForTest(t, opts)
	}
	return ts
}

func (ts *twoServers) clock() time.Time { ts.mu.Lock(); defer ts.mu.Unlock(); return ts.now }

func (ts *twoServers) advance(d time.Duration) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	ts.now = ts.now.Add(d)
}

// as is reviewer who's headers on server k.
func (ts *twoServers) as(t *testing.T, k int, who string) map[string]string {
	return teamHeaders(ts.base[k], tokenOf(t, ts.s[k], who))
}

// on is server k's id of the row item names on server from (item ids are
// keyed per server, new at each start).
func (ts *twoServers) on(t *testing.T, k, from int, item string) string {
	t.Helper()
	st, ix, i, ok := reviewQueue{ts.s[from]}.findItem(item)
	if !ok {
		t.Fatalf("no item %s on server %d", item, from)
	}
	st2 := ts.s[k].bench(st.name)
	ix2 := st2.index(ts.s[k])
	i2, ok := ix2.byConvID[ix.convs[i].convID]
	if !ok {
		t.Fatalf("server %d has no row %s", k, ix.convs[i].convID)
	}
	return reviewQueue{ts.s[k]}.itemOfConv(ix2, i2)
}

func (ts *twoServers) inQueue(t *testing.T, k int, hdr map[string]string, item string) bool {
	t.Helper()
	_, body := do(t, ts.base[k], req{"GET", "/api/queue", "", hdr})
	return strings.Contains(body, `"item":"`+item+`"`)
}

func (ts *twoServers) hold(t *testing.T, k int, hdr map[string]string, item string) string {
	t.Helper()
	code, body := do(t, ts.base[k], req{"POST", "/api/hold", `{"item":"` + item + `"}`, hdr})
	if code != 200 {
		t.Fatalf("hold on server %d: %d %s", k, code, body)
	}
	return body
}

// TestTwoServersShareHolds: an open form on one viewer holds its row away
// from a reviewer of another viewer on the same project — out of their
// queue, their hold answers busy, their label 409 — until the form closes
// (the hold lapses) or its holder skips it; then the row is theirs.
// Before, each server kept its holds to itself and handed the row to its
// own reviewer too, so a row the plan asked of one person got two labels.
func TestTwoServersShareHolds(t *testing.T) {
	ts := startTwo(t, TeamProject(t), Options{Reviewers: []string{"ana", "bo"}, Blind: true, Seed: 3, Overlap: 0, OverlapSet: true})
	ana, bo := ts.as(t, 0, "ana"), ts.as(t, 1, "bo")
	_, body := do(t, ts.base[0], req{"GET", "/api/next", "", ana})
	first := decode[nextAnswer](t, body)
	if first.Item == nil {
		t.Fatalf("fixture: ana has nothing to review: %s", body)
	}
	item := *first.Item
	there := ts.on(t, 1, 0, item)
	if !ts.inQueue(t, 1, bo, there) {
		t.Fatal("fixture: the row is not in bo's queue on the other server")
	}
	if body := ts.hold(t, 0, ana, item); !strings.Contains(body, `"held":true`) {
		t.Fatalf("ana's hold: %s", body)
	}
	if ts.inQueue(t, 1, bo, there) {
		t.Error("the other server still hands bo the row ana has open")
	}
	if body := ts.hold(t, 1, bo, there); !strings.Contains(body, `"busy":true`) {
		t.Errorf("bo's hold on the other server: %s, want busy", body)
	}
	if code, body := do(t, ts.base[1], req{"POST", "/api/label", `{"item":"` + there + `","present":true}`, bo}); code != 409 {
		t.Errorf("bo's label on the other server: %d %s, want 409", code, body)
	}
	// Renewed, the hold stays; once the form closes it lapses.
	ts.advance(holdRenew)
	ts.hold(t, 0, ana, item)
	ts.advance(holdFor - time.Second)
	if ts.inQueue(t, 1, bo, there) {
		t.Error("a renewed hold lapsed on the other server")
	}
	ts.advance(2 * time.Second)
	if !ts.inQueue(t, 1, bo, there) {
		t.Error("a lapsed hold still keeps the row from bo on the other server")
	}
	if body := ts.hold(t, 1, bo, there); !strings.Contains(body, `"held":true`) {
		t.Errorf("bo's hold after ana's lapsed: %s", body)
	}
	// Now bo holds it: ana's page, renewing late, moves on.
	if body := ts.hold(t, 0, ana, item); !strings.Contains(body, `"busy":true`) {
		t.Errorf("ana's late renewal: %s, want busy", body)
	}
	if code, body := do(t, ts.base[0], req{"POST", "/api/label", `{"item":"` + item + `","present":false}`, ana}); code != 409 {
		t.Errorf("ana's label of the row bo holds: %d %s, want 409", code, body)
	}
	if code, body := do(t, ts.base[1], req{"POST", "/api/label", `{"item":"` + there + `","present":true}`, bo}); code != 201 {
		t.Fatalf("bo's label: %d %s", code, body)
	}
	// A label lets go at once: ana's next row, held and skipped, is bo's
	// at once on the other server.
	_, body = do(t, ts.base[0], req{"GET", "/api/next", "", ana})
	n := decode[nextAnswer](t, body)
	if n.Item == nil {
		t.Fatalf("ana has nothing more: %s", body)
	}
	second, secondThere := *n.Item, ts.on(t, 1, 0, *n.Item)
	ts.hold(t, 0, ana, second)
	if ts.inQueue(t, 1, bo, secondThere) {
		t.Error("the other server hands bo the second row ana has open")
	}
	do(t, ts.base[0], req{"POST", "/api/skip", `{"item":"` + second + `"}`, ana})
	if !ts.inQueue(t, 1, bo, secondThere) {
		t.Error("a skip on one server kept the row held on the other")
	}
	if body := ts.hold(t, 1, bo, secondThere); !strings.Contains(body, `"held":true`) {
		t.Errorf("bo's hold after ana skipped: %s", body)
	}
}

// logBuffer collects a server's log.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *logBuffer) String() string { l.mu.Lock(); defer l.mu.Unlock(); return l.buf.String() }

func (l *logBuffer) logger() *slog.Logger { return slog.New(slog.NewTextHandler(l, nil)) }

// holdsPath is the shared holds file of the team project's benchmark
// bench.
func holdsPath(project, bench string) string { return benchFiles(project, bench).Holds() }

func benchFiles(project, bench string) layout.Bench {
	return layout.ForProject(project, layout.BenchDir(project, bench))
}

// badHolds checks a viewer over holds files made bad by spoil (every
// benchmark's): ana's form holds her row and her label is taken, no
// request fails for the file (wrap runs the requests: hostile.NotBlocked
// for a named pipe), and the server says so in its log, naming the file
// spoil returned and want. With replaced, the file is a regular one the
// next take replaces, so the other server sees ana's hold again;
// otherwise it is left as it was (check).
func badHolds(t *testing.T, spoil func(b layout.Bench) string, want string, replaced bool, wrap func(spoilt string, run func()), check func(spoilt string)) {
	t.Helper()
	project := TeamProject(t)
	var logs logBuffer
	ts := startTwo(t, project, Options{Reviewers: []string{"ana", "bo"}, Blind: true, Seed: 3, Overlap: 0, OverlapSet: true, Logger: logs.logger()})
	spoilt := map[string]string{}
	for _, b := range []string{"first", "second"} {
		must(t, os.MkdirAll(benchFiles(project, b).Cache, 0o755))
		spoilt[b] = spoil(benchFiles(project, b))
	}
	ana, bo := ts.as(t, 0, "ana"), ts.as(t, 1, "bo")
	_, body := do(t, ts.base[0], req{"GET", "/api/next", "", ana})
	n := decode[nextAnswer](t, body)
	if n.Item == nil {
		t.Fatalf("ana has nothing to review: %s", body)
	}
	item, path := *n.Item, spoilt[n.Bench]
	there := ts.on(t, 1, 0, item)
	if wrap == nil {
		wrap = func(_ string, run func()) { run() }
	}
	wrap(path, func() {
		if body := ts.hold(t, 0, ana, item); !strings.Contains(body, `"held":true`) {
			t.Errorf("ana's hold over a bad holds file: %s", body)
		}
		if replaced && ts.inQueue(t, 1, bo, there) {
			t.Error("the bad holds file was not replaced: the other server hands bo the row ana has open")
		}
		if code, body := do(t, ts.base[0], req{"POST", "/api/label", `{"item":"` + item + `","present":true}`, ana}); code != 201 {
			t.Errorf("ana's label over a bad holds file: %d %s", code, body)
		}
	})
	if log := logs.String(); !strings.Contains(log, path) || !strings.Contains(log, want) {
		t.Errorf("the log does not name the bad holds file (%s) and %q:\n%s", path, want, log)
	}
	if check != nil {
		check(path)
	}
}

func writeBad(t *testing.T, data []byte) func(layout.Bench) string {
	return func(b layout.Bench) string {
		must(t, os.WriteFile(b.Holds(), data, 0o644))
		return b.Holds()
	}
}

// TestABadHoldsFileIsCountedAsNone: a holds file that is garbled, too
// large, or says something no server wrote is counted as no holds (logged)
// and replaced at the next take; labels go on all the while.
func TestABadHoldsFileIsCountedAsNone(t *testing.T) {
	big := append([]byte(`{"holds":[]}`), bytes.Repeat([]byte(" "), maxHoldsBytes)...)
	for _, c := range []struct {
		name string
		data []byte
		want string
	}{
		{"garbled", []byte(`{"holds":[{"row":"x","who":`), "unexpected end of JSON input"},
		{"binary", []byte("\x00\xff\xfe garbage"), "invalid character"},
		{"empty", nil, "unexpected end of JSON input"},
		{"too large", big, "larger than the"},
		{"no row", []byte(`{"holds":[{"who":"cy","until":"2026-01-01T12:00:30Z"}]}`), errHoldsEntry.Error()},
		{"array", []byte(`[1,2,3]`), "cannot unmarshal"},
	} {
		t.Run(c.name, func(t *testing.T) {
			badHolds(t, writeBad(t, c.data), c.want, true, nil, func(path string) {
				if _, err := readHolds(path); err != nil {
					t.Errorf("the bad holds file was not replaced with a good one: %v", err)
				}
			})
		})
	}
}

// TestAHoldsDirectoryIsLeftAlone: what is not a regular file at the holds
// file's place — a directory, a symbolic link (to a file of someone
// else's) — is not ours to replace or write through: the holds are each
// server's own.
func TestAHoldsDirectoryIsLeftAlone(t *testing.T) {
	t.Run("directory", func(t *testing.T) {
		badHolds(t, func(b layout.Bench) string { must(t, os.Mkdir(b.Holds(), 0o755)); return b.Holds() }, "a directory", false, nil, func(path string) {
			if st, err := os.Stat(path); err != nil || !st.IsDir() {
				t.Errorf("the directory at the holds file's place was replaced: %v", err)
			}
		})
	})
	t.Run("symbolic link", func(t *testing.T) {
		other := filepath.Join(t.TempDir(), "theirs")
		must(t, os.WriteFile(other, []byte(`{"holds": []}`), 0o644))
		badHolds(t, func(b layout.Bench) string {
			if err := os.Symlink(other, b.Holds()); err != nil {
				t.Skipf("no symbolic links here: %v", err)
			}
			return b.Holds()
		}, "symbolic link", false, nil, func(path string) {
			if st, err := os.Lstat(path); err != nil || st.Mode()&os.ModeSymlink == 0 {
				t.Errorf("the symbolic link at the holds file's place was replaced: %v", err)
			}
			if b, err := os.ReadFile(other); err != nil || string(b) != `{"holds": []}` {
				t.Errorf("the file the link points at was written: %q %v", b, err)
			}
		})
	})
}

// TestAHoldNoServerCouldTakeIsIgnored: an entry lasting longer than any
// hold is taken for (a hand-made or garbled one) does not keep its row
// from everyone for ever, and lapsed entries are dropped when the file is
// written.
func TestAHoldNoServerCouldTakeIsIgnored(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	m := map[string]sharedHold{
		"forever": {Row: "forever", Who: "cy", Until: now.Add(1000 * time.Hour)},
		"lapsed":  {Row: "lapsed", Who: "cy", Until: now},
		"open":    {Row: "open", Who: "cy", Until: now.Add(holdFor)},
	}
	if !live(m, now) || len(m) != 1 || m["open"].Who != "cy" {
		t.Errorf("live holds: %v, want only the open one", m)
	}
}

// TestHoldsFileStaysBounded: however many holds, the file written stays
// within what a reader reads, keeping the hold just taken.
func TestHoldsFileStaysBounded(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	m := map[string]sharedHold{}
	for k := range 5000 {
		row := fmt.Sprintf("conv-%05d-%s", k, strings.Repeat("x", 40))
		m[row] = sharedHold{Row: row, Who: "reviewer", Until: now.Add(time.Duration(k) * time.Millisecond)}
	}
	data, err := encodeHolds(m, "conv-00000-"+strings.Repeat("x", 40))
	must(t, err)
	if len(data) > maxHoldsBytes {
		t.Errorf("%d bytes, over %d", len(data), maxHoldsBytes)
	}
	path := filepath.Join(t.TempDir(), "holds")
	must(t, os.WriteFile(path, data, 0o644))
	back, err := readHolds(path)
	must(t, err)
	if _, ok := back["conv-00000-"+strings.Repeat("x", 40)]; !ok || len(back) < 100 {
		t.Errorf("read back %d holds, without the one just taken %v", len(back), ok)
	}
}

// TestBrowsingWritesNoHoldsFile: the queue, the next item, an item, a
// skip and a label without a form open write no holds file (nor its
// lock): only an open form does.
func TestBrowsingWritesNoHoldsFile(t *testing.T) {
	project := TeamProject(t)
	s, base := StartForTest(t, Options{ProjectDir: project, Reviewers: []string{"ana"}, Seed: 3})
	ana := teamHeaders(base, tokenOf(t, s, "ana"))
	do(t, base, req{"GET", "/api/queue", "", ana})
	_, body := do(t, base, req{"GET", "/api/next", "", ana})
	n := decode[nextAnswer](t, body)
	if n.Item == nil {
		t.Fatalf("nothing to review: %s", body)
	}
	do(t, base, req{"GET", "/api/item?id=" + *n.Item, "", ana})
	do(t, base, req{"POST", "/api/skip", `{"item":"` + *n.Item + `"}`, ana})
	do(t, base, req{"POST", "/api/label", `{"item":"` + *n.Item + `","present":true}`, ana})
	if _, err := os.Stat(filepath.Join(project, layout.CacheDirName)); !os.IsNotExist(err) {
		t.Errorf("browsing and labelling without a form open created %s: %v", layout.CacheDirName, err)
	}
	do(t, base, req{"POST", "/api/hold", `{"item":"` + *n.Item + `"}`, ana}) // labelled: holds nothing
	if _, err := os.Stat(holdsPath(project, n.Bench)); !os.IsNotExist(err) {
		t.Errorf("a hold after the label wrote the holds file: %v", err)
	}
}

// TestAHoldsLockKeptElsewhereIsNotWaitedFor: a holds lock another process
// keeps (a server stuck in its write) is waited for holdsLockWait, no
// longer: the hold is then this server's own (logged) and the label taken.
func TestAHoldsLockKeptElsewhereIsNotWaitedFor(t *testing.T) {
	badHolds(t, func(b layout.Bench) string {
		f, err := fsx.OpenLockFile(b.HoldsLock())
		must(t, err)
		t.Cleanup(func() { f.Close() })
		must(t, fsx.Lock(f))
		return b.HoldsLock()
	}, fsx.ErrLocked.Error(), false, func(_ string, run func()) {
		t0 := time.Now()
		run()
		if d := time.Since(t0); d > holdsLockWait+3*time.Second {
			t.Errorf("a hold and a label took %v with the holds lock kept elsewhere", d)
		}
	}, nil)
}

// TestTwoServersHandARowToOneOfManyAtOnce: reviewers of two servers
// opening the same row's form at the same moment — one of them holds it,
// the others are told someone else has it (the take reads and writes the
// file under its lock).
func TestTwoServersHandARowToOneOfManyAtOnce(t *testing.T) {
	names := []string{"ana", "bo", "cy", "di", "ed", "flo"}
	ts := startTwo(t, TeamProject(t), Options{Reviewers: names, Seed: 3, Overlap: 0, OverlapSet: true})
	_, body := do(t, ts.base[0], req{"GET", "/api/next", "", ts.as(t, 0, "ana")})
	n := decode[nextAnswer](t, body)
	if n.Item == nil {
		t.Fatalf("nothing to review: %s", body)
	}
	answers := make([]string, len(names))
	var wg sync.WaitGroup
	for k, name := range names {
		srv := k % 2
		hdr, item := ts.as(t, srv, name), ts.on(t, srv, 0, *n.Item)
		wg.Go(func() {
			_, answers[k] = do(t, ts.base[srv], req{"POST", "/api/hold", `{"item":"` + item + `"}`, hdr})
		})
	}
	wg.Wait()
	held := 0
	for k, a := range answers {
		switch {
		case strings.Contains(a, `"held":true`):
			held++
		case !strings.Contains(a, `"busy":true`):
			t.Errorf("%s's hold: %s", names[k], a)
		}
	}
	if held != 1 {
		t.Errorf("%d reviewers hold the row at once, want 1: %q", held, answers)
	}
}
