// Package callstore makes resume free: every completed model call is stored,
// under a key derived from everything that determines its answer, in a small
// file per unit of work (one conversation, one judged row, one metric's
// scenarios). Rerunning a unit replays it through the store, so calls whose
// answers are stored cost nothing, and a changed prompt or definition misses
// exactly the calls whose messages changed.
//
// Files are rewritten atomically after every fresh call, so a process killed
// at any point (SIGKILL included) loses at most the call in flight.
package callstore

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/impactbench/impactbench/internal/fsx"
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

type unitFile struct {
	Version string          `json:"version"`
	Calls   []Entry         `json:"calls"`
	Result  json.RawMessage `json:"result,omitempty"`
	// ResultKey fingerprints the inputs the result was computed from.
	ResultKey string `json:"result_key,omitempty"`
}

// Store is a directory of unit files. They hold whole transcripts and the
// simulated user's hidden thoughts, so the store is private to its owner:
// 0600 files in 0700 directories, whatever the umask (package fsx), and a
// store directory an earlier version made world-readable is closed to
// others on its first write.
type Store struct {
	dir   string
	force bool
	wiped sync.Map // unit names already opened under force

	secureOnce sync.Once
	secureErr  error
}

// secure creates the store's directory 0700, or makes an existing one
// 0700, once per Store: everything below it is then private whatever the
// modes of what is inside. The chmod is best effort (a directory another
// user made cannot be changed, and the files written are 0600 anyway).
func (s *Store) secure() error {
	s.secureOnce.Do(func() {
		if err := fsx.MkdirAll(s.dir, fsx.Private); err != nil {
			s.secureErr = fmt.Errorf("callstore: %w", err)
			return
		}
		_ = os.Chmod(s.dir, 0o700)
	})
	return s.secureErr
}

// Open returns a store rooted at dir. With force, answers stored before this
// store was opened are ignored (and overwritten), like upstream's run.force;
// a unit opened again later in the same invocation keeps what this
// invocation stored in it (a conversation started while scenarios were
// still being written is taken over, not paid for twice).
func Open(dir string, force bool) *Store { return &Store{dir: dir, force: force} }

// trailer closes a unit file in journal form: the unit's result.
type trailer struct {
	Version   string          `json:"version"`
	Result    json.RawMessage `json:"result"`
	ResultKey string          `json:"result_key"`
}

// journalLine is any line of a journal or of a unit file in journal form:
// a call (Entry) or the closing trailer.
type journalLine struct {
	Entry
	Version   string          `json:"version"`
	Result    json.RawMessage `json:"result"`
	ResultKey string          `json:"result_key"`
}

// parseUnit reads a unit file in either of its forms: compact (one JSON
// object, written when a unit is rewritten) or journal (one line per call
// and a closing trailer: the unit's journal renamed into place when the
// unit was completed in a single execution, which saves creating a second
// file per unit). ok is false for an unreadable or foreign file. With
// resultOnly, calls are not decoded.
func parseUnit(b []byte, resultOnly bool) (f unitFile, ok bool) {
	if json.Unmarshal(b, &f) == nil {
		return f, f.Version == formatVersion
	}
	f = unitFile{}
	lines := bytes.Split(bytes.TrimRight(b, "\n"), []byte("\n"))
	if resultOnly && len(lines) > 0 {
		lines = lines[len(lines)-1:]
	}
	for _, line := range lines {
		var l journalLine
		if len(line) == 0 || json.Unmarshal(line, &l) != nil {
			continue // a torn line is a call whose answer was never handed out
		}
		switch {
		case l.Key != "":
			f.Calls = append(f.Calls, l.Entry)
		case l.Version == formatVersion:
			f.Version, f.Result, f.ResultKey = l.Version, l.Result, l.ResultKey
		}
	}
	return f, f.Version == formatVersion
}

// ReadResult reads a unit's stored result from disk (also under force,
// where Unit ignores stored state): phase outputs are assembled from it.
func (s *Store) ReadResult(name string, out any) (inputKey string, ok bool) {
	b, err := os.ReadFile(filepath.Join(s.dir, filepath.FromSlash(name)+".json"))
	if err != nil {
		return "", false
	}
	f, ok := parseUnit(b, true)
	if !ok || len(f.Result) == 0 {
		return "", false
	}
	if json.Unmarshal(f.Result, out) != nil {
		return "", false
	}
	return f.ResultKey, true
}

// firstOpen reports whether name is opened for the first time since the
// store was opened (and remembers it).
func (s *Store) firstOpen(name string) bool {
	_, seen := s.wiped.LoadOrStore(name, struct{}{})
	return !seen
}

// Dir is the store's root directory.
func (s *Store) Dir() string { return s.dir }

