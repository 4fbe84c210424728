package callstore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path"
	"strings"
	"sync"

	"gocloud.dev/blob"
)

// floors is what a store opened with Options.Survey knows of its units'
// revisions: each directory of units is listed once, on the first read
// of one of its units, and every unit listed starts its reads from the
// highest revision listed. That is safe however old the listing:
// revisions are created once, dense from 0 and never deleted, so one
// listed exists with every one below it, and the keys above it are still
// probed. A unit not listed is read as without a survey.
type floors struct {
	mu   sync.Mutex
	dirs map[string]*dirSurvey
	rev  map[string]int // unit name → a revision known to exist
}

type dirSurvey struct {
	once sync.Once
	err  error
}

func newFloors() *floors {
	return &floors{dirs: map[string]*dirSurvey{}, rev: map[string]int{}}
}

// floor is a revision of unit name known to exist (ok false when none is
// known), listing the unit's directory first if it was not yet.
func (bb *blobBackend) floor(ctx context.Context, name string) (rev int, ok bool, err error) {
	f := bb.floors
	if f == nil {
		return 0, false, nil
	}
	dir := path.Dir(name)
	f.mu.Lock()
	ds := f.dirs[dir]
	if ds == nil {
		ds = &dirSurvey{}
		f.dirs[dir] = ds
	}
	f.mu.Unlock()
	ds.once.Do(func() { ds.err = bb.survey(ctx, dir) })
	if ds.err != nil {
		return 0, false, ds.err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	rev, ok = f.rev[name]
	return rev, ok, nil
}

// raise notes that revision rev of unit name exists.
func (bb *blobBackend) raise(name string, rev int) {
	if f := bb.floors; f != nil {
		f.mu.Lock()
		if cur, ok := f.rev[name]; !ok || rev > cur {
			f.rev[name] = rev
		}
		f.mu.Unlock()
	}
}

// survey lists every object under dir once and raises each unit's floor
// to its highest revision listed.
func (bb *blobBackend) survey(ctx context.Context, dir string) error {
	pre := bb.prefix
	if dir != "." {
		pre += dir + "/"
	}
	it := bb.b.List(&blob.ListOptions{Prefix: pre})
	for {
		obj, err := it.Next(ctx)
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("callstore: list %s: %w", pre, err)
		}
		unit, rest, ok := strings.Cut(strings.TrimPrefix(obj.Key, pre), "/")
		if !ok || strings.Contains(unit, "!") || !strings.HasPrefix(rest, "!r/") {
			continue
		}
		if rev, ok := parseRevKey(obj.Key); ok {
			bb.raise(path.Join(dir, unit), rev)
		}
	}
}
