package callstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path"
	"sort"
	"strconv"
	"strings"
	"time"

	"gocloud.dev/blob"
	"gocloud.dev/gcerrors"
	"golang.org/x/sync/errgroup"
)

// The object-store backend keeps, under the store's prefix:
//
//	<unit>/!r/<rev, 10 digits>.json         revision rev of the unit: its
//	                                        result, or a reset (--force)
//	<unit>/!c<gen>/<key>.json               a call's answer (an Entry), in
//	                                        generation gen: the revision of
//	                                        the unit's latest reset plus one
//
// Every object is written create-once (IfNotExist: S3 If-None-Match, GCS
// DoesNotExist, Azure If-None-Match), so two writers of one key agree on
// the first; the loser reads and adopts it. '!' cannot occur in a unit
// name (ids), so one unit's objects never fall under another's prefix.
// Listing is only eventually consistent, so the latest revision is found
// by listing and then probing the exact keys above it, and a call's answer
// by reading its exact key before it is paid.

// maxObject bounds what is read of one object: an answer is at most
// llm.MaxReplyBytes, a few MiB once escaped (a var: tests lower it).
var maxObject int64 = 64 << 20

// errObjectTooLarge is read's error for an object over maxObject.
var errObjectTooLarge = errors.New("larger than the limit for one object")

type blobBackend struct {
	b      *blob.Bucket
	prefix string  // "" or ending in '/'
	floors *floors // with Options.Survey: revisions known to exist
}

// eventBody is a revision object.
type eventBody struct {
	Kind      string          `json:"kind"` // "result" or "reset"
	Gen       int             `json:"gen"`  // the unit's generation after this revision
	Result    json.RawMessage `json:"result,omitempty"`
	ResultKey string          `json:"result_key,omitempty"`
	At        time.Time       `json:"at"`
}

func (bb *blobBackend) eventKey(name string, rev int) string {
	return fmt.Sprintf("%s%s/!r/%010d.json", bb.prefix, name, rev)
}

func (bb *blobBackend) callKey(name string, gen int, key string) string {
	return bb.prefix + name + "/!c" + strconv.Itoa(gen) + "/" + key + ".json"
}

// create writes data at key unless an object is there; exists reports that one was.
func (bb *blobBackend) create(ctx context.Context, key string, data []byte) (exists bool, err error) {
	err = bb.b.WriteAll(ctx, key, data, &blob.WriterOptions{IfNotExist: true, ContentType: "application/json"})
	switch {
	case err == nil:
		return false, nil
	case gcerrors.Code(err) == gcerrors.FailedPrecondition:
		return true, nil
	}
	return false, fmt.Errorf("callstore: write %s: %w", key, err)
}

// read reads the object at key; found is false when there is none.
func (bb *blobBackend) read(ctx context.Context, key string) (data []byte, found bool, err error) {
	r, err := bb.b.NewReader(ctx, key, nil)
	if gcerrors.Code(err) == gcerrors.NotFound {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("callstore: read %s: %w", key, err)
	}
	defer r.Close()
	data, err = io.ReadAll(io.LimitReader(r, maxObject+1))
	if err != nil {
		return nil, false, fmt.Errorf("callstore: read %s: %w", key, err)
	}
	if int64(len(data)) > maxObject {
		return nil, false, fmt.Errorf("callstore: %s is %w (%d bytes)", key, errObjectTooLarge, maxObject)
	}
	return data, true, nil
}

// listed finds the unit's latest revision as far as a listing shows it.
// Revisions are dense from 0, so a unit without revision 0 has none (-1:
// the common case of a unit not yet done); otherwise the highest one
// listed, which the caller confirms by probing the exact keys above it (a
// listing may lag behind). The probe of revision 0 and the listing go out
// together: on an object store each is a round trip, and a replay opens
// every unit of a study.
func (bb *blobBackend) listed(ctx context.Context, name string) (int, error) {
	var g errgroup.Group
	listed := 0
	g.Go(func() (err error) {
		listed, err = bb.listTop(ctx, name)
		return err
	})
	ok, err := bb.b.Exists(ctx, bb.eventKey(name, 0))
	listErr := g.Wait()
	switch {
	case err != nil:
		return 0, fmt.Errorf("callstore: probe %s: %w", name, err)
	case !ok:
		return -1, nil
	case listErr != nil:
		return 0, listErr
	}
	return listed, nil
}

