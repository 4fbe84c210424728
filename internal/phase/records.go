package phase

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"time"

	"github.com/impactbench/impactbench/internal/fsx"
)

// Records are a benchmark's phase records (.cache/<bench>/manifest.json):
// per output, the fingerprints of the inputs it was made from, so a rerun
// can skip an up-to-date phase (upstream's semantics) yet notice — and
// say — when an input changed underneath it.
type Records struct {
	path string
	mu   sync.Mutex
	m    map[string]Record
	// base are records read beneath m and never written (a shard's run
	// reads the benchmark's records and writes only its own file, so
	// shards running at once never overwrite each other's).
	base map[string]Record
	// begun are the records Begin replaced, for Abandon.
	begun map[string]begunRecord
}

// begunRecord is key's record before Begin (ok: there was one).
type begunRecord struct {
	r  Record
	ok bool
}

// Record is one output's phase record.
type Record struct {
	Inputs   map[string]string `json:"inputs"`
	Output   string            `json:"output_sha256"`
	Failed   int               `json:"failed"`
	Finished time.Time         `json:"finished"`
	// Pending marks an output being replaced (see Begin).
	Pending bool `json:"pending,omitempty"`
}

// maxRecordsBytes bounds the records file: a few hundred bytes per output.
const maxRecordsBytes = 64 << 20

// LoadRecords reads the records at path (a regular file, bounded: a pipe
// or a huge file there is not waited for); an unreadable file is treated
// as empty: its phases just rerun (free through the call store).
func LoadRecords(path string) *Records {
	rs := &Records{path: path, m: map[string]Record{}}
	if b, err := fsx.ReadFile(path, maxRecordsBytes); err == nil {
		_ = json.Unmarshal(b, &rs.m)
	}
	return rs
}

// LoadRecordsOver reads the records at path over those at base: Get
// finds a key in path's records, else in base's; Put writes path only.
func LoadRecordsOver(base, path string) *Records {
	rs := LoadRecords(path)
	rs.base = LoadRecords(base).m
	return rs
}

// Get is key's record.
func (rs *Records) Get(key string) (Record, bool) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	r, ok := rs.m[key]
	if !ok {
		r, ok = rs.base[key]
	}
	return r, ok
}

// Put replaces key's record and writes the file. The file is private like
// the rest of the call store beside it: it names every input's fingerprint.
func (rs *Records) Put(key string, r Record) error {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	rs.m[key] = r
	return rs.write()
}

// write writes the file; rs.mu is held.
func (rs *Records) write() error {
	b, err := json.MarshalIndent(rs.m, "", "  ")
	if err != nil {
		return err
	}
	return fsx.WriteFile(rs.path, b, fsx.Private)
}

// UpToDate decides whether a phase whose output exists may be skipped:
// only when its recorded inputs match (outputs made elsewhere — e.g. by
// upstream — have no record and are trusted, as upstream does). It
// returns a reason, with output's path relative to base. force never
// skips.
func (rs *Records) UpToDate(force bool, key, base, output string, inputs map[string]string) (bool, string) {
	d := rs.Decide(force, key, base, output, inputs)
	return d.Skip, d.Why
}

// Decision is UpToDate's answer.
type Decision struct {
	Skip bool
	Why  string
	// Foreign: the output is kept although this tool did not write it as
	// it stands (made elsewhere, or edited by hand), so nothing vouches
	// that it is whole; a file it wrote and recorded is vouched for by its
	// hash.
	Foreign bool
}

// Decide is UpToDate, saying also whether a kept output is foreign.
func (rs *Records) Decide(force bool, key, base, output string, inputs map[string]string) Decision {
	if force {
		return Decision{Why: "forced"}
	}
	if _, err := os.Stat(output); err != nil {
		return Decision{}
	}
	name := rel(base, output)
	rec, ok := rs.Get(key)
	if !ok {
		return Decision{Skip: true, Foreign: true, Why: fmt.Sprintf("%s exists (use --force to redo)", name)}
	}
	if rec.Pending {
		return Decision{Why: fmt.Sprintf("the last run stopped while writing %s; redoing it from stored calls", name)}
	}
	if sha, err := FileSHA(output); err == nil && rec.Output != "" && sha != rec.Output {
		return Decision{Skip: true, Foreign: true, Why: fmt.Sprintf("%s exists and was edited by hand; keeping it (use --force to redo)", name)}
	}
	if ch := ChangedInputs(rec.Inputs, inputs); len(ch) > 0 {
		return Decision{Why: fmt.Sprintf("inputs changed since %s was made: %v", name, ch)}
	}
	if rec.Failed > 0 {
		return Decision{Why: fmt.Sprintf("%d row(s) failed last time; retrying them", rec.Failed)}
	}
	return Decision{Skip: true, Why: fmt.Sprintf("%s is up to date (use --force to redo)", name)}
}

// Begin marks key's output as being replaced, before it is written. A
// process killed after the output is in place but before cost.json and the
// record are would otherwise leave an output that the next run trusts as
// made elsewhere (no record) or as edited by hand (the old record's hash):
// it would skip the phase, and cost.json would lack its entry for good.
func (rs *Records) Begin(key string, inputs map[string]string) error {
	rs.mu.Lock()
	if rs.begun == nil {
		rs.begun = map[string]begunRecord{}
	}
	r, ok := rs.m[key]
	rs.begun[key] = begunRecord{r, ok}
	rs.mu.Unlock()
	return rs.Put(key, Record{Inputs: inputs, Pending: true, Finished: time.Now().UTC()})
}

// Abandon undoes Begin for an output that was not replaced after all (its
// write was refused, the file left as it was): its record is put back as
// it was, so the next run neither says the last one "stopped while
// writing" it nor redoes it for that reason.
func (rs *Records) Abandon(key string) error {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	b, ok := rs.begun[key]
	if !ok {
		return nil
	}
	delete(rs.begun, key)
	if b.ok {
		rs.m[key] = b.r
	} else {
		delete(rs.m, key)
	}
	return rs.write()
}

// Done records key's output as made from inputs, with failed rows.
func (rs *Records) Done(key, output string, inputs map[string]string, failed int) error {
	sha, err := FileSHA(output)
	if err != nil {
		return err
	}
	return rs.Put(key, Record{Inputs: inputs, Output: sha, Failed: failed, Finished: time.Now().UTC()})
}

// ChangedInputs names the inputs whose fingerprints differ (sorted).
func ChangedInputs(old, cur map[string]string) []string {
	var out []string
	for k, v := range cur {
		if old[k] != v {
			out = append(out, k)
		}
	}
	for k := range old {
		if _, ok := cur[k]; !ok {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}

// Fingerprint hashes any JSON-encodable values.
func Fingerprint(vs ...any) string {
	h := sha256.New()
	enc := json.NewEncoder(h)
	for _, v := range vs {
		_ = enc.Encode(v)
	}
	return hex.EncodeToString(h.Sum(nil))[:32]
}

// FileSHA is the fingerprint of a file's bytes.
func FileSHA(path string) (string, error) {
	f, err := fsx.Open(path) // not a named pipe (it blocks) nor a device (it may never end)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", fmt.Errorf("hash %s: %w", path, err)
	}
	return hex.EncodeToString(h.Sum(nil))[:32], nil
}

func rel(base, p string) string {
	if s, err := filepath.Rel(base, p); err == nil {
		return s
	}
	return p
}
