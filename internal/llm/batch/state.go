package batch

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"time"

	"github.com/impactbench/impactbench/internal/fsx"
	"github.com/impactbench/impactbench/internal/llm"
	"github.com/impactbench/impactbench/internal/sanitize"
)

// stateVersion names the state file format; a file of another version is
// refused like a corrupt one (it may list batches this code cannot read).
const stateVersion = "impactbench-batch-state/1"

// stateFile is the driver's only authoritative record: every batch ever
// created for this state path, with the requests it holds. It is rewritten
// atomically (temp file, fsync, rename, fsync of the directory) right after
// each batch is created and whenever a batch's state changes.
//
//	{
//	  "version": "impactbench-batch-state/1",
//	  "provider": "openai https://api.openai.com/v1 gpt-4o-mini",
//	  "batches": [
//	    {"id": "batch_abc", "submitted_at": "2026-11-22T10:00:00Z",
//	     "custom_ids": ["k1", "k2"], "request_hashes": ["9f…", "03…"],
//	     "state": "done", "provider_status": "completed",
//	     "counts": {"total": 2, "succeeded": 2, "errored": 0, "processing": 0},
//	     "results_saved": true}
//	  ]
//	}
//
// custom_ids and request_hashes are parallel arrays in submission order.
type stateFile struct {
	Version  string      `json:"version"`
	Provider string      `json:"provider,omitempty"`
	Batches  []*batchRec `json:"batches"`
}

type batchRec struct {
	ID          string    `json:"id"`
	SubmittedAt time.Time `json:"submitted_at"`
	CustomIDs   []string  `json:"custom_ids"`
	Hashes      []string  `json:"request_hashes"`
	State       State     `json:"state"`
	Raw         string    `json:"provider_status,omitempty"`
	Counts      Counts    `json:"counts"`
	// Saved: the decoded results are in the results directory.
	Saved bool `json:"results_saved,omitempty"`
}

// StateError is returned when the state file cannot be trusted. Run then
// refuses to start: resubmitting everything could pay a second time for
// batches that are already running or done.
type StateError struct {
	Path string
	Msg  string
	Err  error
}

func (e *StateError) Error() string {
	s := "batch state file " + e.Path + " " + e.Msg
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s + ". It lists the provider batches already created (and paid for), so nothing is submitted until it is sorted out: " +
		"restore it from a backup, or, if none of its batches is still needed, delete it and the directory " +
		ResultsDir(e.Path) + " and run again (every request not yet stored elsewhere is then submitted and paid for anew)"
}

func (e *StateError) Unwrap() error { return e.Err }

// ResultsDir is where Run keeps the decoded results of finished batches for
// the state file statePath (a cache: lost files are downloaded again while
// the provider keeps them, 29-30 days).
func ResultsDir(statePath string) string { return statePath + ".results" }

// Remove deletes a state file and its results directory. Call it once the
// results are stored for good (e.g. in the call store); a missing file is
// not an error.
func Remove(statePath string) error {
	err := os.Remove(statePath)
	if errors.Is(err, os.ErrNotExist) {
		err = nil
	}
	return errors.Join(err, os.RemoveAll(ResultsDir(statePath)))
}

// Bounds on the files under the call store's .cache that Run reads back
// (vars: tests lower them). A state file lists two 64-character strings
// per request, about 140 bytes: 256 MiB is nearly two million requests,
// far more than one run holds in flight. A batch's saved results are its
// decoded answers (at most llm.MaxReplyBytes each, a few KiB usually):
// larger ones are downloaded again, as missing ones are.
var (
	maxStateBytes   int64 = 256 << 20
	maxResultsBytes int64 = 512 << 20
)

// loadState reads the state file: missing is a fresh one; a file that is
// not a regular one (a named pipe would block the read), or is over
// maxStateBytes, is refused like a corrupt one.
func loadState(path, identity string) (*stateFile, error) {
	b, err := fsx.ReadFile(path, maxStateBytes)
	if errors.Is(err, os.ErrNotExist) {
		return &stateFile{Version: stateVersion, Provider: identity}, nil
	}
	var nr *fsx.NotRegularError
	if errors.As(err, &nr) {
		return nil, &StateError{Path: path, Msg: "is " + nr.What + ", not a regular file"}
	}
	var tl *fsx.TooLargeError
	if errors.As(err, &tl) {
		return nil, &StateError{Path: path, Msg: "is larger than " + strconv.FormatInt(maxStateBytes>>20, 10) + " MiB, the limit for a state file"}
	}
	if err != nil {
		return nil, fmt.Errorf("batch: read state: %w", err)
	}
	var st stateFile
	if err := json.Unmarshal(b, &st); err != nil {
		return nil, &StateError{Path: path, Msg: "is corrupt (torn write, disk error or manual edit?)", Err: err}
	}
	if st.Version != stateVersion {
		return nil, &StateError{Path: path, Msg: fmt.Sprintf("has version %q, this impactbench reads %q", st.Version, stateVersion)}
	}
	for i, b := range st.Batches {
		if b == nil || b.ID == "" || len(b.CustomIDs) != len(b.Hashes) {
			return nil, &StateError{Path: path, Msg: fmt.Sprintf("is inconsistent (batch %d has no id or mismatched custom_ids/request_hashes)", i)}
		}
	}
	// Earlier versions wrote the base_url with its credentials: such a file
	// is the same endpoint, and is rewritten without them.
	stored := sanitize.URLsIn(st.Provider)
	if identity != "" && stored != "" && stored != identity {
		return nil, &StateError{Path: path, Msg: fmt.Sprintf("was written for %q, not %q (use one state file per model)", stored, identity)}
	}
	if st.Provider == "" || stored == identity {
		st.Provider = identity
	}
	return &st, nil
}

