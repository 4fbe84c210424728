package batch

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/impactbench/impactbench/internal/llm"
)

// Defaults of Options.
const (
	DefaultPollInterval = 15 * time.Second // Inspect's tick
	DefaultMaxRounds    = 3
	DefaultMaxErrors    = 10
	// defaultMaxRequests applies to providers that are not Planners.
	defaultMaxRequests = 50_000
)

// Options tune Run. The zero value uses the defaults.
type Options struct {
	// PollInterval is the wait between two polls of the running batches.
	PollInterval time.Duration
	// MaxRounds is how often one request may be submitted within one Run:
	// requests that come back with a retryable error (server error, expired,
	// cancelled, rate limit) go into a new batch until then. Errors that
	// trying again cannot fix (invalid request, auth, billing) are final at
	// once.
	MaxRounds int
	// MaxRequests and MaxBytes cap one batch below the provider's limits
	// (0: the provider's limits; bytes are filled to 95% of the provider's).
	MaxRequests int
	MaxBytes    int64
	// MaxErrors is how many provider calls (submit, poll, download) in a row
	// may fail with a retryable error before Run gives up; the state file
	// keeps everything for the next Run.
	MaxErrors int
	// OnProgress, if set, is called after every poll round and submission.
	OnProgress func(Progress)
	// Logger gets one line per batch event; nil logs nothing.
	Logger *slog.Logger
}

// Progress is a snapshot of a Run.
type Progress struct {
	Items     int // distinct requests (custom_ids)
	Succeeded int // answered
	Failed    int // finished with an error
	InFlight  int // in running batches
	Queued    int // waiting to be submitted or resubmitted
	Batches   int // running batches
	Submitted int // batches this Run created
	Reused    int // answers taken from batches of earlier Runs
}

func (o Options) withDefaults() Options {
	if o.PollInterval <= 0 {
		o.PollInterval = DefaultPollInterval
	}
	if o.MaxRounds <= 0 {
		o.MaxRounds = DefaultMaxRounds
	}
	if o.MaxErrors <= 0 {
		o.MaxErrors = DefaultMaxErrors
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return o
}

// entry is one distinct request of a Run.
type entry struct {
	item  Item
	hash  string
	done  bool
	res   Result
	batch string // id of the running batch holding it ("" if none)
	tries int    // submissions in this Run (a batch inherited from an earlier Run counts)
	last  error  // latest retryable error, while waiting for resubmission

	sized bool
	size  int64
}

type runner struct {
	p         Provider
	planner   Planner
	path      string
	opts      Options
	st        *stateFile
	byID      map[string]*entry
	order     []*entry // distinct entries in input order
	active    []*batchRec
	errs      int  // consecutive retryable provider failures
	hold      bool // a submission failed in this round
	submitted int
	reused    int
}

// Run sends items through p's batch API and returns one Result per item, in
// the order of items. statePath records the batches created (see stateFile);
// run again with the same path and items after a crash or Ctrl-C and Run
// picks up where it stopped: requests already in a batch are polled, not
// submitted again, and results already downloaded are read from
// ResultsDir(statePath). Successful answers recorded in the state are reused
// by later Runs for the same custom_id and request; errors are not (a later
// Run submits those requests again).
//
// Run returns an error only when it cannot go on: ctx is done, the state
// file cannot be read or written (a *StateError for an untrustworthy file),
// or the provider refuses the batch calls themselves (bad key, too many
// failures in a row). Per-request failures are Results with Err set.
// Only one Run may use a state path at a time.
func Run(ctx context.Context, p Provider, statePath string, items []Item, opts Options) ([]Result, error) {
	if len(items) == 0 {
		return nil, nil
	}
	r := &runner{p: p, path: statePath, opts: opts.withDefaults(), byID: make(map[string]*entry, len(items))}
	r.planner, _ = p.(Planner)
	for _, it := range items {
		if it.CustomID == "" {
			return nil, errors.New("batch: an item has an empty custom_id")
		}
		h := requestHash(it.Req)
		if e, ok := r.byID[it.CustomID]; ok {
			if e.hash != h {
				return nil, fmt.Errorf("batch: custom_id %q is used by two different requests", it.CustomID)
			}
			continue
		}
		e := &entry{item: it, hash: h}
		r.byID[it.CustomID] = e
		r.order = append(r.order, e)
	}
	identity := ""
	if r.planner != nil {
		identity = r.planner.Identity()
	}
	st, err := loadState(statePath, identity)
	if err != nil {
		return nil, err
	}
	r.st = st
	r.resume()

	for first := true; ; first = false {
		if !first {
			if err := sleep(ctx, r.opts.PollInterval); err != nil {
				return nil, r.stopped(err)
			}
		}
		if err := r.sweep(ctx); err != nil {
			return nil, r.stopped(err)
		}
		if err := r.submit(ctx); err != nil {
			return nil, r.stopped(err)
		}
		pr := r.progress()
		if r.opts.OnProgress != nil {
			r.opts.OnProgress(pr)
		}
		if pr.Batches == 0 && pr.Queued == 0 {
			break
		}
	}
	out := make([]Result, len(items))
	seeds, _ := p.(seedReporter)
	for i, it := range items {
		res := r.byID[it.CustomID].res
		res.CustomID = it.CustomID
		if seeds != nil && res.Err == nil {
			res.Resp.SentSeed, res.Resp.NoSeed = seeds.sentSeed(ctx, it.Req, res.Resp)
		}
		out[i] = res
	}
	return out, nil
}

// seedReporter is implemented by providers whose request bodies may carry a
// sampling seed. A result is decoded without its request, so its answer
// cannot say which seed was sent; the run block of a conversation records
// it, and a batched answer must record what a real-time one would.
type seedReporter interface {
	sentSeed(ctx context.Context, req llm.Request, resp llm.Response) (*int64, string)
}

func (r *runner) stopped(err error) error {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("batch: stopped (%w); the batches are recorded in %s: run again to resume", err, r.path)
	}
	return err
}

