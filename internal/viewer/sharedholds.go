package viewer

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/impactbench/impactbench/internal/fsx"
	"github.com/impactbench/impactbench/internal/layout"
)

// Holds shared by every view server on the project. Two viewers on one
// project (two researchers each starting one on a shared file system, or a
// restarted server beside one still running) write labels side by side
// under labels.jsonl's lock, so each must also see the forms open on the
// other: the places' holds are one process's memory, so each benchmark
// keeps them in a small file too, .cache/<bench>/holds.json (layout's
// Bench.Holds), replaced whole under its lock (Bench.HoldsLock). An entry
// is a row — the conversation id, stable across servers, where item ids
// are keyed per server and new at each start — the holder's name (the
// same on every server: --reviewer names) and when the hold lapses. The
// file is the researcher's, under .cache like the call store: a reviewer
// never sees it, and no answer says more than before (a row held elsewhere
// answers as one held on this server).
//
// The file is written only when a form is open (a take) or lets go of its
// row; browsing the queue or an item reads it and writes nothing. A file
// that cannot be read — garbled, over maxHoldsBytes, a named pipe, a
// symbolic link, a directory — is logged once and counts as empty: a
// regular one is replaced at the next take, anything else is left alone
// (holds are then this server's own, as before). A lock not had within
// holdsLockWait does the same for that request. Never a wait on a pipe,
// never a crash, never a label refused for it.

const (
	// maxHoldsBytes bounds the holds file: an entry is about 150 bytes and
	// there is one per open form.
	maxHoldsBytes = 256 << 10
	// holdsLockWait is how long a take waits for another server's write.
	holdsLockWait = 2 * time.Second
	// maxHoldWarnings bounds the distinct warnings remembered (each is
	// logged once).
	maxHoldWarnings = 64
)

// sharedHold is one entry of the holds file.
type sharedHold struct {
	Row   string    `json:"row"` // the conversation id
	Who   string    `json:"who"`
	Until time.Time `json:"until"`
}

type holdsDoc struct {
	Holds []sharedHold `json:"holds"`
}

// errHoldsEntry is an entry without its row or lapse time.
var errHoldsEntry = errors.New("an entry without its row or until")

// readHolds reads a holds file (missing: none), at most maxHoldsBytes+1
// bytes of it, without following a link or waiting on a pipe: by row, the
// latest hold of each.
func readHolds(path string) (map[string]sharedHold, error) {
	b, err := fsx.ReadFileNoFollow(path, maxHoldsBytes)
	if errors.Is(err, fs.ErrNotExist) {
		return map[string]sharedHold{}, nil
	}
	if err != nil {
		return nil, err
	}
	var doc holdsDoc
	if err := json.Unmarshal(b, &doc); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	m := make(map[string]sharedHold, len(doc.Holds))
	for _, h := range doc.Holds {
		if h.Row == "" || h.Until.IsZero() {
			return nil, fmt.Errorf("%s: %w", path, errHoldsEntry)
		}
		if prev, ok := m[h.Row]; !ok || h.Until.After(prev.Until) {
			m[h.Row] = h
		}
	}
	return m, nil
}

// live drops the holds of m that have lapsed at now, and those that would
// last longer than any hold is taken for (a garbled or hand-made entry
// must not keep a row from everyone for ever); whether it dropped any.
func live(m map[string]sharedHold, now time.Time) bool {
	dropped := false
	for row, h := range m {
		if !now.Before(h.Until) || h.Until.After(now.Add(holdFor)) {
			delete(m, row)
			dropped = true
		}
	}
	return dropped
}

// encodeHolds is m as the file holds it ({"holds":[…]}, an entry a
// line): past maxHoldsBytes, the holds lapsing first are left out (keep,
// the one just taken, stays).
func encodeHolds(m map[string]sharedHold, keep string) ([]byte, error) {
	hs := make([]sharedHold, 0, len(m))
	for _, h := range m {
		hs = append(hs, h)
	}
	slices.SortFunc(hs, func(a, b sharedHold) int {
		if (a.Row == keep) != (b.Row == keep) {
			if a.Row == keep {
				return -1
			}
			return 1
		}
		if c := b.Until.Compare(a.Until); c != 0 {
			return c
		}
		return strings.Compare(a.Row, b.Row)
	})
	const head, tail = "{\"holds\": [\n", "\n]}\n"
	out := []byte(head)
	for k, h := range hs {
		line, err := json.Marshal(h)
		if err != nil {
			return nil, err
		}
		if k > 0 && len(out)+2+len(line)+len(tail) > maxHoldsBytes {
			break
		}
		if k > 0 {
			out = append(out, ",\n"...)
		}
		out = append(out, line...)
	}
	return append(out, tail...), nil
}

// sharedHolds is the Server's side of the holds files: the project they
// are in, and the warnings already logged.
type sharedHolds struct {
	project string
	log     *slog.Logger
	mu      sync.Mutex
	warned  map[string]bool
}

// warn logs msg once (per distinct message).
func (sh *sharedHolds) warn(msg string) {
	sh.mu.Lock()
	if sh.warned == nil {
		sh.warned = map[string]bool{}
	}
	seen := sh.warned[msg]
	if !seen && len(sh.warned) < maxHoldWarnings {
		sh.warned[msg] = true
	}
	sh.mu.Unlock()
	if !seen {
		sh.log.Warn("view: "+msg, "see", "docs/report.md (holds shared by every view server)")
	}
}

// files is the layout of st (its holds file and their lock).
func (sh *sharedHolds) files(st *benchState) layout.Bench {
	return layout.ForProject(sh.project, st.dir)
}

