package callstore

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"gocloud.dev/blob"

	"github.com/impactbench/impactbench/internal/fsx"
	"github.com/impactbench/impactbench/internal/ids"
)

// A lease says which process runs a part of the work (a shard) when the
// workers share only an object store, so no file lock can: a duplicate
// worker (Kubernetes may start a second pod for one index) waits for the
// holder instead of paying for the same calls beside it.
//
// A lease is a sequence of create-once objects under the store's prefix,
//
//	!lease/<name>/<seq, 10 digits>.json    {"kind": "held"|"released"|"finished", holder…}
//
// the latest of which says its state. The holder renews it by creating the
// next object every TTL/3, not by rewriting one: gocloud.dev/blob offers a
// create-once write on every provider (IfNotExist) but no compare-and-swap
// on an ETag or generation, and a fresh object per renewal needs nothing
// else. Whoever creates the next object owns the lease from then on, so
// two takers never both win. A lease is stale when its latest object is
// older than the TTL by the holder's clock, or has not changed for a TTL
// by the waiter's own (monotonic) clock, which holds whatever the clocks'
// skew; or at once when the holder is a process of this machine (and PID
// namespace) that has died. A holder deletes its renewals but the last two, so a shard's
// lease is a few objects however long it runs. '!' cannot occur in a unit
// name, so a lease is never read as a unit.

// DefaultLeaseTTL is how long a holder may go without renewing its lease
// before another worker takes it over: the longest a killed worker's
// index waits on another host.
const DefaultLeaseTTL = 30 * time.Second

// LeaseOptions say which lease to take and how.
type LeaseOptions struct {
	// Name is the part of the work leased, an id such as "shard-3-of-16".
	Name string
	// Label says what the holder runs, for a waiter's message.
	Label string
	// TTL: see DefaultLeaseTTL (0: the default).
	TTL time.Duration
	// Wait for a held lease to be released or go stale; otherwise a held
	// lease is refused with a *LeasedError.
	Wait bool
	// Poll is how often a waiter looks again (0: TTL/10, at least 10 ms).
	Poll time.Duration
	// Waiting is told once who holds the lease, before the wait starts.
	Waiting func(holder string)
	// Logger hears a renewal that failed or found the lease taken over.
	Logger *slog.Logger
}

// LeasedError says another process holds the lease.
type LeasedError struct {
	Name   string
	Holder string // host, pid, start and label, as fsx.Holder writes them
}

func (e *LeasedError) Error() string {
	return fmt.Sprintf("lease %s is held by another process (%s)", e.Name, e.Holder)
}

// leaseBody is one object of a lease.
type leaseBody struct {
	Kind    string    `json:"kind"` // "held", "released" or "finished" (released, its work done)
	Holder  string    `json:"holder"`
	Renewed time.Time `json:"renewed"`
	TTL     float64   `json:"ttl_s"`
	// Local names the holder's machine and process namespace (see
	// localIdentity): only a holder with the same one is judged by its
	// process.
	Local string `json:"local,omitempty"`
	// Token is random per Lease: a holder knows its own objects by it.
	Token string `json:"token,omitempty"`
}

// Lease is a held lease. Release it when the work is done; a process that
// dies without releasing leaves it to go stale.
type Lease struct {
	store *Store
	bb    *blobBackend
	o     LeaseOptions
	dir   string // the key prefix of its objects, ending in '/'
	me    string // this process, as the holder line
	token string // random, in each of its objects: a holder knows its own
	stop  chan struct{}
	done  chan struct{}
	lost  chan struct{}

	mu  sync.Mutex
	seq int // the latest object this holder created

	releasing atomic.Bool // Release ran (it runs once)
	finished  atomic.Bool // MarkFinished ran
}

