// Package callstore makes resume free: every completed model call is stored,
// under a key derived from everything that determines its answer, with the
// unit of work it belongs to (one conversation, one judged row, one
// metric's scenarios). Rerunning a unit replays it through the store, so
// calls whose answers are stored cost nothing, and a changed prompt or
// definition misses exactly the calls whose messages changed.
//
// Two stores share one model (see docs/reruns.md):
//
//   - on a file system (the default, also a shared one such as NFS), each
//     writer appends records to its own segment file per unit directory
//     (<dir>/.seg/<host>_<pid>_<start>_<n>.seg), indexed in memory by unit;
//     no file is made per unit and no two processes append to one file.
//     Units written by earlier versions (<unit>.json, <unit>.jsonl) are
//     read as they are;
//   - on object storage (s3://, gs://, azblob://), one object per stored
//     call and one per result, each written create-once.
//
// A unit's results and resets (--force) are revisions 0, 1, 2…; each is
// created once, so when two writers finish one unit at once (a duplicate
// worker) the second adopts the first's result. A call's answer reaches the
// store before it is handed out, so a process killed at any point (SIGKILL
// included) loses at most its calls in flight, and a writer looks for an
// answer another writer stored before it pays for a call.
package callstore

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/impactbench/impactbench/internal/ids"
	"github.com/impactbench/impactbench/internal/llm"
)

// formatVersion salts every key: bump it when the meaning of a stored answer
// changes (e.g. a new Response field that stages depend on).
const formatVersion = "ib-callstore-1"

// Identity is everything about a model endpoint that determines its answers,
// minus secrets. Two clients with equal identities may share stored answers.
type Identity struct {
	Provider    string            `json:"provider"`
	BaseURL     string            `json:"base_url,omitempty"`
	Model       string            `json:"model"`
	Temperature *float64          `json:"temperature,omitempty"`
	MaxTokens   int               `json:"max_tokens,omitempty"`
	Headers     map[string]string `json:"headers,omitempty"` // extra headers, auth-like ones removed
	Profile     string            `json:"profile,omitempty"` // e.g. offline model knobs
}

// Key returns the store key of req sent to the endpoint id. It covers the
// endpoint, every request parameter that reaches the model, the messages and
// the Seed (so independent samples never share an answer); it never covers
// API keys, Purpose or Meta.
func Key(id Identity, req llm.Request) string {
	h := sha256.New()
	enc := json.NewEncoder(h)
	_ = enc.Encode(formatVersion)
	_ = enc.Encode(id)
	_ = enc.Encode(struct {
		Messages    []llm.Message  `json:"m"`
		MaxTokens   int            `json:"mt"`
		Temperature *float64       `json:"t,omitempty"`
		JSON        bool           `json:"j"`
		Schema      map[string]any `json:"s,omitempty"`
		SchemaName  string         `json:"sn,omitempty"`
		Seed        uint64         `json:"seed"`
	}{req.Messages, req.MaxTokens, req.Temperature, req.JSON, req.Schema, req.SchemaName, req.Seed})
	return hex.EncodeToString(h.Sum(nil))
}

// IsSecretHeader reports header names that carry credentials; they never
// enter keys or files.
func IsSecretHeader(name string) bool {
	n := strings.ToLower(name)
	for _, part := range []string{"auth", "key", "token", "secret", "cookie", "password", "signature"} {
		if strings.Contains(n, part) {
			return true
		}
	}
	return false
}

// Entry is one stored call.
type Entry struct {
	Key      string       `json:"key"`
	Purpose  llm.Purpose  `json:"purpose,omitempty"`
	Model    string       `json:"model,omitempty"`
	Response llm.Response `json:"response"`
}

// event is a unit's revision: its result, or a reset that forgets what was
// stored before it (--force).
type event struct {
	Rev       int
	Kind      byte // evResult or evReset
	Result    json.RawMessage
	ResultKey string
	At        time.Time
	// Marshaled says Result is json.Marshal's own output (compact and
	// HTML-escaped), which a stored record may embed as it is.
	Marshaled bool
}

// unitState is what a backend knows of a unit when it is opened.
type unitState struct {
	calls  map[string]Entry // answers stored since the unit's latest reset
	top    *event           // the latest event; nil when none
	cursor int              // local store: records of the unit read so far
	gen    int              // object store: the generation its calls are stored in
}

