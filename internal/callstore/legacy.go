package callstore

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/impactbench/impactbench/internal/fsx"
)

// Units written by versions before segment journals are files beside the
// segments, read as they are and never written again:
//
//   - <unit>.json, a completed unit: one JSON object (compact form) or the
//     unit's journal renamed into place with a closing trailer line
//     (journal form);
//   - <unit>.jsonl, the journal of a unit in progress: one call per line.
//     Beside a <unit>.json it holds calls made while the unit was redone.
//
// Their result is the unit's revision 0, so anything a segment records
// for the unit (revision 1 on) comes after it.

type unitFile struct {
	Version   string          `json:"version"`
	Calls     []Entry         `json:"calls"`
	Result    json.RawMessage `json:"result,omitempty"`
	ResultKey string          `json:"result_key,omitempty"`
}

// journalLine is any line of a journal or of a unit file in journal form:
// a call (Entry) or the closing trailer.
type journalLine struct {
	Entry
	Version   string          `json:"version"`
	Result    json.RawMessage `json:"result"`
	ResultKey string          `json:"result_key"`
}

// parseUnit reads a legacy unit file in either of its forms. ok is false
// for an unreadable or foreign file. With resultOnly, calls are not decoded.
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

// legacyUnit is what the files of an earlier version hold for one unit.
type legacyUnit struct {
	calls      map[string]Entry
	result     *event // revision 0, when <unit>.json is a readable unit
	hasFile    bool
	hasJournal bool
}

// legacyPaths are a unit's file and journal under root.
func legacyPaths(root, name string) (file, journal string) {
	p := filepath.Join(root, filepath.FromSlash(name))
	return p + ".json", p + ".jsonl"
}

// maxLegacyBytes bounds a legacy file as it is read (a var: tests lower
// it). A unit is one conversation's or one row's calls and its result:
// tens of MiB at most, even with the uncut answers earlier versions kept.
var maxLegacyBytes int64 = 256 << 20

// unreadable reports a legacy file that is not read at all: not a regular
// file (a named pipe would block the read), or over maxLegacyBytes. Like a
// damaged one, it is never trusted: its calls are made again.
func unreadable(err error) bool {
	var nr *fsx.NotRegularError
	var tl *fsx.TooLargeError
	return errors.As(err, &nr) || errors.As(err, &tl)
}

// readLegacy reads a unit's legacy files (neither existing is no error).
// With resultOnly, calls are not read.
func readLegacy(root, name string, resultOnly bool) (legacyUnit, error) {
	l := legacyUnit{calls: map[string]Entry{}}
	file, journal := legacyPaths(root, name)
	b, err := fsx.ReadFile(file, maxLegacyBytes)
	switch {
	case unreadable(err):
		l.hasFile = true // never trusted, as a damaged file is
	case err == nil:
		l.hasFile = true
		if f, ok := parseUnit(b, resultOnly); ok {
			for _, e := range f.Calls {
				l.calls[e.Key] = e
			}
			var at time.Time
			if st, err := os.Stat(file); err == nil {
				at = st.ModTime()
			}
			l.result = &event{Rev: 0, Kind: evResult, Result: f.Result, ResultKey: f.ResultKey, At: at}
		} // else unreadable or old format: recomputed, never trusted
	case !errors.Is(err, os.ErrNotExist):
		return l, fmt.Errorf("callstore: read %s: %w", file, err)
	}
	if resultOnly {
		return l, nil
	}
	b, err = fsx.ReadFile(journal, maxLegacyBytes)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return l, nil
	case unreadable(err):
		l.hasJournal = true // its calls are made again
		return l, nil
	case err != nil:
		return l, fmt.Errorf("callstore: read %s: %w", journal, err)
	}
	l.hasJournal = true
	for _, line := range bytes.Split(b, []byte("\n")) {
		var e Entry
		if len(line) == 0 || json.Unmarshal(line, &e) != nil || e.Key == "" {
			continue // a torn last line: its answer was never handed out
		}
		l.calls[e.Key] = e
	}
	return l, nil
}
