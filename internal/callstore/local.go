package callstore

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/impactbench/impactbench/internal/fsx"
	"github.com/impactbench/impactbench/internal/ids"
)

// segDirName is the directory, inside each directory of units, that holds
// the segment files and the commit lock.
const segDirName = ".seg"

// local is the file-system backend: per directory of units, one segment
// file per writing Store (see record.go) and an in-memory index of all of
// them.
type local struct {
	root    string
	opts    Options
	writer  writerName
	network bool // on a network file system: see Options.Sync and segDir.refresh

	secureOnce sync.Once
	secureErr  error

	mu       sync.Mutex
	dirs     map[string]*segDir // by the units' directory, relative, '/'-separated
	openDirs atomic.Int64       // directories with files open
}

// writerName makes the names of a Store's segment files:
// <host>_<pid>_<start>_<n>_<writer>.seg, unique per process (pid and
// start) and per file (n, counted over the process), so that no two
// processes — not even two on one shared file system — append to one file.
type writerName struct {
	host, label string
	pid         int
	start       string
}

var segCounter atomic.Uint64

func newWriterName(label string) writerName {
	host, _ := os.Hostname()
	clean := strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '.' {
			return r
		}
		return '-'
	}, host)
	if clean == "" {
		clean = "host"
	}
	if ids.Problem(label, ids.MaxName) != "" {
		label = "" // only ids name files
	}
	return writerName{host: clean, label: label, pid: os.Getpid(), start: strconv.FormatInt(time.Now().UnixNano(), 36)}
}

func (w writerName) next() string {
	return fmt.Sprintf("%s_%d_%s_%d_%s.seg", w.host, w.pid, w.start, segCounter.Add(1), w.label)
}

// parseSegName reads host, pid and writer label back from a segment name.
func parseSegName(name string) (host string, pid int, label string, ok bool) {
	f := strings.SplitN(strings.TrimSuffix(name, ".seg"), "_", 5)
	if len(f) != 5 || !strings.HasSuffix(name, ".seg") {
		return "", 0, "", false
	}
	pid, err := strconv.Atoi(f[1])
	return f[0], pid, f[4], err == nil
}

func newLocal(root string, o Options) *local {
	network := fsx.IsNetworkFS(root)
	o.Sync = o.Sync || network
	return &local{root: root, opts: o, network: network, writer: newWriterName(o.Writer), dirs: map[string]*segDir{}}
}

// secure creates the store's directory 0700, or makes an existing one
// 0700, once per Store: the store holds whole transcripts and the
// simulated user's hidden thoughts. The chmod is best effort (a directory
// another user made cannot be changed; the files written are 0600 anyway).
func (l *local) secure() error {
	l.secureOnce.Do(func() {
		if err := fsx.MkdirAll(l.root, fsx.Private); err != nil {
			l.secureErr = fmt.Errorf("callstore: %w", err)
			return
		}
		_ = os.Chmod(l.root, 0o700)
	})
	return l.secureErr
}

// dir returns the index of the units' directory rel.
func (l *local) dir(rel string) *segDir {
	l.mu.Lock()
	defer l.mu.Unlock()
	d := l.dirs[rel]
	if d == nil {
		p := filepath.Join(l.root, filepath.FromSlash(rel))
		d = &segDir{l: l, path: p, segPath: filepath.Join(p, segDirName), segs: map[string]*segment{}, units: map[string]*unitRecs{}}
		l.dirs[rel] = d
	}
	return d
}

// split returns a unit's directory index and its last name element.
func (l *local) split(name string) (*segDir, string) {
	rel, base := path.Split(name)
	return l.dir(strings.TrimSuffix(rel, "/")), base
}

