package publish

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/impactbench/impactbench/internal/artifacts"
	"github.com/impactbench/impactbench/internal/fsx"
	"github.com/impactbench/impactbench/internal/site"
)

// ManifestFile, in the output directory, lists every file the last
// publish wrote there, so the next one removes those it no longer writes
// (and never anything else).
const ManifestFile = ".impactbench-publish.json"

type manifest struct {
	Files []string `json:"files"`
}

// writer puts files under out, leaving alone those whose bytes would not
// change.
type writer struct {
	out    string
	dryRun bool
	rep    *Report
	seen   map[string]bool
}

func newWriter(out string, dryRun bool, rep *Report) *writer {
	return &writer{out: out, dryRun: dryRun, rep: rep, seen: map[string]bool{}}
}

// emit writes data to rel (a slash path under out) unless the file already
// holds exactly these bytes. A written file replaces the old one by rename,
// so a reader (the site, a static host) sees the old file or the new one,
// never a torn one. Files are not fsynced one by one — a study has tens of
// thousands — so after a crash, publish again: it compares bytes, and
// rewrites whatever did not reach the disk.
func (w *writer) emit(rel string, data []byte) error {
	if w.seen[rel] {
		return fmt.Errorf("publish: %s would be written twice", rel)
	}
	w.seen[rel] = true
	w.rep.Files++
	path := filepath.Join(w.out, filepath.FromSlash(rel))
	if same(path, data) {
		w.rep.Unchanged++
		return nil
	}
	w.rep.Written = append(w.rep.Written, rel)
	if w.dryRun {
		return nil
	}
	return replaceFile(path, data)
}

// emitAll emits the site's files.
func (w *writer) emitAll(files []site.File) error {
	for _, f := range files {
		if err := w.emit(f.Path, f.Data); err != nil {
			return err
		}
	}
	return nil
}

// same reports whether path holds exactly data.
func same(path string, data []byte) bool {
	st, err := os.Stat(path)
	if err != nil || !st.Mode().IsRegular() || st.Size() != int64(len(data)) {
		return false
	}
	old, err := os.ReadFile(path)
	return err == nil && bytes.Equal(old, data)
}

// replaceFile replaces path with data, atomically but without an fsync
// per file (tens of thousands of them; a crash is healed by publishing
// again, which compares every file with its new bytes).
func replaceFile(path string, data []byte) error {
	if err := fsx.WriteFileUnsynced(path, data, fsx.Shared); err != nil {
		return fmt.Errorf("publish: %w", err)
	}
	return nil
}

// finish removes the files the previous publish wrote that this one did
// not (listed in its manifest), then records this publish's files.
func (w *writer) finish() error {
	mpath := filepath.Join(w.out, ManifestFile)
	var old manifest
	if data, err := os.ReadFile(mpath); err == nil {
		if err := json.Unmarshal(data, &old); err != nil {
			return &artifacts.FileError{Path: mpath, Row: -1, Err: fmt.Errorf("not a publish manifest: %w", err), Hint: " (delete it: publish then removes no stale files)"}
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("publish: %w", err)
	}
	for _, rel := range old.Files {
		if w.seen[rel] || !safeRel(rel) {
			continue
		}
		w.rep.Removed = append(w.rep.Removed, rel)
		if w.dryRun {
			continue
		}
		path := filepath.Join(w.out, filepath.FromSlash(rel))
		if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("publish: %w", err)
		}
		pruneEmpty(w.out, filepath.Dir(path))
	}
	slices.Sort(w.rep.Removed)
	files := make([]string, 0, len(w.seen))
	for rel := range w.seen {
		files = append(files, rel)
	}
	slices.Sort(files)
	data, err := json.MarshalIndent(manifest{Files: files}, "", " ")
	if err != nil {
		return err
	}
	if w.dryRun || same(mpath, data) {
		return nil
	}
	return fsx.WriteFile(mpath, data, fsx.Shared)
}

// safeRel accepts a manifest entry only inside the output directory.
func safeRel(rel string) bool {
	return rel != "" && !strings.HasPrefix(rel, "/") && !slices.Contains(strings.Split(rel, "/"), "..")
}

// pruneEmpty removes dir and its empty parents up to (not including) root.
func pruneEmpty(root, dir string) {
	root = filepath.Clean(root)
	for d := filepath.Clean(dir); d != root && strings.HasPrefix(d, root+string(filepath.Separator)); d = filepath.Dir(d) {
		if os.Remove(d) != nil {
			return
		}
	}
}
