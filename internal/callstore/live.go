package callstore

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/impactbench/impactbench/internal/layout"
	"gocloud.dev/blob"
	"gocloud.dev/gcerrors"
)

// Heartbeat shows that a worker runs to the other workers sharing an
// object store, and counts them: each rewrites its own small object,
// <prefix>.impactbench-live/<random>, every Every, and deletes it when it
// ends. Workers on object storage share no file system, so there is no
// lock a dead worker drops; a worker killed without deleting its object
// is counted until its object has not changed for TTL.
//
// Staleness is judged by this process's clock only: an object is alive
// while its modification time (the store's clock) keeps changing, as seen
// by this process between two listings. Clocks of different machines
// never meet. The one exception is an object first seen with a
// modification time far in the past by this clock (more than TTL plus
// MaxSkew): a worker dead before this one started, counted out at once.
type Heartbeat struct {
	b      *blob.Bucket
	prefix string // the heartbeats' key prefix, ending in '/'
	key    string // this worker's object
	o      HeartbeatOptions

	mu   sync.Mutex
	seen map[string]beatSeen // key: object key
}

// beatSeen is what this process last saw of another worker's heartbeat.
type beatSeen struct {
	mod     time.Time // the object's modification time
	changed time.Time // by this clock, when mod last changed
}

// HeartbeatOptions tune a Heartbeat. Zero fields take the defaults.
type HeartbeatOptions struct {
	// Every is how often the worker rewrites its object (default 2s).
	Every time.Duration
	// TTL is how long an object may stay unchanged before its worker is
	// counted out (default 10s: five missed beats).
	TTL time.Duration
	// MaxSkew bounds the difference between the store's clock and this
	// machine's that a first sight tolerates (default 5m).
	MaxSkew time.Duration
	// Now is the clock (default time.Now).
	Now func() time.Time
}

func (o HeartbeatOptions) withDefaults() HeartbeatOptions {
	if o.Every <= 0 {
		o.Every = 2 * time.Second
	}
	if o.TTL <= 0 {
		o.TTL = 5 * o.Every
	}
	if o.MaxSkew <= 0 {
		o.MaxSkew = 5 * time.Minute
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return o
}

// liveDir is the heartbeats' folder under the store's prefix. It starts
// with '.', which no benchmark's folder (an id) does.
const liveDir = layout.LiveObjectPrefix

// staleAfter: a heartbeat unchanged for staleAfter TTLs (100 s by
// default) is deleted by the worker that counts it, so a killed worker's
// object does not stay in the bucket. It was counted out after one TTL;
// the margin is for a worker merely paused (SIGSTOP, a frozen node):
// deleted only long after it stopped counting, its object is written
// again at its next beat, and a counter's deletion racing that beat is
// rare enough that it costs at most one Every uncounted.
const staleAfter = 10

// maxBeats bounds the heartbeats one listing reads: far more workers than
// any cluster runs at once against one provider key.
const maxBeats = 10000

// OpenHeartbeat opens the object store at raw (as OpenURL takes it) for
// heartbeats; nil and no error for a store that is a directory, which
// DirPresence covers. The caller starts Run and Closes it at the end.
func OpenHeartbeat(ctx context.Context, raw string, o HeartbeatOptions) (*Heartbeat, error) {
	if !strings.Contains(raw, "://") || strings.HasPrefix(strings.ToLower(raw), "file://") {
		return nil, nil
	}
	s, err := OpenURL(ctx, raw, Options{})
	if err != nil {
		return nil, err
	}
	bb, ok := s.be.(*blobBackend)
	if !ok {
		_ = s.Close()
		return nil, nil
	}
	return NewHeartbeat(bb.b, bb.prefix, o), nil
}

// NewHeartbeat is a Heartbeat in b under prefix ("" or ending in '/'); it
// owns b (Close closes it).
func NewHeartbeat(b *blob.Bucket, prefix string, o HeartbeatOptions) *Heartbeat {
	var r [8]byte
	_, _ = rand.Read(r[:]) // crypto/rand never fails on supported systems
	pre := prefix + liveDir
	return &Heartbeat{b: b, prefix: pre, key: pre + hex.EncodeToString(r[:]), o: o.withDefaults(), seen: map[string]beatSeen{}}
}

// Beat writes this worker's object now.
func (h *Heartbeat) Beat(ctx context.Context) error {
	at := h.o.Now().UTC().Format(time.RFC3339Nano)
	if err := h.b.WriteAll(ctx, h.key, []byte(at+"\n"), &blob.WriterOptions{ContentType: "text/plain"}); err != nil {
		return fmt.Errorf("callstore: heartbeat %s: %w", h.key, err)
	}
	return nil
}

// Run beats every Every until ctx ends (the caller beats once first, so
// that the others see it before its first call). A failed beat is retried
// at the next; the others count this worker out only after TTL of them.
func (h *Heartbeat) Run(ctx context.Context) {
	t := time.NewTicker(h.o.Every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			_ = h.Beat(ctx)
		}
	}
}

// Count is the workers whose heartbeat is fresh, this one included.
func (h *Heartbeat) Count(ctx context.Context) (int, error) {
	now := h.o.Now()
	it := h.b.List(&blob.ListOptions{Prefix: h.prefix})
	h.mu.Lock()
	defer h.mu.Unlock()
	n, listed, stale := 1, map[string]bool{}, []string(nil)
	for len(listed) < maxBeats {
		obj, err := it.Next(ctx)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return 0, fmt.Errorf("callstore: list heartbeats: %w", err)
		}
		if obj.Key == h.key || obj.IsDir {
			continue
		}
		listed[obj.Key] = true
		if h.freshLocked(now, obj.Key, obj.ModTime) {
			n++
		} else if now.Sub(h.seen[obj.Key].changed) > staleAfter*h.o.TTL {
			stale = append(stale, obj.Key)
		}
	}
	for _, k := range stale {
		// A dead worker's object; a live one paused or whose beats failed
		// this long writes it again at its next.
		_ = h.b.Delete(ctx, k)
	}
	for k := range h.seen {
		if !listed[k] {
			delete(h.seen, k) // deleted by its worker, who left
		}
	}
	return n, nil
}

// freshLocked records a sight of another worker's object and says
// whether its worker counts as running.
func (h *Heartbeat) freshLocked(now time.Time, key string, mod time.Time) bool {
	s, ok := h.seen[key]
	switch {
	case !ok && now.Sub(mod) > h.o.TTL+h.o.MaxSkew:
		s = beatSeen{mod: mod} // long dead: its zero changed time is stale
	case !ok || !mod.Equal(s.mod):
		s = beatSeen{mod: mod, changed: now}
	}
	h.seen[key] = s
	return now.Sub(s.changed) <= h.o.TTL
}

// Close deletes this worker's object (it leaves) and closes the bucket.
func (h *Heartbeat) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err := h.b.Delete(ctx, h.key)
	if cerr := h.b.Close(); err == nil || gcerrors.Code(err) == gcerrors.NotFound {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("callstore: leave: %w", err)
	}
	return nil
}
