package callstore

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/impactbench/impactbench/internal/fsx"
	"github.com/impactbench/impactbench/internal/ids"
)

// segDir indexes the segments of one directory of units. Segments only
// grow, and each has one writer, so the index reads each once, then only
// what was appended since.
type segDir struct {
	l       *local
	path    string // the units' directory
	segPath string // its .seg directory

	mu        sync.Mutex
	listed    bool      // .seg was read at least once
	segMod    time.Time // .seg's mtime when it was last read
	segs      map[string]*segment
	units     map[string]*unitRecs
	w         *segWriter
	users     int  // open units
	filesOpen bool // the segment or the lock file is open
	legacy    *legacyDir
	listErr   error // .seg over maxDirEntries: load and list fail with it

	commitMu sync.Mutex // one commit at a time in this process; the lock file for others
	lockF    *os.File
}

// segment is one writer's file as far as it has been read.
type segment struct {
	name, path string
	host       string
	pid        int
	label      string
	own        bool
	off        int64 // read (and indexed) through here: whole lines only
	size       int64
	mod        time.Time
	done       bool // its writer has ended and it was read to the end, or it is foreign
	alive      bool
	aliveAt    time.Time
}

// rec is one indexed record: where it lies and what its header said.
type rec struct {
	seg  *segment
	off  int64
	n    int32
	kind byte // 'c' or 'e'
	ev   byte
	num  int32 // a call's base, an event's rev
	at   int64
}

// unitRecs are one unit's records in discovery order, with a summary.
type unitRecs struct {
	recs        []rec
	top         int // rev of the latest event, -1 when none
	topIdx      int
	lastReset   int // rev of the latest reset, -1 when none
	maxCallBase int // the highest base of its calls, -2 when none
}

// maxDirEntries bounds the entries of one directory of the call store
// read: its .seg folder holds one segment per process that wrote there,
// and a folder of an earlier version one or two files per unit (a
// conversation: at most 100,000 per metric and target). A folder over it
// is refused with an *fsx.TooManyEntriesError (exit 2) after reading that
// many entries.
var maxDirEntries = 2_000_000

// maxLine bounds a record: an answer is at most llm.MaxReplyBytes, a few
// MiB once escaped; anything longer is damage, skipped.
const maxLine = 64 << 20

// refresh brings the index up to date with the files (d.mu held). The
// .seg directory is listed again when its mtime changed (a new writer), or
// always when full (a commit, under the commit lock: an mtime a network
// file system cached must not hide a writer). With probe, only the
// segments of writers that could hold this writer's units are looked at:
// those with the same writer name or none.
func (d *segDir) refresh(full, probe bool) {
	if st, err := os.Stat(d.segPath); err == nil && (full || !d.listed || !st.ModTime().Equal(d.segMod)) {
		d.listSegs()
		d.segMod = st.ModTime()
	}
	for _, s := range d.segs {
		if s.own || s.done || (probe && !d.mayHoldMine(s)) {
			continue
		}
		st, err := os.Stat(s.path)
		if err != nil {
			continue
		}
		s.mod = st.ModTime()
		if st.Size() > s.off {
			d.readSeg(s)
		}
		// A writer that has ended appends nothing more: its segment,
		// read to its last whole line, is not looked at again.
		if !d.writerAlive(s) {
			s.done = true
		}
	}
}

// mayHoldMine: a segment may hold this writer's units unless both are
// named and the names differ (shards never share a unit).
func (d *segDir) mayHoldMine(s *segment) bool {
	mine := d.l.writer.label
	return mine == "" || s.label == "" || s.label == mine
}

// listSegs adds the segment files not yet known.
func (d *segDir) listSegs() {
	d.listed = true
	ents, err := fsx.ReadDir(d.segPath, maxDirEntries, func(e fs.DirEntry) bool {
		return d.segs[e.Name()] == nil && e.Type().IsRegular()
	})
	d.listErr = nil
	var many *fsx.TooManyEntriesError
	if errors.As(err, &many) {
		d.listErr = err
	}
	if err != nil {
		return
	}
	for _, e := range ents {
		n := e.Name()
		host, pid, label, ok := parseSegName(n)
		if !ok {
			continue
		}
		d.segs[n] = &segment{name: n, path: filepath.Join(d.segPath, n), host: host, pid: pid, label: label}
	}
}

// writerAlive: a segment of this host whose process has ended will not
// grow again. Writers on other hosts cannot be asked; they count as alive.
func (d *segDir) writerAlive(s *segment) bool {
	if s.host != d.l.writer.host {
		return true
	}
	if time.Since(s.aliveAt) > time.Second {
		s.alive, s.aliveAt = fsx.ProcessAlive(s.pid), time.Now()
	}
	return s.alive
}