// backend is where a Store keeps its units: a directory of segment files
// or an object store.
type backend interface {
	// open reads unit name's state; with reset it first writes a reset
	// after whatever is stored.
	open(ctx context.Context, name string, reset bool) (unitState, error)
	// probe looks for an answer to key stored since the unit was opened,
	// by another writer, before the caller pays for it.
	probe(ctx context.Context, u *Unit, key string) (Entry, bool, error)
	// put stores e (made under the unit's latest event base). When another
	// writer stored an answer for the key first, that answer is returned.
	put(ctx context.Context, u *Unit, e Entry) (Entry, error)
	// commit writes ev as the revision after base. When another writer's
	// result is there already, it is returned with adopted set.
	commit(ctx context.Context, u *Unit, base int, ev event) (event, bool, error)
	// latest reads unit name's latest event from the store.
	latest(ctx context.Context, name string) (*event, error)
	list(ctx context.Context, dir string) (Listing, error)
	release(u *Unit)
	close() error
}

// Options configure a store.
type Options struct {
	// Force ignores answers and results stored before the store was
	// opened, like upstream's run.force.
	Force bool
	// Writer names this process's part of the work (for example
	// "shard-3-of-16"): it goes into the names of the segment files this
	// store writes, and only writers with the same name (or none) are
	// watched for answers before a call is paid. Letters, digits, '-',
	// '_' and '.'.
	Writer string
	// Sync flushes every record to stable storage before its answer is
	// handed out. Without it a record reaches the page cache (it survives
	// the process being killed, not a power cut). It is on by itself on
	// network file systems (NFS, SMB, Lustre…), where other machines see
	// a record only once it is flushed.
	Sync bool
	// Survey suits a process that reads every unit of a store and writes
	// few (a replay, merge --from-store): on an object store each
	// directory of units is listed once, and a unit listed is then read
	// in one round trip of two requests instead of two of four. A worker,
	// which reads only its share of the units, goes without.
	Survey bool
}

// Store holds units. Its units may be used from many goroutines; many
// processes (on one machine or many) may use one store at once.
type Store struct {
	be    backend
	dir   string // local root; "" for an object store
	loc   string // where, for messages: dir, or the URL with secrets redacted
	force bool
	wiped sync.Map // unit names already opened under force
	// leases are those taken through the store and not yet released:
	// Close releases them while it can still write.
	leases sync.Map // *Lease → struct{}
}

// Open returns the local store rooted at dir (created on first write).
// With force, answers stored before this store was opened are ignored,
// like upstream's run.force; a unit opened again later in the same
// invocation keeps what this invocation stored in it (a conversation
// started while scenarios were still being written is taken over, not
// paid for twice).
func Open(dir string, force bool) *Store { return OpenDir(dir, Options{Force: force}) }

// OpenDir is Open with options.
func OpenDir(dir string, o Options) *Store {
	return &Store{be: newLocal(dir, o), dir: dir, loc: dir, force: o.Force}
}

// Dir is the store's root directory; "" for a store on object storage.
func (s *Store) Dir() string { return s.dir }

// Location names the store for messages: its directory, or its URL with
// credentials redacted.
func (s *Store) Location() string { return s.loc }

// Close releases what the store holds open (segment files, connections).
// Units must not be used after it.
func (s *Store) Close() error {
	s.releaseLeases()
	return s.be.close()
}

// checkName refuses a unit name that is not a '/'-separated path of ids
// (package ids): no empty element, no "." or "..", no absolute path, no
// backslash, so a name can never reach outside the store.
func checkName(name string) error {
	if name == "" {
		return fmt.Errorf("callstore: invalid unit name %q: it is empty", name)
	}
	for _, el := range strings.Split(name, "/") {
		if p := ids.Problem(el, ids.MaxConv); p != "" {
			return fmt.Errorf("callstore: invalid unit name %s: %s", ids.Quote(name), p)
		}
	}
	return nil
}

// firstOpen reports whether name is opened for the first time since the
// store was opened (and remembers it).
func (s *Store) firstOpen(name string) bool {
	_, seen := s.wiped.LoadOrStore(name, struct{}{})
	return !seen
}