// listTop is the highest revision listed under the unit (0 when none is).
func (bb *blobBackend) listTop(ctx context.Context, name string) (int, error) {
	top := 0
	it := bb.b.List(&blob.ListOptions{Prefix: bb.prefix + name + "/!r/"})
	for {
		obj, err := it.Next(ctx)
		if errors.Is(err, io.EOF) {
			return top, nil
		}
		if err != nil {
			return 0, fmt.Errorf("callstore: list %s: %w", name, err)
		}
		if rev, ok := parseRevKey(obj.Key); ok && rev > top {
			top = rev
		}
	}
}

// probeAbove probes the exact keys above revision top until one is missing.
func (bb *blobBackend) probeAbove(ctx context.Context, name string, top int) (int, error) {
	for {
		ok, err := bb.b.Exists(ctx, bb.eventKey(name, top+1))
		if err != nil {
			return 0, fmt.Errorf("callstore: probe %s: %w", name, err)
		}
		if !ok {
			return top, nil
		}
		top++
	}
}

func parseRevKey(key string) (int, bool) {
	i := strings.LastIndex(key, "/!r/")
	if i < 0 || !strings.HasSuffix(key, ".json") {
		return 0, false
	}
	rev, err := strconv.Atoi(strings.TrimSuffix(key[i+4:], ".json"))
	return rev, err == nil && rev >= 0
}

// readEvent reads revision rev of the unit (found false when missing).
func (bb *blobBackend) readEvent(ctx context.Context, name string, rev int) (event, int, bool, error) {
	b, found, err := bb.read(ctx, bb.eventKey(name, rev))
	if err != nil || !found {
		return event{}, 0, false, err
	}
	var eb eventBody
	if json.Unmarshal(b, &eb) != nil || (eb.Kind != "result" && eb.Kind != "reset") {
		return event{}, 0, false, fmt.Errorf("callstore: %s is damaged", bb.eventKey(name, rev))
	}
	kind := byte(evResult)
	if eb.Kind == "reset" {
		kind = evReset
	}
	return event{Rev: rev, Kind: kind, Result: eb.Result, ResultKey: eb.ResultKey, At: eb.At}, eb.Gen, true, nil
}

// latestEvent reads the unit's latest revision and generation. The
// revision listed is read while the keys above it are probed: it is
// almost always the latest, and the two round trips overlap.
func (bb *blobBackend) latestEvent(ctx context.Context, name string) (*event, int, error) {
	cand, known, err := bb.floor(ctx, name)
	if err == nil && !known {
		cand, err = bb.listed(ctx, name)
	}
	if err != nil || cand < 0 {
		return nil, 0, err
	}
	var (
		g     errgroup.Group
		ev    event
		gen   int
		found bool
	)
	g.Go(func() (err error) {
		ev, gen, found, err = bb.readEvent(ctx, name, cand)
		return err
	})
	top, err := bb.probeAbove(ctx, name, cand)
	readErr := g.Wait()
	if err != nil {
		return nil, 0, err
	}
	if top != cand {
		ev, gen, found, readErr = bb.readEvent(ctx, name, top)
	}
	if readErr != nil || !found {
		return nil, 0, readErr
	}
	bb.raise(name, top)
	return &ev, gen, nil
}

// writeEvent creates revision ev.Rev; exists when another writer did first.
func (bb *blobBackend) writeEvent(ctx context.Context, name string, ev event, gen int) (bool, error) {
	kind := "result"
	if ev.Kind == evReset {
		kind = "reset"
	}
	b, err := json.Marshal(eventBody{Kind: kind, Gen: gen, Result: ev.Result, ResultKey: ev.ResultKey, At: ev.At.UTC()})
	if err != nil {
		return false, fmt.Errorf("callstore: encode result of %s: %w", name, err)
	}
	return bb.create(ctx, bb.eventKey(name, ev.Rev), b)
}

func (bb *blobBackend) open(ctx context.Context, name string, reset bool) (unitState, error) {
	top, gen, err := bb.latestEvent(ctx, name)
	if err != nil {
		return unitState{}, err
	}
	for reset {
		rev := -1
		if top != nil {
			rev = top.Rev
		}
		ev := event{Rev: rev + 1, Kind: evReset, At: time.Now()}
		exists, err := bb.writeEvent(ctx, name, ev, rev+2)
		if err != nil {
			return unitState{}, err
		}
		if !exists {
			top, gen, reset = &ev, rev+2, false
			break
		}
		if top, gen, err = bb.latestEvent(ctx, name); err != nil {
			return unitState{}, err
		}
	}
	return unitState{calls: map[string]Entry{}, top: top, gen: gen}, nil
}