func saveState(path string, st *stateFile) error {
	b, err := json.MarshalIndent(st, "", " ")
	if err != nil {
		return fmt.Errorf("batch: encode state: %w", err)
	}
	return writeAtomic(path, b)
}

// cacheFile holds one finished batch's decoded results.
type cacheFile struct {
	Version string         `json:"version"`
	BatchID string         `json:"batch_id"`
	Results []cachedResult `json:"results"`
}

type cachedResult struct {
	CustomID string        `json:"custom_id"`
	Response *llm.Response `json:"response,omitempty"`
	Error    *cachedError  `json:"error,omitempty"`
}

type cachedError struct {
	Kind       llm.ErrorKind `json:"kind"`
	StatusCode int           `json:"status,omitempty"`
	Provider   string        `json:"provider,omitempty"`
	Model      string        `json:"model,omitempty"`
	Code       string        `json:"code,omitempty"`
	Message    string        `json:"message,omitempty"`
	RequestID  string        `json:"request_id,omitempty"`
	Hint       string        `json:"hint,omitempty"`
	Usage      llm.Usage     `json:"usage"`
}

const cacheVersion = "impactbench-batch-results/1"

var unsafeName = regexp.MustCompile(`[^A-Za-z0-9_.-]+`)

func cachePath(statePath, batchID string) string {
	return filepath.Join(ResultsDir(statePath), unsafeName.ReplaceAllString(batchID, "_")+".json")
}

func saveResults(statePath, batchID string, rs []Result) error {
	f := cacheFile{Version: cacheVersion, BatchID: batchID, Results: make([]cachedResult, len(rs))}
	for i, r := range rs {
		c := cachedResult{CustomID: r.CustomID}
		if r.Err == nil {
			resp := r.Resp
			c.Response = &resp
		} else {
			e := asLLMError(r.Err)
			c.Error = &cachedError{Kind: e.Kind, StatusCode: e.StatusCode, Provider: e.Provider, Model: e.Model,
				Code: e.Code, Message: e.Message, RequestID: e.RequestID, Hint: e.Hint, Usage: e.Usage}
		}
		f.Results[i] = c
	}
	b, err := json.Marshal(f)
	if err != nil {
		return fmt.Errorf("batch: encode results of %s: %w", batchID, err)
	}
	return writeAtomic(cachePath(statePath, batchID), b)
}

// loadResults reads a batch's saved results; ok is false when they are
// missing or unreadable (they are then downloaded again): a file that is
// not a regular one, or over maxResultsBytes, is not read.
func loadResults(statePath, batchID string) ([]Result, bool) {
	b, err := fsx.ReadFile(cachePath(statePath, batchID), maxResultsBytes)
	if err != nil {
		return nil, false
	}
	var f cacheFile
	if json.Unmarshal(b, &f) != nil || f.Version != cacheVersion || f.BatchID != batchID {
		return nil, false
	}
	out := make([]Result, len(f.Results))
	for i, c := range f.Results {
		r := Result{CustomID: c.CustomID}
		switch {
		case c.Error != nil:
			e := c.Error
			r.Err = &llm.Error{Kind: e.Kind, StatusCode: e.StatusCode, Provider: e.Provider, Model: e.Model,
				Code: e.Code, Message: e.Message, RequestID: e.RequestID, Hint: e.Hint, Usage: e.Usage}
		case c.Response != nil:
			r.Resp = *c.Response
		default:
			return nil, false
		}
		out[i] = r
	}
	return out, true
}

// asLLMError returns err as an *llm.Error, wrapping foreign errors as
// server errors (worth another try).
func asLLMError(err error) *llm.Error {
	var e *llm.Error
	if errors.As(err, &e) {
		return e
	}
	return &llm.Error{Kind: llm.KindServer, Message: err.Error(), Err: err}
}

// writeAtomic replaces path with data so that a crash leaves either the old
// or the new file, never a torn one (package fsx). Batch state and results
// hold whole prompts and answers, so they are private like the call store
// they live in: 0600 files in 0700 directories.
func writeAtomic(path string, data []byte) error {
	if err := fsx.WriteFile(path, data, fsx.Private); err != nil {
		return fmt.Errorf("batch: %w", err)
	}
	return nil
}
