// Package redisrate keeps the limiter's request and token buckets in a
// Redis server, so that every worker of a study (processes on one machine
// or on a cluster) shares one provider limit exactly: see
// ratelimit.SharedBuckets.
//
// The buckets are a Lua script of our own (buckets.lua), not
// github.com/go-redis/redis_rate: the limiter charges an estimate before a
// call and reconciles it with the reported usage after it (max_tokens 2048
// against a 300-token answer would otherwise cap output at a seventh of
// the limit), so it needs to give tokens back and to charge an
// under-estimate as debt, and it needs every bucket of a call (requests,
// tokens, input, output) checked and charged at once; redis_rate's AllowN
// does one key, refuses instead of owing, and has no refund. The Redis
// client is github.com/redis/go-redis/v9.
package redisrate

import (
	"context"
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/logging"

	"github.com/impactbench/impactbench/internal/llm/ratelimit"
	"github.com/impactbench/impactbench/internal/sanitize"
)

//go:embed buckets.lua
var bucketsLua string

var script = redis.NewScript(bucketsLua)

var quietOnce sync.Once

// KeyPrefix starts every key this package writes; the rest is a hash of
// the pool key, which may hold a base_url with credentials in it.
const KeyPrefix = "impactbench:ratelimit:"

// Timeouts: a limiter that waits long on its store holds every call up;
// past these the pool keeps to its local share (ratelimit.SharedBuckets).
const (
	DialTimeout = 2 * time.Second
	IOTimeout   = time.Second
)

// Error is a rate_backend that cannot be used: a URL that does not parse
// (Op "parse") or a server that does not answer (Op "connect"). URL is
// redacted (no password). A CLI exits 2 on it, before any call.
type Error struct {
	Op  string
	URL string
	Err error
}

func (e *Error) Error() string {
	what := "is not a Redis URL (redis://[user:password@]host:port/db, rediss://…, unix:///path)"
	if e.Op == "connect" {
		what = "does not answer"
	}
	return fmt.Sprintf("rate_backend %s %s: %s", e.URL, what, sanitize.URLsIn(e.Err.Error()))
}

func (e *Error) Unwrap() error { return e.Err }

// Buckets is a ratelimit.SharedBuckets on one Redis server (or cluster
// endpoint). It is safe for concurrent use.
type Buckets struct {
	client *redis.Client
	url    string // redacted
}

var _ ratelimit.SharedBuckets = (*Buckets)(nil)

// Open connects to the Redis server at rawURL (redis://, rediss:// or
// unix://, as go-redis parses them) and checks that it answers. Errors are
// *Error.
func Open(ctx context.Context, rawURL string) (*Buckets, error) {
	safeURL := sanitize.URL(rawURL)
	opts, err := redis.ParseURL(rawURL)
	if err != nil {
		return nil, &Error{Op: "parse", URL: safeURL, Err: errors.New(sanitize.URLsIn(err.Error()))}
	}
	opts.DialTimeout, opts.ReadTimeout, opts.WriteTimeout = DialTimeout, IOTimeout, IOTimeout
	// One attempt: a retry inside the client would hold the call up as
	// long again before the pool falls back to its local share.
	opts.MaxRetries, opts.DialerRetries = -1, 1
	// The client would print every failed dial on stderr; the limiter
	// says once, in the run's log, that the store is unreachable.
	quietOnce.Do(func() { redis.SetLogger(&logging.VoidLogger{}) })
	c := redis.NewClient(opts)
	if err := c.Ping(ctx).Err(); err != nil {
		c.Close()
		return nil, &Error{Op: "connect", URL: safeURL, Err: err}
	}
	return &Buckets{client: c, url: safeURL}, nil
}

// URL is the server's address with any password redacted.
func (b *Buckets) URL() string { return b.url }

// Close closes the connections.
func (b *Buckets) Close() error { return b.client.Close() }

// Key is the Redis key of a pool's buckets.
func Key(pool string) string {
	h := sha256.Sum256([]byte(pool))
	return KeyPrefix + hex.EncodeToString(h[:16])
}

// Take implements ratelimit.SharedBuckets.
func (b *Buckets) Take(ctx context.Context, pool string, r ratelimit.SharedRates, c ratelimit.Charge) (time.Duration, error) {
	us, err := b.run(ctx, "take", pool, r, c)
	if err != nil {
		return 0, err
	}
	return time.Duration(us) * time.Microsecond, nil
}

// Adjust implements ratelimit.SharedBuckets.
func (b *Buckets) Adjust(ctx context.Context, pool string, r ratelimit.SharedRates, c ratelimit.Charge) error {
	_, err := b.run(ctx, "adjust", pool, r, c)
	return err
}

func (b *Buckets) run(ctx context.Context, mode, pool string, r ratelimit.SharedRates, c ratelimit.Charge) (int64, error) {
	args := []any{mode}
	var longest time.Duration
	for _, d := range []struct {
		r ratelimit.Rate
		n float64
	}{{r.Requests, c.Requests}, {r.Tokens, c.Tokens}, {r.Input, c.Input}, {r.Output, c.Output}} {
		args = append(args, num(d.r.PerSec), num(d.r.Burst), num(d.n))
		if d.r.PerSec > 0 {
			longest = max(longest, time.Duration(d.r.Burst/d.r.PerSec*float64(time.Second)))
		}
	}
	// Keep a pool's state while a bucket could still be refilling (debt
	// included, within reason), then let it go.
	args = append(args, (2*longest + time.Minute).Milliseconds())
	v, err := script.Run(ctx, b.client, []string{Key(pool)}, args...).Int64()
	if err != nil {
		return 0, fmt.Errorf("redisrate %s %s: %w", mode, b.url, err)
	}
	return v, nil
}

func num(f float64) string { return strconv.FormatFloat(f, 'g', -1, 64) }
