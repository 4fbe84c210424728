package benchharness

import (
	"crypto/sha256"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// callLedger is what the cluster presets need from the fake beyond its
// counters: how many times each exact request body was answered 200 (so
// a call paid twice is an identical request answered more than once, the
// provider's view of a bill), and the requests in flight per client
// address (so the calls a killed worker had in flight can be counted).
type callLedger struct {
	mu       sync.Mutex
	paid     map[[sha256.Size]byte]int
	inFlight map[string]int // by the client's host:port
	// answers is every 200 of each body, to tell why a call was paid twice.
	answers map[[sha256.Size]byte][]answer
}

// answer is one 200: the client's port, when the request arrived and when
// its answer was written.
type answer struct {
	port          int
	arrived, done time.Time
}

func newCallLedger() *callLedger {
	return &callLedger{paid: map[[sha256.Size]byte]int{}, inFlight: map[string]int{}, answers: map[[sha256.Size]byte][]answer{}}
}

// begin counts a request in flight from addr until the returned func runs
// (after the answer is written).
func (l *callLedger) begin(addr string) (done func()) {
	l.mu.Lock()
	l.inFlight[addr]++
	l.mu.Unlock()
	return func() {
		l.mu.Lock()
		if l.inFlight[addr]--; l.inFlight[addr] <= 0 {
			delete(l.inFlight, addr)
		}
		l.mu.Unlock()
	}
}

// answered records one 200 answer to body from addr, which arrived then.
func (l *callLedger) answered(body []byte, addr string, arrived time.Time) {
	h := sha256.Sum256(body)
	a := answer{port: portOf(addr), arrived: arrived, done: time.Now()}
	l.mu.Lock()
	l.paid[h]++
	l.answers[h] = append(l.answers[h], a)
	l.mu.Unlock()
}

func portOf(addr string) int {
	_, p, err := net.SplitHostPort(addr)
	if err != nil {
		return 0
	}
	port, _ := strconv.Atoi(p)
	return port
}

// total is every answered request.
func (l *callLedger) total() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	var n int64
	for _, c := range l.paid {
		n += int64(c)
	}
	return n
}

// inFlightFrom counts the requests in flight from the given local ports of
// the clients (a worker's sockets), and in all.
func (l *callLedger) inFlightFrom(ports map[int]bool) (from, all int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for addr, n := range l.inFlight {
		all += n
		if ports[portOf(addr)] {
			from += n
		}
	}
	return from, all
}

// paidBeyond compares the answers of a run (got) with one process's run of
// the same work (want), request by request: extra is the answers got paid
// more often than want did (calls paid twice), missing those it never got.
func paidBeyond(want, got *callLedger) (extra, missing int64) {
	want.mu.Lock()
	defer want.mu.Unlock()
	got.mu.Lock()
	defer got.mu.Unlock()
	for h, n := range got.paid {
		extra += int64(max(n-want.paid[h], 0))
	}
	for h, n := range want.paid {
		missing += int64(max(n-got.paid[h], 0))
	}
	return extra, missing
}

// PaidTwice is why each call beyond one process's answers was paid again.
type PaidTwice struct {
	// Raced: asked again while an earlier answer to it was still being
	// made (two workers had it in flight at once: a duplicate and its twin).
	Raced int64 `json:"raced"`
	// Killed: its earlier answer went to a killed worker, written after
	// the kill or at most LastBeforeKill before it (answered, but not yet
	// stored when the worker died).
	Killed int64 `json:"killed"`
	// LastBeforeKill is the longest such gap, in seconds.
	LastBeforeKill float64 `json:"last_before_kill_s"`
	lastOther      bool
	// Other: none of these; the goal is none. OtherByDuplicate of them
	// were asked by the duplicate worker (its sockets' ports, sampled).
	Other            int64 `json:"other"`
	OtherByDuplicate int64 `json:"other_by_duplicate"`
	// OtherPairs counts the Other calls by who had the earlier answer and
	// who asked again ("index 4 (killed) → index 4"), from the workers'
	// sockets' ports, sampled while they ran.
	OtherPairs map[string]int `json:"other_pairs,omitempty"`
	// OtherGapMax is the longest time, in seconds, between the latest
	// earlier answer leaving the fake and an Other call arriving: how long after
	// its answer a call may still be unstored (the worker reading the
	// answer and writing it to the store).
	OtherGapMax float64 `json:"other_gap_max_s,omitempty"`
}

// killGrace is how long before a kill an answer to the killed worker
// counts as still in flight (read, but not yet stored).
const killGrace = time.Second

// explainPaidTwice classifies the answers got paid beyond want's, given
// the ports of the workers killed at kill.
func explainPaidTwice(want, got *callLedger, killedPorts map[int]bool, owners map[int]string, kill time.Time) PaidTwice {
	want.mu.Lock()
	defer want.mu.Unlock()
	got.mu.Lock()
	defer got.mu.Unlock()
	var p PaidTwice
	for h, as := range got.answers {
		need := want.paid[h]
		if len(as) <= need {
			continue
		}
		as = slices.Clone(as)
		slices.SortFunc(as, func(a, b answer) int { return a.arrived.Compare(b.arrived) })
		for i := max(need, 1); i < len(as); i++ {
			p.classify(as[:i], as[i], killedPorts, kill)
			if p.lastOther {
				p.noteOther(owners, as[i-1], as[i])
			}
		}
	}
	return p
}

// noteOther says who had the earlier answer and who asked again.
func (p *PaidTwice) noteOther(owners map[int]string, earlier, again answer) {
	who := func(port int) string {
		if o, ok := owners[port]; ok {
			return o
		}
		return "unknown"
	}
	if strings.HasSuffix(who(again.port), "duplicate") {
		p.OtherByDuplicate++
	}
	if p.OtherPairs == nil {
		p.OtherPairs = map[string]int{}
	}
	p.OtherPairs[who(earlier.port)+" → "+who(again.port)]++
}

// classify says why again was paid although earlier answers were.
func (p *PaidTwice) classify(earlier []answer, again answer, killedPorts map[int]bool, kill time.Time) {
	p.lastOther = false
	for _, e := range earlier {
		if again.arrived.Before(e.done) {
			p.Raced++
			return
		}
	}
	for _, e := range earlier {
		if killedPorts[e.port] && !kill.IsZero() && e.done.After(kill.Add(-killGrace)) {
			p.Killed++
			p.LastBeforeKill = max(p.LastBeforeKill, kill.Sub(e.done).Seconds())
			return
		}
	}
	p.Other++
	p.lastOther = true
	var last time.Time
	for _, e := range earlier {
		if e.done.After(last) {
			last = e.done
		}
	}
	p.OtherGapMax = max(p.OtherGapMax, again.arrived.Sub(last).Seconds())
}