// ReadResult reads a unit's stored result (also under force, where Unit
// ignores what earlier invocations stored): phase outputs are assembled
// from it. A unit without a readable result is (_, false).
func (s *Store) ReadResult(name string, out any) (inputKey string, ok bool) {
	key, ok, _ := s.LoadResult(context.Background(), name, out)
	return key, ok
}

// LoadResult is ReadResult with a context and the error of a store that
// could not be read (a missing or unreadable result is not an error).
func (s *Store) LoadResult(ctx context.Context, name string, out any) (inputKey string, ok bool, err error) {
	if err := checkName(name); err != nil {
		return "", false, err
	}
	ev, err := s.be.latest(ctx, name)
	if err != nil || ev == nil || ev.Kind != evResult || len(ev.Result) == 0 {
		return "", false, err
	}
	if json.Unmarshal(ev.Result, out) != nil {
		return "", false, nil
	}
	return ev.ResultKey, true, nil
}

// Unit opens (or creates) the unit name, a relative path of ids such as
// "claude-haiku-4-5/sim/m01_s001_v01__s0". A damaged record is treated as
// missing, never as fatal.
func (s *Store) Unit(name string) (*Unit, error) { return s.OpenUnit(context.Background(), name) }

// OpenUnit is Unit with a context (an object store is read on opening).
func (s *Store) OpenUnit(ctx context.Context, name string) (*Unit, error) {
	if err := checkName(name); err != nil {
		return nil, err
	}
	reset := s.force && s.firstOpen(name)
	st, err := s.be.open(ctx, name, reset)
	if err != nil {
		return nil, err
	}
	u := &Unit{store: s, name: name, stored: st.calls, used: map[string]bool{}, fresh: map[string]Entry{}, base: -1, seen: st.cursor, gen: st.gen}
	if u.stored == nil {
		u.stored = map[string]Entry{}
	}
	if st.top != nil {
		u.base = st.top.Rev
		if st.top.Kind == evResult {
			u.result, u.resKey = st.top.Result, st.top.ResultKey
		}
	}
	return u, nil
}

// Unit is one unit of work's stored calls. Safe for concurrent use (a judge
// panel may call several judges at once).
type Unit struct {
	store *Store
	name  string

	mu     sync.Mutex
	stored map[string]Entry // answers stored before (or beside) this execution
	used   map[string]bool  // keys answered (stored or fresh) in this execution
	order  []string         // keys in first-use order
	fresh  map[string]Entry
	result json.RawMessage
	resKey string
	// base is the revision of the unit's latest event this Unit knows:
	// records it writes are made under it, and a commit that finds a newer
	// result lost a race.
	base   int
	seen   int // local store: how many of the unit's indexed records were read
	gen    int // object store: the generation its calls are stored in
	stats  Stats
	closed bool
}

// Stats counts a unit's calls in this execution.
type Stats struct {
	Hits   int       // answered from the store
	Misses int       // sent to the model
	Spent  llm.Usage // usage of fresh calls (what this execution paid)
	Saved  llm.Usage // usage of stored answers reused
}

// Name is the unit's name.
func (u *Unit) Name() string { return u.name }

// Close releases what the unit holds open. Every call is already stored;
// the unit stays usable (a later call opens what it needs again).
func (u *Unit) Close() error {
	u.mu.Lock()
	defer u.mu.Unlock()
	if !u.closed {
		u.closed = true
		u.store.be.release(u)
	}
	return nil
}

// Result returns the stored result if it was computed from inputs with the
// same fingerprint.
func (u *Unit) Result(inputKey string, out any) bool {
	u.mu.Lock()
	defer u.mu.Unlock()
	if len(u.result) == 0 || u.resKey != inputKey {
		return false
	}
	return json.Unmarshal(u.result, out) == nil
}

// SetResult records the unit's result (see Commit; when another writer
// stored the unit's result first, that result is kept and adopted).
func (u *Unit) SetResult(inputKey string, v any) error {
	_, err := u.Commit(context.Background(), inputKey, v)
	return err
}

// Committed is what Commit stored, or adopted.
type Committed struct {
	// Adopted: another writer (a duplicate worker) stored this unit's
	// result first; ResultKey and Result are theirs, and the caller should
	// use them instead of its own.
	Adopted   bool
	ResultKey string
	Result    json.RawMessage
}