// matches returns the entry that item i of b belongs to, if it is one of
// this Run's requests unchanged.
func (r *runner) matches(b *batchRec, i int) *entry {
	e := r.byID[b.CustomIDs[i]]
	if e == nil || e.hash != b.Hashes[i] {
		return nil
	}
	return e
}

// resume applies what the state file knows: answers of finished batches,
// and the running batches holding this Run's requests.
func (r *runner) resume() {
	for _, b := range r.st.Batches {
		relevant := false
		for i := range b.CustomIDs {
			if r.matches(b, i) != nil {
				relevant = true
				break
			}
		}
		if !relevant {
			continue
		}
		if b.State.Finished() && b.Saved {
			if rs, ok := loadResults(r.path, b.ID); ok {
				got := join(rs)
				for i, id := range b.CustomIDs {
					e := r.matches(b, i)
					if e == nil || e.done {
						continue
					}
					res, ok := got[id]
					res = refusalAnswer(e.item.Req, res)
					if ok && res.Err == nil {
						e.done, e.res, e.batch, e.last = true, res, "", nil
						r.reused++
					} else if e.batch == "" {
						e.last = res.Err // an earlier Run's failure: submitted again
					}
				}
				continue
			}
		}
		// Running, or finished without readable saved results: poll it.
		r.active = append(r.active, b)
		for i := range b.CustomIDs {
			if e := r.matches(b, i); e != nil && !e.done {
				e.batch, e.tries = b.ID, 1
			}
		}
		r.opts.Logger.Info("batch: resuming", "batch", b.ID, "state", string(b.State), "requests", len(b.CustomIDs))
	}
}

// join indexes results by custom_id: a success wins over an error, and the
// first of equals wins, so duplicated lines are harmless.
func join(rs []Result) map[string]Result {
	got := make(map[string]Result, len(rs))
	for _, res := range rs {
		if prev, ok := got[res.CustomID]; ok && (prev.Err == nil || res.Err != nil) {
			continue
		}
		got[res.CustomID] = res
	}
	return got
}

