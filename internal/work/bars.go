package work

import (
	"sync"

	"github.com/impactbench/impactbench/internal/progress"
)

// Bars are a run's progress bars, one per lane key, shared by every output
// that feeds the lane: a study shows "simulate gpt-4o" once, over all of
// its benchmarks.
type Bars[K comparable] struct {
	prog *progress.Tracker
	mu   sync.Mutex
	m    map[K]*sharedBar[K]
}

type sharedBar[K comparable] struct {
	key   K
	bar   *progress.Bar
	parts int // open parts; the bar ends when the last one closes
	total int
}

// NewBars returns the bars of a run drawn on p.
func NewBars[K comparable](p *progress.Tracker) *Bars[K] {
	return &Bars[K]{prog: p, m: map[K]*sharedBar[K]{}}
}

// BarPartOf is one output's share of a bar.
type BarPartOf[K comparable] struct {
	b   *Bars[K]
	s   *sharedBar[K]
	n   int
	end bool
}

// Open adds an output's n rows to the bar of k, labelled label when it is
// new.
func (b *Bars[K]) Open(k K, label string, n int) *BarPartOf[K] {
	b.mu.Lock()
	defer b.mu.Unlock()
	s := b.m[k]
	if s == nil {
		s = &sharedBar[K]{key: k, bar: b.prog.Start(label, 0)}
		b.m[k] = s
	}
	s.parts++
	s.total += n
	s.bar.SetTotal(s.total)
	return &BarPartOf[K]{b: b, s: s, n: n}
}

// SetTotal changes this part's row count (the rows became known).
func (p *BarPartOf[K]) SetTotal(n int) {
	p.b.mu.Lock()
	defer p.b.mu.Unlock()
	p.s.total += n - p.n
	p.n = n
	p.s.bar.SetTotal(p.s.total)
}

// Close ends this part; the bar ends with its last part. A nil part is
// closed already.
func (p *BarPartOf[K]) Close() {
	if p == nil {
		return
	}
	p.b.mu.Lock()
	defer p.b.mu.Unlock()
	if p.end {
		return
	}
	p.end = true
	p.s.parts--
	if p.s.parts == 0 {
		p.s.bar.End()
		delete(p.b.m, p.s.key)
	}
}

// Bar is the shared bar this part feeds.
func (p *BarPartOf[K]) Bar() *progress.Bar { return p.s.bar }