// TakeLease takes the lease named o.Name in the store. On a store in a
// directory it returns (nil, nil): there the project's file lock already
// keeps duplicates apart, and a nil *Lease is released as a no-op.
func (s *Store) TakeLease(ctx context.Context, o LeaseOptions) (*Lease, error) {
	bb, ok := s.be.(*blobBackend)
	if !ok {
		return nil, nil
	}
	if p := ids.Problem(o.Name, ids.MaxConv); p != "" {
		return nil, fmt.Errorf("callstore: invalid lease name %s: %s", ids.Quote(o.Name), p)
	}
	if o.TTL <= 0 {
		o.TTL = DefaultLeaseTTL
	}
	if o.Poll <= 0 {
		o.Poll = max(o.TTL/10, 10*time.Millisecond)
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	l := &Lease{store: s, bb: bb, o: o, dir: bb.leaseRoot() + o.Name + "/", me: fsx.ThisProcess(o.Label).String(), token: rand.Text()}
	if err := l.acquire(ctx); err != nil {
		return nil, err
	}
	l.stop, l.done, l.lost = make(chan struct{}), make(chan struct{}), make(chan struct{})
	s.leases.Store(l, struct{}{})
	go l.renew()
	return l, nil
}

// releaseLeases releases the leases still held through the store (its
// Close: a lease released after its bucket closed would only go stale).
func (s *Store) releaseLeases() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s.leases.Range(func(l, _ any) bool {
		_ = l.(*Lease).Release(ctx)
		return true
	})
}

// acquire creates the lease's next object once its latest says it is free
// or stale, waiting with o.Wait.
func (l *Lease) acquire(ctx context.Context) error {
	w := staleness{ttl: l.o.TTL}
	told := false
	for {
		seq, cur, err := l.latest(ctx)
		if err != nil {
			return err
		}
		if seq < 0 || w.free(seq, cur, time.Now()) {
			won, err := l.write(ctx, seq+1, "held")
			if err != nil || won {
				return err
			}
			continue // another taker created it first: read it again
		}
		if !l.o.Wait {
			return &LeasedError{Name: l.o.Name, Holder: cur.Holder}
		}
		if !told && l.o.Waiting != nil {
			l.o.Waiting(cur.Holder)
			told = true
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(l.o.Poll):
		}
	}
}

// staleness judges a lease's latest object as one waiter sees it over time.
type staleness struct {
	ttl    time.Duration
	seq    int
	seenAt time.Time // when this waiter first saw seq (monotonic)
}

// free reports whether the lease whose latest object is cur (number seq)
// may be taken: released, its holder a dead process of this host, renewed
// longer than a TTL ago by the holder's clock, or unchanged for a TTL by
// this waiter's.
func (w *staleness) free(seq int, cur leaseBody, now time.Time) bool {
	if cur.Kind != "held" {
		return true
	}
	if w.seenAt.IsZero() || seq != w.seq {
		w.seq, w.seenAt = seq, now
	}
	if deadHere(cur) {
		return true
	}
	return now.Sub(cur.Renewed) > w.ttl || now.Sub(w.seenAt) >= w.ttl
}

// deadHere reports a holder that is a dead process of this machine and
// process namespace. The host name alone is not enough: pods with the
// host's network share its name but each sees only its own processes.
func deadHere(cur leaseBody) bool {
	h, ok := fsx.ParseHolder(cur.Holder)
	me := localIdentity()
	return ok && h.PID > 0 && me != "" && cur.Local == me && h.Host == fsx.ThisProcess("").Host && !fsx.ProcessAlive(h.PID)
}

// localIdentity names this machine's boot and this process's PID
// namespace (Linux: /proc); "" elsewhere, where a dead holder's lease is
// only taken over after its TTL.
var localIdentity = sync.OnceValue(func() string {
	ns, err1 := os.Readlink("/proc/self/ns/pid")
	boot, err2 := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err1 != nil || err2 != nil {
		return ""
	}
	return ns + " " + strings.TrimSpace(string(boot))
})

func (l *Lease) key(seq int) string { return fmt.Sprintf("%s%010d.json", l.dir, seq) }

// write creates object seq; won is false when another process did first.
func (l *Lease) write(ctx context.Context, seq int, kind string) (won bool, err error) {
	b, err := json.Marshal(leaseBody{Kind: kind, Holder: l.me, Renewed: time.Now().UTC(), TTL: l.o.TTL.Seconds(), Local: localIdentity(), Token: l.token})
	if err != nil {
		return false, err
	}
	exists, err := l.bb.create(ctx, l.key(seq), b)
	if err != nil || exists {
		return false, err
	}
	l.mu.Lock()
	l.seq = seq
	l.mu.Unlock()
	return true, nil
}

