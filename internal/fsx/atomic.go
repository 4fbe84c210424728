// Package fsx is impactbench's one file layer: every file the tool replaces
// is written atomically here, every file it appends to or locks is opened
// here without following a symbolic link, and the temp files a killed write
// leaves behind are swept from here. It sits below every other package
// (it imports only the standard library and golang.org/x/sys), so config,
// the provider clients, the call store and the artifacts share it.
//
// Atomic write: a temp file in the target's directory, named
// ".<name>.tmp-<16 hex digits>" (the only temp name the tool makes), is
// written, fsynced, renamed over the target, and the directory is fsynced,
// so a reader or a crash sees the old file or the whole new one, never a
// torn one. Rename replaces a symbolic link at the target with a regular
// file; it never writes through it.
package fsx

import (
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"unicode/utf8"
)

// Perm says who may read what impactbench writes.
type Perm int

const (
	// Shared files (results, reports, exports, labels) are created like
	// any other program's: 0666 and directories 0777, less the umask
	// (0644 and 0755 under the usual 022, 0600 and 0700 under 077). A file
	// that already exists keeps its mode.
	Shared Perm = iota
	// Private files (the call store: full transcripts and the simulated
	// user's hidden thoughts; batch state) are 0600 in 0700 directories
	// (less a umask that would take the owner's own bits), never more open
	// whatever the umask or the mode an earlier file had.
	Private
)

func (p Perm) fileMode() fs.FileMode {
	if p == Private {
		return 0o600
	}
	return 0o666
}

func (p Perm) dirMode() fs.FileMode {
	if p == Private {
		return 0o700
	}
	return 0o777
}

// MkdirAll creates dir and its missing parents with p's directory mode.
// Directories that already exist are left as they are.
func MkdirAll(dir string, p Perm) error {
	if err := os.MkdirAll(dir, p.dirMode()); err != nil {
		return fmt.Errorf("create directory %s: %w", dir, err)
	}
	return nil
}

// WriteFile replaces path with data atomically (see the package comment),
// creating missing parent directories.
func WriteFile(path string, data []byte, p Perm) error {
	f, err := Create(path, p)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Abort()
		return err
	}
	return f.Commit()
}

// WriteFileUnsynced is WriteFile without the fsyncs: the file is replaced
// whole or not at all while the system runs, but a power loss may leave
// the old content or an empty file. For writers of many files that can
// simply be written again (publish's tens of thousands of site files, each
// compared with its new bytes the next time), where an fsync per file
// would cost more than the write.
func WriteFileUnsynced(path string, data []byte, p Perm) error {
	f, err := Create(path, p)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Abort()
		return err
	}
	f.noSync = true
	return f.Commit()
}

// File is a file being written atomically: nothing is visible at its path
// until Commit; Abort (or a crash) leaves the path as it was.
type File struct {
	path   string
	perm   Perm
	f      *os.File
	done   bool
	noSync bool // WriteFileUnsynced
}

// Create starts an atomic write of path, creating missing parent
// directories. Write to it, then Commit or Abort; `defer f.Abort()` is the
// idiom (Abort after Commit does nothing).
func Create(path string, p Perm) (*File, error) {
	dir := filepath.Dir(path)
	if err := MkdirAll(dir, p); err != nil {
		return nil, err
	}
	f, err := createTemp(dir, filepath.Base(path), p.fileMode())
	if err != nil {
		return nil, fmt.Errorf("create temp file for %s: %w", path, err)
	}
	return &File{path: path, perm: p, f: f}, nil
}

// Write appends b to the pending file.
func (f *File) Write(b []byte) (int, error) {
	if f.done {
		return 0, fmt.Errorf("write %s: already committed or aborted", f.path)
	}
	n, err := f.f.Write(b)
	if err != nil {
		return n, fmt.Errorf("write %s: %w", f.path, err)
	}
	return n, nil
}

// Unsynced makes Commit skip the fsyncs, as WriteFileUnsynced does.
func (f *File) Unsynced() { f.noSync = true }

// Path is the file's final path.
func (f *File) Path() string { return f.path }

// Commit makes the written bytes the file at its path: fsync, rename over
// the path, fsync the directory. On failure the temp file is removed and
// the path is left as it was.
func (f *File) Commit() (err error) {
	if f.done {
		return fmt.Errorf("commit %s: already committed or aborted", f.path)
	}
	f.done = true
	tmp := f.f.Name()
	defer func() {
		if err != nil {
			_ = f.f.Close() // already failing; the first error is the one to report
			_ = os.Remove(tmp)
		}
	}()
	f.setMode()
	if err := f.sync(); err != nil {
		return fmt.Errorf("sync %s: %w", tmp, err)
	}
	if err := f.f.Close(); err != nil {
		return fmt.Errorf("close %s: %w", tmp, err)
	}
	if err := os.Rename(tmp, f.path); err != nil {
		return fmt.Errorf("replace %s: %w", f.path, err)
	}
	if !f.noSync {
		SyncDir(filepath.Dir(f.path))
	}
	return nil
}

func (f *File) sync() error {
	if f.noSync {
		return nil
	}
	return f.f.Sync()
}

// setMode gives a Shared file replacing a regular file that file's mode
// (the temp file was created 0666 less the umask, which is right for a
// new one). Best effort: a file system that cannot chmod loses a mode,
// never data. A Private file needs nothing: it was created 0600 less the
// umask, which is never more open than 0600.
func (f *File) setMode() {
	if f.perm != Shared || runtime.GOOS == "windows" {
		return // Windows has only the read-only bit
	}
	st, err := os.Lstat(f.path)
	if err != nil || !st.Mode().IsRegular() {
		return
	}
	_ = f.f.Chmod(st.Mode().Perm())
}

// Abort discards the pending file; the path is left as it was. Safe to
// call after Commit (it does nothing).
func (f *File) Abort() {
	if f.done {
		return
	}
	f.done = true
	_ = f.f.Close()
	_ = os.Remove(f.f.Name())
}

// SyncDir makes a rename or a new directory entry in dir durable. Best
// effort: some platforms and file systems (Windows, some FUSE mounts)
// cannot fsync a directory, and the data itself is already on disk.
func SyncDir(dir string) {
	d, err := os.Open(dir)
	if err != nil {
		return
	}
	_ = d.Sync()
	_ = d.Close()
}

// tempMarker sits between a temp file's target name and its random suffix.
const tempMarker = ".tmp-"

// tempRandLen is the number of hex digits ending every temp name.
const tempRandLen = 16

// maxTempBase bounds the part of a temp name taken from the target's name,
// so that the temp name fits the usual 255-byte limit of one name.
const maxTempBase = 200

// createTemp creates a new temp file for the file base in dir, with mode
// (less the umask), never reusing an existing name.
func createTemp(dir, base string, mode fs.FileMode) (*os.File, error) {
	for range 100 {
		name := filepath.Join(dir, tempName(base))
		f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_EXCL, mode)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		return f, err
	}
	return nil, fmt.Errorf("no free temp file name in %s", dir)
}

// tempName is ".<base>.tmp-<16 hex digits>", base cut to maxTempBase bytes
// on a character boundary.
func tempName(base string) string {
	if len(base) > maxTempBase {
		cut := maxTempBase
		for cut > 0 && !utf8.RuneStart(base[cut]) {
			cut--
		}
		base = base[:cut]
	}
	r := strconv.FormatUint(rand.Uint64(), 16)
	for len(r) < tempRandLen {
		r = "0" + r
	}
	return "." + base + tempMarker + r
}
