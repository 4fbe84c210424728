package callstore

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/impactbench/impactbench/internal/fsx"
)

// UnitFile is one completed unit of a directory listing.
type UnitFile struct {
	Name    string    // the unit's last name element (without ".json")
	ModTime time.Time // when its result was stored
}

// Listing is what a directory of units holds, as a reader outside the run
// (status, the viewer) sees it.
type Listing struct {
	Done       []UnitFile // completed units, newest first
	InProgress int        // units with calls made since their latest result
	// Changed is the latest write seen in the directory (a call or a
	// result stored): a run that stops changing it is idle.
	Changed time.Time
}

// ListUnits lists the units in dir (a directory of units: segments and
// files of earlier versions alike). A unit stored and being redone counts
// as in progress only; a missing directory lists nothing. Its error is a
// folder of dir over its bound (maxDirEntries): an
// *fsx.TooManyEntriesError naming it (exit 2).
func ListUnits(dir string) (done []UnitFile, inProgress int, err error) {
	l := newLocal(dir, Options{})
	ls, err := l.list(context.Background(), "")
	if err != nil {
		return nil, 0, err
	}
	return ls.Done, ls.InProgress, nil
}

// List lists the units in the directory dir of the store (relative,
// '/'-separated, e.g. "claude-haiku-4-5/sim"). On a local store it reads
// only what was written since the last List of the same Store, so a
// viewer may call it on every refresh.
func (s *Store) List(ctx context.Context, dir string) (Listing, error) {
	if dir != "" {
		if err := checkName(dir); err != nil {
			return Listing{}, err
		}
	}
	return s.be.list(ctx, dir)
}

// legacyDir is the cached listing of a directory's unit files of earlier
// versions, read again only when the directory's mtime changes.
type legacyDir struct {
	mod   time.Time
	units map[string]legacyEntry
	err   error // the directory is over maxDirEntries
}

type legacyEntry struct {
	file, journal bool
	mod           time.Time // of the file
}

// legacyListing lists <unit>.json and <unit>.jsonl in d (d.mu held).
func (d *segDir) legacyListing() *legacyDir {
	st, err := os.Stat(d.path)
	if err != nil {
		return &legacyDir{}
	}
	if d.legacy != nil && d.legacy.mod.Equal(st.ModTime()) {
		return d.legacy
	}
	ld := &legacyDir{mod: st.ModTime(), units: map[string]legacyEntry{}}
	// Only the entries of a unit's file are kept, as ld's units: the
	// listing keeps none of its own.
	_, err = fsx.ReadDir(d.path, maxDirEntries, func(e fs.DirEntry) bool {
		n := e.Name()
		if strings.HasPrefix(n, ".") || !e.Type().IsRegular() {
			return false
		}
		switch {
		case strings.HasSuffix(n, ".jsonl"):
			base := strings.TrimSuffix(n, ".jsonl")
			le := ld.units[base]
			le.journal = true
			ld.units[base] = le
		case strings.HasSuffix(n, ".json"):
			base := strings.TrimSuffix(n, ".json")
			le := ld.units[base]
			le.file = true
			if info, err := e.Info(); err == nil {
				le.mod = info.ModTime()
			}
			ld.units[base] = le
		}
		return false
	})
	var many *fsx.TooManyEntriesError
	if errors.As(err, &many) {
		ld = &legacyDir{mod: ld.mod, units: map[string]legacyEntry{}, err: err}
	}
	d.legacy = ld
	return ld
}

// listingErr is the error of a directory over maxDirEntries: its .seg
// folder's or its own (d.mu held).
func (d *segDir) listingErr(ld *legacyDir) error {
	if d.listErr != nil {
		return d.listErr
	}
	return ld.err
}

func (l *local) list(ctx context.Context, rel string) (Listing, error) {
	d := l.dir(rel)
	d.mu.Lock()
	defer d.mu.Unlock()
	d.refresh(false, false)
	ld := d.legacyListing()
	if err := d.listingErr(ld); err != nil {
		return Listing{}, err
	}
	var ls Listing
	ls.Changed = ld.mod
	for _, s := range d.segs {
		if s.mod.After(ls.Changed) {
			ls.Changed = s.mod
		}
	}
	for name, le := range ld.units {
		if d.units[name] == nil {
			ls.add(name, le, nil)
		}
	}
	for name, ur := range d.units {
		ls.add(name, ld.units[name], ur)
	}
	sort.SliceStable(ls.Done, func(i, j int) bool {
		if !ls.Done[i].ModTime.Equal(ls.Done[j].ModTime) {
			return ls.Done[i].ModTime.After(ls.Done[j].ModTime)
		}
		return ls.Done[i].Name < ls.Done[j].Name
	})
	return ls, nil
}

// add counts one unit: done when its latest revision is a result and no
// call was made after it, in progress when calls were.
func (ls *Listing) add(name string, le legacyEntry, ur *unitRecs) {
	top, result, at := -1, false, time.Time{}
	if le.file {
		top, result, at = 0, true, le.mod
	}
	segEvents := ur != nil && ur.top >= 0
	if segEvents {
		r := ur.recs[ur.topIdx]
		top, result, at = ur.top, r.ev == evResult, time.UnixMilli(r.at)
	}
	running := (ur != nil && ur.maxCallBase >= top) || (le.journal && !segEvents)
	switch {
	case running:
		ls.InProgress++
	case result:
		ls.Done = append(ls.Done, UnitFile{Name: name, ModTime: at})
	}
}