// Unit is one unit of work's stored calls. Safe for concurrent use (a judge
// panel may call several judges at once).
type Unit struct {
	store *Store
	path  string
	force bool

	mu      sync.Mutex
	stored  map[string]Entry // from disk
	used    map[string]bool  // keys answered (stored or fresh) in this execution
	order   []string         // keys in first-use order
	fresh   map[string]Entry
	result  json.RawMessage
	resKey  string
	dirty   bool
	persist error
	stats   Stats
	// jf is the journal, held open between a unit's calls: opening a file
	// per call was a fifth of the tool's CPU time in a 26,000-call run.
	jf      *os.File
	dirMade bool
	// pristine: the unit had no file and no journal when opened (or force
	// removed them), so its journal holds exactly the calls it used.
	pristine bool
}

// Stats counts a unit's calls in this execution.
type Stats struct {
	Hits   int       // answered from the store
	Misses int       // sent to the model
	Spent  llm.Usage // usage of fresh calls (what this execution paid)
	Saved  llm.Usage // usage of stored answers reused
}

// Unit opens (or creates) the unit file name (a relative path such as
// "claude-haiku-4-5/sim/m01_s001_v01__s0"). A corrupt file is treated as
// empty and replaced on the next write, never as fatal.
func (s *Store) Unit(name string) (*Unit, error) {
	if name == "" || strings.Contains(name, "..") {
		return nil, fmt.Errorf("callstore: invalid unit name %q", name)
	}
	u := &Unit{
		store:  s,
		path:   filepath.Join(s.dir, filepath.FromSlash(name)+".json"),
		stored: map[string]Entry{},
		used:   map[string]bool{},
		fresh:  map[string]Entry{},
	}
	if s.force && s.firstOpen(name) {
		// Stored answers are to be ignored; a stale journal must not
		// resurface in a later, unforced run.
		for _, p := range []string{u.journal(), u.path} {
			if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
				return nil, fmt.Errorf("callstore: %w", err)
			}
		}
		u.pristine, u.force = true, true
		return u, nil
	}
	b, err := os.ReadFile(u.path)
	switch {
	case err == nil:
		if f, ok := parseUnit(b, false); ok {
			for _, e := range f.Calls {
				u.stored[e.Key] = e
			}
			u.result, u.resKey = f.Result, f.ResultKey
		} // else unreadable or old format: recompute, overwrite later
	case !errors.Is(err, os.ErrNotExist):
		return nil, fmt.Errorf("callstore: read %s: %w", u.path, err)
	}
	hadJournal, jerr := u.readJournal()
	if jerr != nil {
		return nil, jerr
	}
	u.pristine = errors.Is(err, os.ErrNotExist) && !hadJournal
	return u, nil
}

// journal is the unit's append-only log of calls answered since the unit
// file was last compacted: one JSON line per call, so recording a call is a
// single append instead of rewriting the unit (and its directory entry).
func (u *Unit) journal() string { return strings.TrimSuffix(u.path, ".json") + ".jsonl" }

// readJournal merges journaled calls. A torn last line (the process died
// mid-append) is ignored: that call's answer was never handed out.
func (u *Unit) readJournal() (exists bool, err error) {
	b, err := os.ReadFile(u.journal())
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return true, fmt.Errorf("callstore: read %s: %w", u.journal(), err)
	}
	for _, line := range bytes.Split(b, []byte("\n")) {
		var e Entry
		if len(line) == 0 || json.Unmarshal(line, &e) != nil || e.Key == "" {
			continue
		}
		u.stored[e.Key] = e
	}
	return true, nil
}

// appendJournal durably-enough records one call: the write reaches the page
// cache before the answer is returned, so it survives the process being
// killed (not a power cut; phase outputs are fsynced).
func (u *Unit) appendJournal(e Entry) error {
	line, err := json.Marshal(e)
	if err != nil {
		return fmt.Errorf("callstore: encode %s: %w", u.path, err)
	}
	return u.appendLine(append(line, '\n'))
}

// appendLine appends one line to the journal, opening it if needed.
func (u *Unit) appendLine(line []byte) error {
	if u.jf == nil {
		if err := u.mkdir(); err != nil {
			return err
		}
		f, err := fsx.OpenAppend(u.journal(), fsx.Private)
		if err != nil {
			return fmt.Errorf("callstore: %w", err)
		}
		u.jf = f
	}
	if _, err := u.jf.Write(line); err != nil {
		return fmt.Errorf("callstore: append %s: %w", u.journal(), err)
	}
	return nil
}

func (u *Unit) mkdir() error {
	if u.dirMade {
		return nil
	}
	if err := u.store.secure(); err != nil {
		return err
	}
	if err := fsx.MkdirAll(filepath.Dir(u.path), fsx.Private); err != nil {
		return fmt.Errorf("callstore: %w", err)
	}
	u.dirMade = true
	return nil
}

// closeJournal closes the journal file if it is open.
func (u *Unit) closeJournal() error {
	if u.jf == nil {
		return nil
	}
	err := u.jf.Close()
	u.jf = nil
	if err != nil {
		return fmt.Errorf("callstore: close %s: %w", u.journal(), err)
	}
	return nil
}