func (l *local) open(ctx context.Context, name string, reset bool) (unitState, error) {
	d, base := l.split(name)
	if reset {
		if _, _, err := d.commit(base, name, -1, event{Kind: evReset, At: time.Now()}); err != nil {
			return unitState{}, err
		}
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	st, err := d.load(name, base)
	if err == nil {
		d.users++
	}
	return st, err
}

// load reads a unit's state from the index and the files of earlier
// versions (d.mu held).
func (d *segDir) load(name, base string) (unitState, error) {
	d.refresh(false, false)
	ld := d.legacyListing()
	if err := d.listingErr(ld); err != nil {
		return unitState{}, err
	}
	ur := d.units[base]
	var st unitState
	if le := ld.units[base]; (le.file || le.journal) && (ur == nil || ur.lastReset < 0) {
		lg, err := readLegacy(d.l.root, name, false)
		if err != nil {
			return unitState{}, err
		}
		st.calls, st.top = lg.calls, lg.result
	}
	if st.calls == nil {
		st.calls = map[string]Entry{}
	}
	if ur == nil {
		return st, nil
	}
	if ur.top >= 0 {
		ev, err := d.readEvent(ur.recs[ur.topIdx])
		if err != nil {
			return unitState{}, err
		}
		st.top = &ev
	}
	for _, r := range ur.recs {
		if r.kind == 'c' && int(r.num) >= ur.lastReset {
			if e, ok := d.readCall(r); ok {
				if _, had := st.calls[e.Key]; !had {
					st.calls[e.Key] = e
				}
			}
		}
	}
	st.cursor = len(ur.recs)
	return st, nil
}

func (l *local) probe(ctx context.Context, u *Unit, key string) (Entry, bool, error) {
	d, base := l.split(u.name)
	d.mu.Lock()
	defer d.mu.Unlock()
	d.refresh(false, true)
	e, ok := d.scan(u, base, key)
	return e, ok, nil
}

func (l *local) put(ctx context.Context, u *Unit, e Entry) (Entry, error) {
	d, base := l.split(u.name)
	body, err := json.Marshal(e)
	if err != nil {
		return Entry{}, fmt.Errorf("callstore: encode call of %s: %w", u.name, err)
	}
	// u.mu before d.mu, never inside it: Commit holds u.mu while it takes d.mu.
	u.mu.Lock()
	b := u.base
	u.mu.Unlock()
	// Another writer may have stored this call while it was being paid
	// for: the first answer stored wins, so duplicates converge on one
	// transcript: the look and the append happen under the directory's
	// lock, so two writers that paid at once (a duplicate of this shard
	// starting beside it) cannot both append.
	unlock, err := d.lock()
	if err != nil {
		return Entry{}, err
	}
	defer unlock()
	d.mu.Lock()
	defer d.mu.Unlock()
	d.refresh(false, true)
	if first, ok := d.scan(u, base, e.Key); ok {
		return first, nil
	}
	if _, err := d.append(callHeader(base, b, e.Key), body); err != nil {
		return Entry{}, fmt.Errorf("callstore: store call of %s: %w", u.name, err)
	}
	d.skipOwn(u, base)
	return e, nil
}

// scan looks for key among the unit's records indexed since u last
// looked (d.mu held).
func (d *segDir) scan(u *Unit, base, key string) (Entry, bool) {
	ur := d.units[base]
	if ur == nil {
		return Entry{}, false
	}
	for ; u.seen < len(ur.recs); u.seen++ {
		r := ur.recs[u.seen]
		if r.kind != 'c' || int(r.num) < ur.lastReset {
			continue
		}
		if e, ok := d.readCall(r); ok && e.Key == key {
			u.seen++
			return e, true
		}
	}
	return Entry{}, false
}

// skipOwn moves u's cursor past the record it just appended when nothing
// else arrived in between (d.mu held).
func (d *segDir) skipOwn(u *Unit, base string) {
	if ur := d.units[base]; ur != nil && u.seen == len(ur.recs)-1 {
		u.seen++
	}
}

func (l *local) commit(ctx context.Context, u *Unit, base int, ev event) (event, bool, error) {
	d, b := l.split(u.name)
	return d.commit(b, u.name, base, ev)
}

func (l *local) latest(ctx context.Context, name string) (*event, error) {
	d, base := l.split(name)
	d.mu.Lock()
	d.refresh(false, false)
	ur := d.units[base]
	if ur != nil && ur.top >= 0 {
		ev, err := d.readEvent(ur.recs[ur.topIdx])
		d.mu.Unlock()
		return &ev, err
	}
	d.mu.Unlock()
	lg, err := readLegacy(l.root, name, true)
	return lg.result, err
}

func (l *local) release(u *Unit) {
	d, _ := l.split(u.name)
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.users--; d.users <= 0 {
		d.users = 0
		// A directory's files stay open for its next unit (opening a
		// segment per unit would cost what it saves) unless many
		// directories hold files open: then the idle one lets go.
		if l.openDirs.Load() > maxOpenDirs {
			d.closeFiles()
		}
	}
}

// maxOpenDirs bounds how many directories keep their files open while
// none of their units is.
const maxOpenDirs = 32

func (l *local) close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, d := range l.dirs {
		d.mu.Lock()
		d.closeFiles()
		d.mu.Unlock()
	}
	return nil
}

// decodeEvent reads an event record's body.
func decodeEvent(h header, body []byte) (event, bool) {
	var b resultBody
	if json.Unmarshal(body, &b) != nil {
		return event{}, false
	}
	return event{Rev: h.num, Kind: h.ev, Result: b.Result, ResultKey: b.ResultKey, At: time.UnixMilli(h.at)}, true
}