// readSeg indexes the whole lines appended to s since it was last read. A
// partial last line (its writer is writing it, or was killed writing it)
// is left for the next read.
func (d *segDir) readSeg(s *segment) {
	f, err := fsx.OpenNoFollow(s.path)
	if err != nil {
		return
	}
	defer f.Close()
	if _, err := f.Seek(s.off, io.SeekStart); err != nil {
		return
	}
	br := bufio.NewReaderSize(f, 256<<10)
	var long []byte
	for {
		line, err := br.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			if len(long)+len(line) <= maxLine {
				long = append(long, line...)
			} else {
				long = long[:0:0] // damage: skip to the next line end
			}
			continue
		}
		if err != nil {
			return // EOF: a partial line (or none) is left unread
		}
		if long != nil {
			line = append(long, line...)
			long = nil
		}
		if s.off == 0 && !d.checkHeader(s, line) {
			return
		}
		d.index(s, s.off, line)
		s.off += int64(len(line))
	}
}

// checkHeader accepts a segment whose first line names this format.
func (d *segDir) checkHeader(s *segment, line []byte) bool {
	h, _, ok := splitLine(line[:len(line)-1])
	if hd, hok := parseHeader(h); !ok || !hok || hd.kind != 'h' || hd.extra != segFormat {
		s.done = true // foreign or damaged: never read
		return false
	}
	return true
}

// index adds the record line (LF included) at off of s (d.mu held). A
// damaged line or a header line adds nothing.
func (d *segDir) index(s *segment, off int64, line []byte) {
	h, _, ok := splitLine(line[:len(line)-1])
	if !ok {
		return
	}
	hd, ok := parseHeader(h)
	if !ok || hd.kind == 'h' || ids.Problem(hd.unit, ids.MaxConv) != "" {
		return
	}
	ur := d.units[hd.unit]
	if ur == nil {
		ur = &unitRecs{top: -1, lastReset: -1, maxCallBase: -2}
		d.units[hd.unit] = ur
	}
	r := rec{seg: s, off: off, n: int32(len(line)), kind: hd.kind, ev: hd.ev, num: int32(hd.num), at: hd.at}
	ur.recs = append(ur.recs, r)
	switch {
	case r.kind == 'c':
		ur.maxCallBase = max(ur.maxCallBase, hd.num)
	case hd.num > ur.top || (hd.num == ur.top && s.name < ur.recs[ur.topIdx].seg.name):
		// Two events of one revision only if the commit lock failed (a
		// file system without working locks): the lower segment name wins,
		// for every reader alike.
		ur.top, ur.topIdx = hd.num, len(ur.recs)-1
	}
	if r.kind == 'e' && r.ev == evReset {
		ur.lastReset = max(ur.lastReset, hd.num)
	}
}

// readRec reads a record's line back and checks it. The segment is opened
// as readSeg opens it: a file swapped for a named pipe since it was
// indexed is refused, not waited on.
func (d *segDir) readRec(r rec) (header, []byte, bool) {
	f, err := fsx.OpenNoFollow(r.seg.path)
	if err != nil {
		return header{}, nil, false
	}
	defer f.Close()
	line := make([]byte, r.n)
	if _, err := f.ReadAt(line, r.off); err != nil {
		return header{}, nil, false
	}
	h, body, ok := splitLine(line[:len(line)-1])
	if !ok {
		return header{}, nil, false
	}
	hd, ok := parseHeader(h)
	return hd, body, ok
}

func (d *segDir) readCall(r rec) (Entry, bool) {
	hd, body, ok := d.readRec(r)
	var e Entry
	if !ok || hd.kind != 'c' || json.Unmarshal(body, &e) != nil || e.Key != hd.key {
		return Entry{}, false
	}
	return e, true
}

func (d *segDir) readEvent(r rec) (event, error) {
	hd, body, ok := d.readRec(r)
	if ok && hd.kind == 'e' {
		if ev, ok := decodeEvent(hd, body); ok {
			return ev, nil
		}
	}
	return event{}, fmt.Errorf("callstore: %s: a record indexed at %d can no longer be read", r.seg.path, r.off)
}

// noteOpen counts the directory among those with files open (d.mu held).
func (d *segDir) noteOpen() {
	if !d.filesOpen {
		d.filesOpen = true
		d.l.openDirs.Add(1)
	}
}

// closeFiles closes this directory's open files (d.mu held); they are
// opened again when needed.
func (d *segDir) closeFiles() {
	if d.filesOpen {
		d.filesOpen = false
		d.l.openDirs.Add(-1)
	}
	if d.w != nil && d.w.f != nil {
		d.w.f.Close()
		d.w.f = nil
	}
	if d.commitMu.TryLock() {
		if d.lockF != nil {
			d.lockF.Close()
			d.lockF = nil
		}
		d.commitMu.Unlock()
	}
}

// label of a segment's writer, for messages.
func (s *segment) String() string {
	return strings.TrimSuffix(s.name, ".seg")
}
