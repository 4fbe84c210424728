package benchharness

import (
	"crypto/sha256"
	"net"
	"strconv"
	"sync"
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
}

func newCallLedger() *callLedger {
	return &callLedger{paid: map[[sha256.Size]byte]int{}, inFlight: map[string]int{}}
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

// answered records one 200 answer to body.
func (l *callLedger) answered(body []byte) {
	h := sha256.Sum256(body)
	l.mu.Lock()
	l.paid[h]++
	l.mu.Unlock()
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
		if _, p, err := net.SplitHostPort(addr); err == nil {
			if port, err := strconv.Atoi(p); err == nil && ports[port] {
				from += n
			}
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
