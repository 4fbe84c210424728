package report

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/impactbench/impactbench/internal/callstore"
	"github.com/impactbench/impactbench/internal/fsx"
	"github.com/impactbench/impactbench/internal/layout"
)

// Live is what a run has stored so far, read from its call store. The
// outputs (conversations.json, scores.json) are written when a phase ends,
// so during a run they are missing or stale; the call store has one unit
// file per conversation and per judged row the moment it completes, and a
// journal (.jsonl) while it is in progress.
type Live struct {
	// Running says a process holds the benchmark's lock (Holder is what it
	// wrote there: its pid and start time).
	Running bool   `json:"running"`
	Holder  string `json:"holder,omitempty"`
	// Generated counts metrics whose scenarios are stored (gen_scenarios).
	Generated UnitCount `json:"gen_scenarios"`
	// Targets maps a target's call-store name to its units.
	Targets map[string]TargetLive `json:"targets,omitempty"`
	// Shards lists shard output files (`--shard i/K`) per target.
	Shards map[string][]ShardFile `json:"shards,omitempty"`
}

// UnitCount is a phase's units: stored (complete) and in progress.
type UnitCount struct {
	Stored     int `json:"stored"`
	InProgress int `json:"in_progress"`
}

// TargetLive is one target's simulate and evaluate units.
type TargetLive struct {
	Simulate UnitCount `json:"simulate"`
	Evaluate UnitCount `json:"evaluate"`
}

// ShardFile is one shard's output and its row count.
type ShardFile struct {
	File string `json:"file"`
	Rows int    `json:"rows"`
}

// ReadLive reads the call store under cacheDir (the benchmark's
// .cache/<bench> directory) and the shard files under benchDir. Missing
// or unreadable directories read as nothing stored; a folder holding more
// entries than its bound (calls/, a units folder, the cache folder, runs/
// or a run's folder) is an *fsx.TooManyEntriesError naming it (exit 2),
// not shown as none.
func ReadLive(benchDir, cacheDir string) (Live, error) {
	l := Live{Targets: map[string]TargetLive{}}
	files := layout.Bench{Dir: benchDir, Cache: cacheDir}
	var err error
	if l.Running, l.Holder, err = running(files); err != nil {
		return Live{}, err
	}
	calls := files.Calls()
	if l.Generated, err = countUnits(calls, layout.GenScenariosDir, nil); err != nil {
		return Live{}, err
	}
	ents, err := fsx.ReadDir(calls, layout.MaxRunEntries, fs.DirEntry.IsDir)
	if tooMany(err) {
		return Live{}, err
	}
	for _, e := range ents {
		if !e.IsDir() || !layout.IsTargetDir(e.Name()) {
			continue
		}
		var tl TargetLive
		if tl.Simulate, err = countUnits(calls, layout.TargetDir(e.Name(), layout.SimDir), isRow); err != nil {
			return Live{}, err
		}
		if tl.Evaluate, err = countUnits(calls, layout.TargetDir(e.Name(), layout.EvalDir), isRow); err != nil {
			return Live{}, err
		}
		if tl != (TargetLive{}) {
			l.Targets[e.Name()] = tl
		}
	}
	if l.Shards, err = shardFiles(benchDir); err != nil {
		return Live{}, err
	}
	return l, nil
}

// tooMany reports whether err is a folder over its bound (the error to
// give), rather than one missing or unreadable (shown as none).
func tooMany(err error) bool {
	var many *fsx.TooManyEntriesError
	return errors.As(err, &many)
}

// countUnits counts the completed and in-progress units of the directory
// rel ('/'-separated) of the call store at calls; with keep, only the
// completed units whose names it accepts.
func countUnits(calls, rel string, keep func(string) bool) (UnitCount, error) {
	done, inProgress, err := callstore.ListUnits(filepath.Join(calls, filepath.FromSlash(rel)))
	if err != nil {
		return UnitCount{}, err
	}
	n := 0
	for _, u := range done {
		if keep == nil || keep(u.Name) {
			n++
		}
	}
	return UnitCount{Stored: n, InProgress: inProgress}, nil
}