// Decode decodes the committed result into out.
func (c Committed) Decode(out any) error { return json.Unmarshal(c.Result, out) }

// Commit stores v as the unit's result, computed from inputs with the
// fingerprint inputKey, as the revision after the latest this Unit knows.
// Revisions are created once: when another writer stored one first, its
// result is adopted (Committed.Adopted) and v is not stored; calling
// Commit again then stores v after it.
func (u *Unit) Commit(ctx context.Context, inputKey string, v any) (Committed, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return Committed{}, fmt.Errorf("callstore: encode result of %s: %w", u.name, err)
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	ev := event{Kind: evResult, Result: b, ResultKey: inputKey, At: time.Now(), Marshaled: true}
	got, adopted, err := u.store.be.commit(ctx, u, u.base, ev)
	if err != nil {
		return Committed{}, err
	}
	u.base = got.Rev
	u.result, u.resKey = nil, ""
	if got.Kind == evResult {
		u.result, u.resKey = got.Result, got.ResultKey
	}
	return Committed{Adopted: adopted, ResultKey: u.resKey, Result: u.result}, nil
}

// Stats returns this execution's counts.
func (u *Unit) Stats() Stats {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.stats
}

// Client wraps c so that its calls go through the unit. id must describe the
// endpoint c talks to.
func (u *Unit) Client(id Identity, c llm.Client) llm.Client {
	return &memo{u: u, id: id, inner: c}
}

type memo struct {
	u     *Unit
	id    Identity
	inner llm.Client
}

func (m *memo) Complete(ctx context.Context, req llm.Request) (llm.Response, error) {
	key := Key(m.id, req)
	u := m.u
	if r, ok := u.lookup(key); ok {
		return r, nil
	}
	// Another writer (a duplicate worker, or this process's other opening
	// of the unit) may have stored the answer since the unit was opened.
	if e, ok, err := u.store.be.probe(ctx, u, key); err != nil {
		return llm.Response{}, err
	} else if ok {
		u.mu.Lock()
		if _, had := u.stored[key]; !had {
			u.stored[key] = e
		}
		u.mu.Unlock()
		if r, ok := u.lookup(key); ok {
			return r, nil
		}
	}
	resp, err := m.inner.Complete(ctx, req)
	u.mu.Lock()
	u.stats.Misses++
	if err != nil {
		var le *llm.Error
		if errors.As(err, &le) {
			u.stats.Spent = u.stats.Spent.Add(le.Usage)
		}
		u.mu.Unlock()
		return resp, err
	}
	u.stats.Spent = u.stats.Spent.Add(resp.Usage)
	resp.Cached = false
	resp = llm.BoundResponse(resp)
	u.mu.Unlock()
	// Persist before returning: once the caller sees an answer it must
	// survive a kill, or it would be paid for again.
	e, err := u.store.be.put(ctx, u, Entry{Key: key, Purpose: req.Purpose, Model: m.id.Model, Response: resp})
	if err != nil {
		return resp, err
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	if prev, ok := u.fresh[key]; ok {
		e = prev // a concurrent call of this unit stored it first
	}
	u.fresh[key] = e
	u.noteUse(key)
	// The stored answer is the one handed out: when another writer stored
	// one first, this execution continues from theirs.
	r := e.Response
	r.Cached = false
	return r, nil
}

// lookup answers key from this execution's answers or the stored ones.
func (u *Unit) lookup(key string) (llm.Response, bool) {
	u.mu.Lock()
	defer u.mu.Unlock()
	e, ok := u.fresh[key]
	if !ok {
		if e, ok = u.stored[key]; !ok {
			return llm.Response{}, false
		}
		u.stats.Saved = u.stats.Saved.Add(e.Response.Usage)
	}
	u.noteUse(key)
	u.stats.Hits++
	// Bounded on the way out too: an answer stored by an earlier version
	// that accepted replies of any size must not reach the result files,
	// whose readers refuse values over 1 MiB.
	r := llm.BoundResponse(e.Response)
	r.Cached = true
	return r, true
}

func (u *Unit) noteUse(key string) {
	if !u.used[key] {
		u.used[key] = true
		u.order = append(u.order, key)
	}
}