// of is st's live shared holds at now (none when the file cannot be
// read; logged).
func (sh *sharedHolds) of(st *benchState, now time.Time) map[string]sharedHold {
	m, err := readHolds(sh.files(st).Holds())
	if err != nil {
		sh.warn(fmt.Sprintf("%v: holds shared with other view servers are ignored", err))
		return nil
	}
	live(m, now)
	return m
}

// update applies change to st's holds under their lock and writes them
// back when change says it changed them (or lapsed holds were dropped).
// ok is false when the file was not used: unreadable and not a regular
// file, its lock not had, or the write failed (each logged).
func (sh *sharedHolds) update(st *benchState, now time.Time, keep string, change func(m map[string]sharedHold) bool) (ok bool) {
	files := sh.files(st)
	path := files.Holds()
	if err := fsx.MkdirAll(filepath.Dir(path), fsx.Shared); err != nil {
		sh.warn(fmt.Sprintf("%v: holds are this server's own", err))
		return false
	}
	lf, err := fsx.OpenLockFile(files.HoldsLock())
	if err != nil {
		sh.warn(fmt.Sprintf("%v: holds are this server's own", err))
		return false
	}
	defer lf.Close()
	if err := lockWithin(lf, holdsLockWait); err != nil {
		sh.warn(fmt.Sprintf("lock %s: %v: holds are this server's own while it stays locked", files.HoldsLock(), err))
		return false
	}
	defer fsx.Unlock(lf)
	m, err := readHolds(path)
	var nr *fsx.NotRegularError
	switch {
	case errors.As(err, &nr):
		sh.warn(fmt.Sprintf("%v: holds are this server's own (the file is left alone)", err))
		return false
	case err != nil:
		sh.warn(fmt.Sprintf("%v: counted as no holds, and replaced", err))
		m = map[string]sharedHold{}
	}
	dropped := live(m, now)
	if !change(m) && !dropped && err == nil {
		return true
	}
	data, eerr := encodeHolds(m, keep)
	if eerr == nil {
		eerr = fsx.WriteFileUnsynced(path, data, fsx.Shared)
	}
	if eerr != nil {
		sh.warn(fmt.Sprintf("write %s: %v: holds are this server's own", path, eerr))
		return false
	}
	return true
}

// lockWithin takes f's lock, waiting at most wait for another holder.
func lockWithin(f *os.File, wait time.Duration) error {
	deadline := time.Now().Add(wait)
	for {
		err := fsx.TryLock(f)
		if !errors.Is(err, fsx.ErrLocked) || time.Now().After(deadline) {
			return err
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// take holds row of st for who in the shared file, letting go of
// who's other holds there: false, and the holder, when someone else's
// live hold has it. A file not used (logged) leaves the take to this
// server's own holds.
func (sh *sharedHolds) take(st *benchState, row, who string, now time.Time) (bool, string) {
	busy, holder := false, ""
	sh.update(st, now, row, func(m map[string]sharedHold) bool {
		if h, ok := m[row]; ok && h.Who != who {
			busy, holder = true, h.Who
			return false
		}
		for r, h := range m {
			if h.Who == who {
				delete(m, r)
			}
		}
		m[row] = sharedHold{Row: row, Who: who, Until: now.Add(holdFor)}
		return true
	})
	return !busy, holder
}

// heldElsewhere reports whether someone other than who holds row in m (a
// benchmark's live shared holds, sharedHolds.of).
func heldElsewhere(m map[string]sharedHold, row, who string) bool {
	h, ok := m[row]
	return ok && h.Who != who
}

// take is places.take over every view server on the project: this
// server's holds, then the shared file's (the row is the conversation i
// of st). Holds let go are let go in the file too.
func (s reviewQueue) take(who string, st *benchState, ix *benchIndex, i int, item string) (bool, string) {
	now := s.now()
	held, holder, let := s.places.take(who, item, now)
	for _, it := range let {
		if lst, lix, li, ok := s.findItem(it); ok && lst != st {
			s.shared.release(lst, lix.convs[li].convID, who, now) // st's are let go by the take below
		}
	}
	if !held {
		return false, holder
	}
	if ok, other := s.shared.take(st, ix.convs[i].convID, who, now); !ok {
		s.places.release(who, item)
		return false, other
	}
	return true, ""
}

// heldByOther is places.heldByOther over every view server on the project.
func (s reviewQueue) heldByOther(who string, st *benchState, ix *benchIndex, i int, item string, now time.Time) bool {
	return s.places.heldByOther(item, who, now) || heldElsewhere(s.shared.of(st, now), ix.convs[i].convID, who)
}

// holding is places.holding over every view server on the project.
func (s reviewQueue) holding(who string, st *benchState, ix *benchIndex, i int, item string, now time.Time) bool {
	if s.places.holding(who, item, now) {
		return true
	}
	h, ok := s.shared.of(st, now)[ix.convs[i].convID]
	return ok && h.Who == who
}

// release lets go of who's hold of row in st's shared file, if they have
// one there (read first: nothing is created or locked otherwise).
func (sh *sharedHolds) release(st *benchState, row, who string, now time.Time) {
	m, err := readHolds(sh.files(st).Holds())
	if err != nil {
		return // logged when read elsewhere; a regular file is replaced at the next take
	}
	if h, ok := m[row]; !ok || h.Who != who {
		return
	}
	sh.update(st, now, "", func(m map[string]sharedHold) bool {
		if h, ok := m[row]; ok && h.Who == who {
			delete(m, row)
			return true
		}
		return false
	})
}