// isRow reports whether a unit of a target's sim or eval directory is a
// row (<scenario>__s<sample>), as the stages name them.
func isRow(name string) bool {
	_, _, ok := layout.ParseRowFile(name)
	return ok
}

// running reports whether a run of the benchmark holds its lock, or
// shards of it hold theirs (several workers on one shared directory), and
// names the holders: "pid 42, host node-7, …" or "shard 0/2: pid 42, …;
// shard 1/2: …".
func running(files layout.Bench) (bool, string, error) {
	if h, held := fsx.LockHeld(files.Lock(layout.Shard{})); held {
		return true, h.String(), nil
	}
	locks, err := files.ShardLocks()
	if tooMany(err) {
		return false, "", err
	}
	var shards []string
	for path, s := range locks {
		if h, held := fsx.LockHeld(path); held {
			shards = append(shards, fmt.Sprintf("shard %d/%d: %s", s.Index, s.Count, h))
		}
	}
	if len(shards) == 0 {
		return false, "", nil
	}
	sort.Strings(shards)
	return true, strings.Join(shards, "; "), nil
}

// maxShardCountBytes bounds a shard file status reads to count its rows.
const maxShardCountBytes = 256 << 20

// shardFiles lists runs/<target>/{conversations,scores}.shard-i-of-K.json
// (layout.ShardFiles: the names a shard's run writes); its error is runs/
// or a run's folder over its bound.
func shardFiles(benchDir string) (map[string][]ShardFile, error) {
	out := map[string][]ShardFile{}
	targets, err := layout.RunTargets(benchDir)
	if tooMany(err) {
		return nil, err
	}
	for _, t := range targets {
		d := layout.Bench{Dir: benchDir}.RunDir(t)
		for _, name := range []string{layout.ConversationsFile, layout.ScoresFile} {
			paths, err := layout.ShardFiles(d, name)
			if err != nil {
				return nil, err
			}
			for p := range paths {
				rows := -1
				// Only a regular file, and not past maxShardCountBytes:
				// a named pipe here blocked status forever, and a display
				// gives up counting (-1) before it fills memory.
				if raw, err := fsx.ReadFile(p, maxShardCountBytes); err == nil {
					rows = countTopLevelRows(raw)
				}
				out[t] = append(out[t], ShardFile{File: filepath.Base(p), Rows: rows})
			}
		}
	}
	for t := range out {
		sort.Slice(out[t], func(i, j int) bool { return out[t][i].File < out[t][j].File })
	}
	if len(out) == 0 {
		return nil, nil
	}
	return out, nil
}

// countTopLevelRows counts the objects of a JSON array without decoding
// them (-1 if it is not one): status only needs how far a shard got.
func countTopLevelRows(b []byte) int {
	depth, rows, inStr, esc := 0, 0, false, false
	for _, ch := range b {
		switch {
		case inStr:
			switch {
			case esc:
				esc = false
			case ch == '\\':
				esc = true
			case ch == '"':
				inStr = false
			}
		case ch == '"':
			inStr = true
		case ch == '[' || ch == '{':
			if depth == 1 && ch == '{' {
				rows++
			}
			depth++
		case ch == ']' || ch == '}':
			depth--
		}
	}
	if depth != 0 {
		return -1
	}
	return rows
}

// liveCell is the CONVERSATIONS or SCORES cell of a target whose output is
// not there yet (or is being redone) while its units are being stored.
func liveCell(u UnitCount, total int) string {
	s := strconv.Itoa(u.Stored)
	if total > 0 {
		s += "/" + strconv.Itoa(total)
	}
	s += " stored"
	if u.InProgress > 0 {
		s += ", " + strconv.Itoa(u.InProgress) + " in progress"
	}
	return s
}

// runTargetsOf lists the benchmark's run directories; an unreadable runs/
// shows as none (the report shows what there is), but one holding more
// entries than its bound is an *fsx.TooManyEntriesError naming it (exit
// 2), not shown as no runs.
func runTargetsOf(benchDir string) ([]string, error) {
	ts, err := layout.RunTargets(benchDir)
	if tooMany(err) {
		return nil, err
	}
	return ts, nil
}