// latest finds the lease's latest object (-1 when it has none): the
// highest listed, then the exact keys above it until one is missing (a
// listing may lag behind a create).
func (l *Lease) latest(ctx context.Context) (int, leaseBody, error) {
	top := -1
	it := l.bb.b.List(&blob.ListOptions{Prefix: l.dir})
	for {
		obj, err := it.Next(ctx)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return 0, leaseBody{}, fmt.Errorf("callstore: list lease %s: %w", l.o.Name, err)
		}
		n, err := strconv.Atoi(strings.TrimSuffix(strings.TrimPrefix(obj.Key, l.dir), ".json"))
		if err == nil && n > top {
			top = n
		}
	}
	for {
		ok, err := l.bb.b.Exists(ctx, l.key(top+1))
		if err != nil {
			return 0, leaseBody{}, fmt.Errorf("callstore: probe lease %s: %w", l.o.Name, err)
		}
		if !ok {
			break
		}
		top++
	}
	if top < 0 {
		return -1, leaseBody{}, nil
	}
	return l.readBody(ctx, top)
}

// readBody reads object seq; one that is missing (deleted by its holder
// after a newer one) or damaged (over maxObject too) reads as released, so
// it never blocks.
func (l *Lease) readBody(ctx context.Context, seq int) (int, leaseBody, error) {
	b, found, err := l.bb.read(ctx, l.key(seq))
	if errors.Is(err, errObjectTooLarge) {
		return seq, leaseBody{Kind: "released"}, nil // not read whole: damaged
	}
	if err != nil {
		return 0, leaseBody{}, err
	}
	var lb leaseBody
	if !found || json.Unmarshal(b, &lb) != nil {
		return seq, leaseBody{Kind: "released"}, nil
	}
	return seq, lb, nil
}

// renew creates the next object every TTL/3 until released. A renewal
// that finds the lease's latest object another's, or the next object
// taken, means another worker judged this one stale and took over (a
// pause longer than the TTL): the lease is lost. The latest is read first
// because by the time a paused holder renews, the new one may have
// renewed and pruned the objects before its own, or released the lease:
// the next number is then free again, and creating it would hide the loss.
func (l *Lease) renew() {
	defer close(l.done)
	tick := time.NewTicker(l.o.TTL / 3)
	defer tick.Stop()
	for {
		select {
		case <-l.stop:
			return
		case <-tick.C:
		}
		ctx, cancel := context.WithTimeout(context.Background(), l.o.TTL/3)
		won, err := l.renewOnce(ctx)
		switch {
		case err != nil:
			l.o.Logger.Warn("could not renew the lease; retrying", "lease", l.o.Name, "err", err)
		case !won:
			l.o.Logger.Warn("the lease was taken over by another worker (this one did not renew it for longer than its TTL)", "lease", l.o.Name)
			close(l.lost)
			cancel()
			return
		default:
			l.mu.Lock()
			seq := l.seq
			l.mu.Unlock()
			l.prune(ctx, seq-2)
		}
		cancel()
	}
}

// renewOnce creates the object after the lease's latest when the latest
// is this holder's own; won is false when it is another's, or when
// another created the next one first.
func (l *Lease) renewOnce(ctx context.Context) (won bool, err error) {
	seq, cur, err := l.latest(ctx)
	if err != nil {
		return false, err
	}
	if seq < 0 || cur.Token != l.token {
		return false, nil
	}
	l.mu.Lock()
	l.seq = max(l.seq, seq) // an earlier try that timed out had created it
	next := l.seq + 1
	l.mu.Unlock()
	won, err = l.write(ctx, next, "held")
	if err == nil && !won && l.mine(ctx, next) {
		won = true // this try timed out after creating it, then retried
	}
	return won, err
}

// mine reports whether object seq is this holder's own (a create whose
// answer was lost), and then counts it as the latest it created.
func (l *Lease) mine(ctx context.Context, seq int) bool {
	_, cur, err := l.readBody(ctx, seq)
	if err != nil || cur.Kind != "held" || cur.Token != l.token {
		return false
	}
	l.mu.Lock()
	l.seq = seq
	l.mu.Unlock()
	return true
}