// providerError decides whether a failed provider call ends the Run.
func (r *runner) providerError(ctx context.Context, op string, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if !llm.IsRetryable(err) {
		return fmt.Errorf("batch: %s: %w", op, err)
	}
	r.errs++
	if r.errs >= r.opts.MaxErrors {
		return fmt.Errorf("batch: %s: %d provider calls in a row failed, giving up (run again to resume): %w", op, r.errs, err)
	}
	r.opts.Logger.Warn("batch: provider call failed, will retry", "op", op, "err", err)
	return nil
}

// sweep polls the running batches and collects the results of those that
// finished.
func (r *runner) sweep(ctx context.Context) error {
	still := r.active[:0:0]
	for i, b := range r.active {
		done, err := r.check(ctx, b)
		if err != nil {
			r.active = append(still, r.active[i:]...)
			return err
		}
		if !done {
			still = append(still, b)
		}
	}
	r.active = still
	return nil
}

func (r *runner) check(ctx context.Context, b *batchRec) (finished bool, err error) {
	s, err := r.p.Poll(ctx, b.ID)
	if err != nil {
		return false, r.providerError(ctx, "poll "+b.ID, err)
	}
	b.Raw, b.Counts = s.Raw, s.Counts
	if !s.State.Finished() {
		r.errs = 0
		return false, nil
	}
	var rs []Result
	if s.State == StateFailed {
		rs = failedResults(b, s)
	} else if rs, err = r.p.Results(ctx, b.ID); err != nil {
		var le *llm.Error
		if !errors.As(err, &le) || le.StatusCode != http.StatusNotFound {
			return false, r.providerError(ctx, "results of "+b.ID, err)
		}
		// The batch is known but its results are gone (OpenAI deletes
		// output files after 30 days, Anthropic archives results after
		// 29): its requests count as unanswered and go out again.
		r.opts.Logger.Warn("batch: results no longer available; their requests are submitted again", "batch", b.ID, "err", err)
		rs = nil
	}
	r.errs = 0
	if err := saveResults(r.path, b.ID, rs); err != nil {
		return false, err
	}
	b.State, b.Saved = s.State, true
	if err := saveState(r.path, r.st); err != nil {
		return false, err
	}
	r.opts.Logger.Info("batch: finished", "batch", b.ID, "state", string(s.State), "status", s.Raw, "results", len(rs))
	r.apply(b, rs)
	return true, nil
}

// failedResults gives every request of a batch that failed as a whole its
// error: its own line error, or the batch's failure.
func failedResults(b *batchRec, s Status) []Result {
	rs := make([]Result, len(b.CustomIDs))
	for i, id := range b.CustomIDs {
		var err *llm.Error
		switch {
		case s.LineErrors[i+1] != nil:
			err = s.LineErrors[i+1]
		case len(s.LineErrors) > 0:
			err = &llm.Error{Kind: llm.KindServer, Code: "batch_failed", Message: "not run: batch " + b.ID + " was rejected because of other requests in it"}
		case s.Failure != nil:
			err = s.Failure
		default:
			err = &llm.Error{Kind: llm.KindServer, Code: "batch_failed", Message: "batch " + b.ID + " failed without a reason"}
		}
		rs[i] = Result{CustomID: id, Err: err}
	}
	return rs
}

// apply records a finished batch's results on the entries it holds.
func (r *runner) apply(b *batchRec, rs []Result) {
	got := join(rs)
	for i, id := range b.CustomIDs {
		e := r.matches(b, i)
		if e == nil || e.done || e.batch != b.ID {
			continue // not ours, answered already, or since moved to a newer batch
		}
		e.batch = ""
		res, ok := got[id]
		if !ok {
			res = Result{Err: &llm.Error{Kind: llm.KindServer, Code: "missing", Message: "batch " + b.ID + " returned no result for this request"}}
		}
		res = refusalAnswer(e.item.Req, res)
		res.CustomID = id
		if res.Err != nil && llm.IsRetryable(res.Err) && e.tries < r.opts.MaxRounds {
			e.last = res.Err
			continue
		}
		e.done, e.res, e.last = true, res, nil
	}
}