// Close releases the unit's open journal. The calls are already on disk;
// Close only frees the file descriptor, and the unit stays usable.
func (u *Unit) Close() error {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.closeJournal()
}

// Result returns the stored result if it was computed from inputs with the
// same fingerprint.
func (u *Unit) Result(inputKey string, out any) bool {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.force || len(u.result) == 0 || u.resKey != inputKey {
		return false
	}
	return json.Unmarshal(u.result, out) == nil
}

// SetResult records the unit's result and persists the file (keeping only the
// calls used in this execution, so stale answers of changed prompts are pruned).
func (u *Unit) SetResult(inputKey string, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("callstore: encode result: %w", err)
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	u.result, u.resKey = b, inputKey
	if u.pristine && u.persist == nil {
		return u.commitJournalLocked()
	}
	if err := u.writeLocked(); err != nil {
		return err
	}
	if err := u.closeJournal(); err != nil {
		return err
	}
	// Everything the journal held is now in the compact file.
	if err := os.Remove(u.journal()); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("callstore: %w", err)
	}
	return nil
}

// commitJournalLocked completes a pristine unit by closing its journal with
// the result and renaming it into place: the journal already holds exactly
// the calls the unit used, in order, so rewriting them would only cost a
// second file creation (the dearest file operation on many file systems).
func (u *Unit) commitJournalLocked() error {
	line, err := json.Marshal(trailer{Version: formatVersion, Result: u.result, ResultKey: u.resKey})
	if err != nil {
		return fmt.Errorf("callstore: encode %s: %w", u.path, err)
	}
	if err := u.appendLine(append(line, '\n')); err != nil {
		return err
	}
	if err := u.closeJournal(); err != nil {
		return err
	}
	if err := os.Rename(u.journal(), u.path); err != nil {
		return fmt.Errorf("callstore: %w", err)
	}
	// From here on the unit has a file: a second SetResult or later calls
	// take the general path, which keeps what the file holds.
	u.pristine = false
	return nil
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
	u.mu.Lock()
	if e, ok := u.fresh[key]; ok {
		u.noteUse(key)
		u.stats.Hits++
		u.mu.Unlock()
		// Bounded on the way out too: an answer stored by an earlier
		// version that accepted replies of any size must not reach the
		// result files, whose readers refuse values over 1 MiB.
		r := llm.BoundResponse(e.Response)
		r.Cached = true
		return r, nil
	}
	if e, ok := u.stored[key]; ok && !u.force {
		u.noteUse(key)
		u.stats.Hits++
		u.stats.Saved = u.stats.Saved.Add(e.Response.Usage)
		u.mu.Unlock()
		// Bounded on the way out too: an answer stored by an earlier
		// version that accepted replies of any size must not reach the
		// result files, whose readers refuse values over 1 MiB.
		r := llm.BoundResponse(e.Response)
		r.Cached = true
		return r, nil
	}
	u.mu.Unlock()

	resp, err := m.inner.Complete(ctx, req)
	u.mu.Lock()
	defer u.mu.Unlock()
	u.stats.Misses++
	if err != nil {
		var le *llm.Error
		if errors.As(err, &le) {
			u.stats.Spent = u.stats.Spent.Add(le.Usage)
		}
		return resp, err
	}
	u.stats.Spent = u.stats.Spent.Add(resp.Usage)
	resp.Cached = false
	resp = llm.BoundResponse(resp)
	e := Entry{Key: key, Purpose: req.Purpose, Model: m.id.Model, Response: resp}
	u.fresh[key] = e
	u.noteUse(key)
	// Persist before returning: once the caller sees an answer it must
	// survive a kill, or we would pay for it again.
	if werr := u.appendJournal(e); werr != nil {
		u.persist = werr
		return resp, werr
	}
	return resp, nil
}

func (u *Unit) noteUse(key string) {
	if !u.used[key] {
		u.used[key] = true
		u.order = append(u.order, key)
	}
}

// writeLocked compacts the unit into its file: the calls used in this
// execution (stale answers of changed prompts are pruned) and the result.
func (u *Unit) writeLocked() error {
	f := unitFile{Version: formatVersion, Result: u.result, ResultKey: u.resKey}
	for _, k := range u.order {
		if e, ok := u.fresh[k]; ok {
			f.Calls = append(f.Calls, e)
		} else if e, ok := u.stored[k]; ok {
			f.Calls = append(f.Calls, e)
		}
	}
	b, err := json.Marshal(f)
	if err != nil {
		return fmt.Errorf("callstore: encode %s: %w", u.path, err)
	}
	if err := u.mkdir(); err != nil {
		return err
	}
	if err := fsx.WriteFile(u.path, b, fsx.Private); err != nil {
		return fmt.Errorf("callstore: %w", err)
	}
	return nil
}