// prune deletes this holder's objects before seq (best effort: one left
// behind is only listed).
func (l *Lease) prune(ctx context.Context, seq int) {
	for s := seq; s >= 0 && s >= seq-1; s-- {
		_ = l.bb.b.Delete(ctx, l.key(s))
	}
}

// Lost is closed when another worker took the lease over.
func (l *Lease) Lost() <-chan struct{} {
	if l == nil {
		return nil
	}
	return l.lost
}

// Release stops renewing and marks the lease released, so a waiting
// duplicate starts at once rather than after the TTL. It runs once (the
// store's Close releases what is left); a nil Lease is a no-op.
// After MarkFinished it marks it finished instead.
func (l *Lease) Release(ctx context.Context) error {
	if l == nil || !l.releasing.CompareAndSwap(false, true) {
		return nil
	}
	l.store.leases.Delete(l)
	close(l.stop)
	<-l.done
	select {
	case <-l.lost:
		return nil // not ours any more
	default:
	}
	l.mu.Lock()
	next := l.seq + 1
	l.mu.Unlock()
	kind := "released"
	if l.finished.Load() {
		kind = "finished"
	}
	if _, err := l.write(ctx, next, kind); err != nil {
		return fmt.Errorf("callstore: release lease %s: %w", l.o.Name, err)
	}
	l.prune(ctx, next-1)
	return nil
}

// MarkFinished says the holder's work is done: its release (Release, or
// the store's Close) then marks the lease finished, so that a merge tells
// it from a holder stopped before the end (a time limit's SIGTERM,
// Ctrl-C), which releases its lease too. A nil Lease is a no-op.
func (l *Lease) MarkFinished() {
	if l != nil {
		l.finished.Store(true)
	}
}

// LeaseState is one lease of a store as its latest object says it.
type LeaseState struct {
	Name     string // "shard-3-of-16"
	Released bool   // its holder released it (it ended); else it is held, or was by one that died
	Finished bool   // its holder released it with its work done (Finish)
}

// Leases lists the leases taken in the store, by name (none on a store in
// a directory, which takes none). The workers of a study on object
// storage leave one per shard that started: a merge learns from them how
// many shards the study had and which never ran or never ended.
func (s *Store) Leases(ctx context.Context) ([]LeaseState, error) {
	names, err := s.LeaseNames(ctx)
	if err != nil {
		return nil, err
	}
	var out []LeaseState
	for _, name := range names {
		st, ok, err := s.LeaseState(ctx, name)
		if err != nil {
			return nil, err
		}
		if ok {
			out = append(out, st)
		}
	}
	return out, nil
}

// LeaseNames lists the names of the leases taken in the store (none on a
// store in a directory), reading no lease: one listing.
func (s *Store) LeaseNames(ctx context.Context) ([]string, error) {
	bb, ok := s.be.(*blobBackend)
	if !ok {
		return nil, nil
	}
	root := bb.leaseRoot()
	var out []string
	it := bb.b.List(&blob.ListOptions{Prefix: root, Delimiter: "/"})
	for {
		obj, err := it.Next(ctx)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("callstore: list leases: %w", err)
		}
		name := strings.TrimSuffix(strings.TrimPrefix(obj.Key, root), "/")
		if !obj.IsDir || ids.Problem(name, ids.MaxConv) != "" {
			continue
		}
		out = append(out, name)
	}
	return out, nil
}

// LeaseState reads the state of the lease name as its latest object says
// it; ok is false when none was taken (or on a store in a directory).
func (s *Store) LeaseState(ctx context.Context, name string) (LeaseState, bool, error) {
	bb, ok := s.be.(*blobBackend)
	if !ok {
		return LeaseState{}, false, nil
	}
	l := &Lease{bb: bb, o: LeaseOptions{Name: name}, dir: bb.leaseRoot() + name + "/"}
	seq, cur, err := l.latest(ctx)
	if err != nil || seq < 0 {
		return LeaseState{}, false, err
	}
	return LeaseState{Name: name, Released: cur.Kind != "held", Finished: cur.Kind == "finished"}, true, nil
}

// leaseRoot is where the store's leases live, one folder per lease name.
func (bb *blobBackend) leaseRoot() string { return bb.prefix + "!lease/" }
