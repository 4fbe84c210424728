package callstore

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/impactbench/impactbench/internal/fsx"
)

// segWriter is this Store's segment in one directory.
type segWriter struct {
	seg *segment
	f   *os.File // nil between uses (no unit of the directory open)
}

// writerHeader is a segment's first record's body: who wrote it.
type writerHeader struct {
	Host    string `json:"host"`
	PID     int    `json:"pid"`
	Started string `json:"started"`
	Writer  string `json:"writer,omitempty"`
}

// append writes one record to this Store's segment, creating it on first
// use, and indexes it (d.mu held). A write that fails or falls short
// retires the segment: the next record starts a new file, so a torn line
// can only ever be a segment's last.
func (d *segDir) append(hdr string, body []byte) (rec, error) {
	if err := d.openWriter(); err != nil {
		return rec{}, err
	}
	line := encodeLine(hdr, body)
	s := d.w.seg
	n, err := d.w.f.Write(line)
	if err == nil && n < len(line) {
		err = fmt.Errorf("short write (%d of %d bytes)", n, len(line))
	}
	if err == nil && d.l.opts.Sync {
		err = d.w.f.Sync()
	}
	if err != nil {
		d.w.f.Close()
		d.w = nil
		s.done, s.own = true, false
		return rec{}, fmt.Errorf("%s: %w", s.path, err)
	}
	off := s.off
	s.off += int64(n)
	s.size, s.mod = s.off, time.Now()
	d.index(s, off, line)
	return rec{seg: s, off: off, n: int32(n)}, nil
}

// openWriter opens this Store's segment for appending, creating it (and
// the directories above it) the first time.
func (d *segDir) openWriter() error {
	if d.w != nil && d.w.f != nil {
		return nil
	}
	d.noteOpen()
	if d.w != nil {
		f, err := fsx.OpenAppend(d.w.seg.path, fsx.Private)
		if err == nil {
			if st, serr := f.Stat(); serr == nil && st.Size() == d.w.seg.off {
				d.w.f = f
				return nil
			}
			f.Close() // not as this Store left it: start a new one
		}
		d.w.seg.done, d.w.seg.own, d.w = true, false, nil
	}
	if err := d.l.secure(); err != nil {
		return err
	}
	if err := fsx.MkdirAll(d.segPath, fsx.Private); err != nil {
		return fmt.Errorf("callstore: %w", err)
	}
	name := d.l.writer.next()
	p := filepath.Join(d.segPath, name)
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL|os.O_APPEND, 0o600)
	if err != nil {
		return fmt.Errorf("callstore: create segment: %w", err)
	}
	s := &segment{name: name, path: p, host: d.l.writer.host, pid: d.l.writer.pid, label: d.l.writer.label, own: true}
	d.segs[name] = s
	d.w = &segWriter{seg: s, f: f}
	w := d.l.writer
	body, _ := json.Marshal(writerHeader{Host: w.host, PID: w.pid, Started: fsx.ThisProcess("").Started.UTC().Format(time.RFC3339), Writer: w.label})
	line := encodeLine("h "+segFormat+" "+name, body)
	if _, err := f.Write(line); err != nil {
		f.Close()
		d.w, s.done, s.own = nil, true, false
		return fmt.Errorf("callstore: create segment %s: %w", p, err)
	}
	s.off, s.size = int64(len(line)), int64(len(line))
	return nil
}

// commit writes ev as unit base's next revision, under the directory's
// commit lock, so that revisions are created once across processes. With
// a result on top that is newer than what the caller based its work on
// (base), that result is returned and adopted, and nothing is written. A
// reset is always written.
func (d *segDir) commit(base, name string, known int, ev event) (event, bool, error) {
	unlock, err := d.lock()
	if err != nil {
		return event{}, false, err
	}
	defer unlock()
	d.mu.Lock()
	defer d.mu.Unlock()
	// On a network file system a cached mtime could hide a new writer's
	// segment: under the lock, the directory is listed afresh.
	d.refresh(d.l.network, false)
	top := -1
	if d.legacyListing().units[base].file {
		top = 0 // a unit file of an earlier version is revision 0
	}
	ur := d.units[base]
	if ur != nil && ur.top >= top {
		top = ur.top
		if top > known && ev.Kind == evResult {
			if cur, err := d.readEvent(ur.recs[ur.topIdx]); err == nil && cur.Kind == evResult {
				return cur, true, nil
			}
		}
	}
	ev.Rev = top + 1
	body, err := encodeResultBody(ev)
	if err != nil {
		return event{}, false, fmt.Errorf("callstore: encode result of %s: %w", name, err)
	}
	if _, err := d.append(eventHeader(base, ev.Rev, ev.Kind, ev.At), body); err != nil {
		return event{}, false, fmt.Errorf("callstore: store result of %s: %w", name, err)
	}
	return ev, false, nil
}

// lock takes the directory's commit lock: this process's mutex, then the
// lock file's exclusive lock (flock; fcntl on NFS, which Linux clients
// also use to invalidate what they cached of the files).
func (d *segDir) lock() (func(), error) {
	d.commitMu.Lock()
	if d.lockF == nil {
		if err := d.l.secure(); err != nil {
			d.commitMu.Unlock()
			return nil, err
		}
		if err := fsx.MkdirAll(d.segPath, fsx.Private); err != nil {
			d.commitMu.Unlock()
			return nil, fmt.Errorf("callstore: %w", err)
		}
		// Private like everything in the store; any open file can be locked.
		f, err := fsx.OpenAppend(filepath.Join(d.segPath, "lock"), fsx.Private)
		if err != nil {
			d.commitMu.Unlock()
			return nil, fmt.Errorf("callstore: commit lock: %w", err)
		}
		d.lockF = f
		d.mu.Lock()
		d.noteOpen()
		d.mu.Unlock()
	}
	if err := fsx.Lock(d.lockF); err != nil {
		d.commitMu.Unlock()
		return nil, fmt.Errorf("callstore: commit lock %s: %w", d.segPath, err)
	}
	f := d.lockF
	return func() {
		_ = fsx.Unlock(f)
		d.commitMu.Unlock()
	}, nil
}