// limits returns the effective caps of one batch.
func (r *runner) limits() (int, int64) {
	maxReq, maxBytes := r.opts.MaxRequests, r.opts.MaxBytes
	if r.planner != nil {
		l := r.planner.Limits()
		if l.MaxRequests > 0 && (maxReq <= 0 || maxReq > l.MaxRequests) {
			maxReq = l.MaxRequests
		}
		if capB := l.MaxBytes / 100 * 95; l.MaxBytes > 0 && (maxBytes <= 0 || maxBytes > capB) {
			maxBytes = capB
		}
	}
	if maxReq <= 0 {
		maxReq = defaultMaxRequests
	}
	return maxReq, maxBytes
}

// submit puts every waiting request into new batches.
func (r *runner) submit(ctx context.Context) error {
	r.hold = false
	maxReq, maxBytes := r.limits()
	var chunk []*entry
	var bytes int64
	flush := func() error {
		if len(chunk) == 0 {
			return nil
		}
		err := r.create(ctx, chunk)
		chunk, bytes = nil, 0
		return err
	}
	for _, e := range r.order {
		if e.done || e.batch != "" {
			continue
		}
		if len(r.active) > 0 && llm.KindOf(e.last) == llm.KindRateLimit {
			// The batch queue was full (OpenAI token_limit_exceeded): our
			// own running batches fill it, so wait until they finish.
			continue
		}
		if r.planner != nil && !e.sized {
			size, err := r.planner.ItemSize(e.item)
			if err != nil {
				e.done, e.res = true, Result{Err: &llm.Error{Kind: llm.KindBadRequest, Code: "unsendable",
					Message: "cannot be sent in a batch: " + err.Error()}}
				continue
			}
			e.sized, e.size = true, size
		}
		if maxBytes > 0 && e.size > maxBytes {
			e.done, e.res = true, Result{Err: &llm.Error{Kind: llm.KindBadRequest, Code: "too_large",
				Message: fmt.Sprintf("the request (%d bytes) is larger than a whole batch may be (%d bytes)", e.size, maxBytes)}}
			continue
		}
		if len(chunk) == maxReq || (maxBytes > 0 && bytes+e.size > maxBytes) {
			if err := flush(); err != nil {
				return err
			}
		}
		chunk = append(chunk, e)
		bytes += e.size
	}
	return flush()
}

func (r *runner) create(ctx context.Context, chunk []*entry) error {
	if r.hold {
		return nil // a submission failed this round: the rest waits for the next
	}
	items := make([]Item, len(chunk))
	for i, e := range chunk {
		items[i] = e.item
	}
	id, err := r.p.Submit(ctx, items)
	if err != nil {
		if perr := r.providerError(ctx, fmt.Sprintf("submit %d requests", len(items)), err); perr != nil {
			return perr
		}
		r.hold = true
		return nil
	}
	r.errs = 0
	b := &batchRec{ID: id, SubmittedAt: time.Now().UTC(), CustomIDs: make([]string, len(chunk)), Hashes: make([]string, len(chunk)), State: StateRunning}
	for i, e := range chunk {
		b.CustomIDs[i], b.Hashes[i] = e.item.CustomID, e.hash
	}
	r.st.Batches = append(r.st.Batches, b)
	// Record the batch before anything else: from now on it is paid for.
	if err := saveState(r.path, r.st); err != nil {
		return fmt.Errorf("batch %s was created but could not be recorded, so a new run would submit its %d requests again: %w", id, len(chunk), err)
	}
	for _, e := range chunk {
		e.batch = id
		e.tries++
		e.last = nil
	}
	r.active = append(r.active, b)
	r.submitted++
	r.opts.Logger.Info("batch: submitted", "batch", id, "requests", len(chunk))
	return nil
}

func (r *runner) progress() Progress {
	p := Progress{Items: len(r.order), Batches: len(r.active), Submitted: r.submitted, Reused: r.reused}
	for _, e := range r.order {
		switch {
		case e.done && e.res.Err == nil:
			p.Succeeded++
		case e.done:
			p.Failed++
		case e.batch != "":
			p.InFlight++
		default:
			p.Queued++
		}
	}
	return p
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