func (bb *blobBackend) probe(ctx context.Context, u *Unit, key string) (Entry, bool, error) {
	b, found, err := bb.read(ctx, bb.callKey(u.name, u.gen, key))
	if errors.Is(err, errObjectTooLarge) {
		return Entry{}, false, nil // not read whole; like a damaged one, paid again
	}
	if err != nil || !found {
		return Entry{}, false, err
	}
	var e Entry
	if json.Unmarshal(b, &e) != nil || e.Key != key {
		return Entry{}, false, nil // damaged: paid again, never trusted
	}
	return e, true, nil
}

func (bb *blobBackend) put(ctx context.Context, u *Unit, e Entry) (Entry, error) {
	b, err := json.Marshal(e)
	if err != nil {
		return Entry{}, fmt.Errorf("callstore: encode call of %s: %w", u.name, err)
	}
	exists, err := bb.create(ctx, bb.callKey(u.name, u.gen, e.Key), b)
	if err != nil || !exists {
		return e, err
	}
	// Another writer stored this call first: its answer is the one kept.
	if first, ok, err := bb.probe(ctx, u, e.Key); err != nil || ok {
		return first, err
	}
	return e, nil
}

func (bb *blobBackend) commit(ctx context.Context, u *Unit, base int, ev event) (event, bool, error) {
	gen := u.gen
	for rev := base + 1; ; rev++ {
		ev.Rev = rev
		exists, err := bb.writeEvent(ctx, u.name, ev, gen)
		if err != nil {
			return event{}, false, err
		}
		if !exists {
			return ev, false, nil
		}
		cur, _, found, err := bb.readEvent(ctx, u.name, rev)
		if err != nil {
			return event{}, false, err
		}
		if found && cur.Kind == evResult {
			// A newer result than this writer knew: adopt it (and any
			// after it).
			if top, _, err := bb.latestEvent(ctx, u.name); err == nil && top != nil && top.Kind == evResult {
				return *top, true, nil
			}
			return cur, true, nil
		}
	}
}

func (bb *blobBackend) latest(ctx context.Context, name string) (*event, error) {
	ev, _, err := bb.latestEvent(ctx, name)
	return ev, err
}

func (bb *blobBackend) release(u *Unit) {}

func (bb *blobBackend) close() error { return bb.b.Close() }

// list reads every object under dir once: a unit is done when its latest
// revision is a result; in progress when it has calls and no revision.
func (bb *blobBackend) list(ctx context.Context, dir string) (Listing, error) {
	pre := bb.prefix
	if dir != "" {
		pre += dir + "/"
	}
	tops, calls := map[string]int{}, map[string]bool{}
	var ls Listing
	it := bb.b.List(&blob.ListOptions{Prefix: pre})
	for {
		obj, err := it.Next(ctx)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return Listing{}, fmt.Errorf("callstore: list %s: %w", pre, err)
		}
		unit, rest, ok := strings.Cut(strings.TrimPrefix(obj.Key, pre), "/")
		if !ok || strings.Contains(unit, "!") {
			continue
		}
		if obj.ModTime.After(ls.Changed) {
			ls.Changed = obj.ModTime
		}
		if rev, ok := parseRevKey(obj.Key); ok && strings.HasPrefix(rest, "!r/") {
			tops[unit] = max(tops[unit], rev+1)
		} else if strings.HasPrefix(rest, "!c") {
			calls[unit] = true
		}
	}
	for unit := range calls {
		if tops[unit] == 0 {
			ls.InProgress++
		}
	}
	for unit, t := range tops {
		ev, _, found, err := bb.readEvent(ctx, path.Join(dir, unit), t-1)
		if err == nil && found && ev.Kind == evResult {
			ls.Done = append(ls.Done, UnitFile{Name: unit, ModTime: ev.At})
		}
	}
	sort.Slice(ls.Done, func(i, j int) bool { return ls.Done[i].ModTime.After(ls.Done[j].ModTime) })
	return ls, nil
}
