package viewer

import (
	"slices"
	"sync"
	"time"
)

// A reviewer's place in the queue is the server's, not the browser tab's:
// the item they have open, the items they skipped, the ones they opened and
// labelled this session. A new tab, another browser or a reload find it
// again. Only an open review form holds an item away from the others
// (hold, renewed by the page while the form is open, for holdFor): viewing
// an item does not, and skipping or labelling it lets it go at once.
// The holds here are this server's; every view server on the project
// shares them through each benchmark's holds file too (sharedholds.go).

// holdFor is how long an open form holds its item without being renewed
// (the page renews it every holdRenew while the form is open).
const (
	holdFor   = 90 * time.Second
	holdRenew = 30 * time.Second
)

// maxHistory bounds the items a place remembers (k and u go back this far).
const maxHistory = 500

type places struct {
	mu    sync.Mutex
	m     map[string]*place // labeller → place
	holds map[string]hold   // item → who has its form open
}

type place struct {
	current string
	skipped map[string]bool
	history []string // opened, oldest first (k)
	saved   []string // labelled this session, oldest first (u)
}

type hold struct {
	who   string
	until time.Time
}

// placeView is a place as the page reads it.
type placeView struct {
	Current string   `json:"current"`
	Skipped []string `json:"skipped"`
	History []string `json:"history"`
	Saved   []string `json:"saved"`
}

func (ps *places) of(who string) *place {
	if ps.m == nil {
		ps.m = map[string]*place{}
	}
	p := ps.m[who]
	if p == nil {
		p = &place{skipped: map[string]bool{}}
		ps.m[who] = p
	}
	return p
}

// view copies who's place (reading one creates nothing).
func (ps *places) view(who string) placeView {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	p := ps.m[who]
	if p == nil {
		p = &place{}
	}
	v := placeView{Current: p.current, Skipped: []string{}, History: slices.Clone(p.history), Saved: slices.Clone(p.saved)}
	for it := range p.skipped {
		v.Skipped = append(v.Skipped, it)
	}
	slices.Sort(v.Skipped)
	if v.History == nil {
		v.History = []string{}
	}
	if v.Saved == nil {
		v.Saved = []string{}
	}
	return v
}

// skippedSet is a copy of who's skipped items.
func (ps *places) skippedSet(who string) map[string]bool {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	out := map[string]bool{}
	if p := ps.m[who]; p != nil {
		for it := range p.skipped {
			out[it] = true
		}
	}
	return out
}

// open records that who opened item (their current one, and history).
func (ps *places) open(who, item string) {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	p := ps.of(who)
	p.current = item
	if n := len(p.history); n == 0 || p.history[n-1] != item {
		p.history = appendBounded(p.history, item)
	}
}

// skip sets item aside for who and lets go of its hold.
func (ps *places) skip(who, item string) {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	ps.of(who).skipped[item] = true
	ps.releaseLocked(who, item)
}

// unskip brings every skipped item back.
func (ps *places) unskip(who string) {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	ps.of(who).skipped = map[string]bool{}
}

// labelled records who's label on item: no longer skipped, no longer held.
func (ps *places) labelled(who, item string) {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	p := ps.of(who)
	delete(p.skipped, item)
	p.saved = appendBounded(p.saved, item)
	ps.releaseLocked(who, item)
}

// take holds item for who until now+holdFor, letting go of who's other
// hold (let: the items let go); false, and the holder, when someone else
// holds it. An item who has labelled is not held: the page sends its hold
// without waiting, so a label can reach the server before the hold of the
// same form, and that late hold would keep the row from its second
// labeller for holdFor. This server's holds only: reviewQueue.take asks
// the other servers' too (sharedholds.go).
func (ps *places) take(who, item string, now time.Time) (held bool, holder string, let []string) {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	if slices.Contains(ps.of(who).saved, item) {
		return false, "", nil
	}
	if ps.holds == nil {
		ps.holds = map[string]hold{}
	}
	if h, ok := ps.holds[item]; ok && h.who != who && now.Before(h.until) {
		return false, h.who, nil
	}
	for it, h := range ps.holds {
		if h.who == who && it != item {
			let = append(let, it)
		}
		if h.who == who || !now.Before(h.until) {
			delete(ps.holds, it)
		}
	}
	ps.holds[item] = hold{who: who, until: now.Add(holdFor)}
	return true, "", let
}

// release lets go of who's hold of item (another server's holder has it).
func (ps *places) release(who, item string) {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	ps.releaseLocked(who, item)
}

// holding reports whether who has item's form open (their hold has not lapsed).
func (ps *places) holding(who, item string, now time.Time) bool {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	h, ok := ps.holds[item]
	return ok && h.who == who && now.Before(h.until)
}

// heldByOther reports whether someone other than who has item's form open.
func (ps *places) heldByOther(item, who string, now time.Time) bool {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	h, ok := ps.holds[item]
	return ok && h.who != who && now.Before(h.until)
}

// heldByOthers is the items someone other than who has open at now.
func (ps *places) heldByOthers(who string, now time.Time) []string {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	var out []string
	for item, h := range ps.holds {
		if h.who != who && now.Before(h.until) {
			out = append(out, item)
		}
	}
	return out
}

func (ps *places) releaseLocked(who, item string) {
	if h, ok := ps.holds[item]; ok && h.who == who {
		delete(ps.holds, item)
	}
}

func appendBounded(s []string, v string) []string {
	s = append(s, v)
	if len(s) > maxHistory {
		s = slices.Delete(s, 0, len(s)-maxHistory)
	}
	return s
}
