package fsx

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// Guarded replacement closes the moment between a writer's last look at a
// file and the rename that replaces it, where a file someone put there
// could otherwise be overwritten or removed unseen (publish: a folder it
// shares with other people's files). Where the system can (Linux's
// renameat2), the rename itself does the check:
//
//   - CommitNew renames only if nothing is at the path (RENAME_NOREPLACE,
//     or a hard link, which fails on an existing name);
//   - CommitOver exchanges the new file with the old one (RENAME_EXCHANGE),
//     asks keep about the old one, now aside under the temp name, and
//     exchanges them back if it says no: the other file is never lost;
//   - RemoveOwned moves the file aside, asks keep, and moves it back if it
//     says no.
//
// Where it cannot (another system, a file system without those flags or
// links), the check and the rename are two steps, as before.

// ErrNotOurs is what CommitNew, CommitOver and RemoveOwned return when the
// file at the path is not the one expected; the path is left holding it.
var ErrNotOurs = errors.New("the file there is not the one expected")

// NotOursError says why a guarded commit or removal left the path alone.
type NotOursError struct {
	Path string
	// Why is keep's answer, or that a file appeared (CommitNew).
	Why error
	// Aside, when not empty, is where the other file is now (a name no
	// temp sweep removes): putting it back failed.
	Aside string
}

func (e *NotOursError) Error() string {
	s := fmt.Sprintf("%s: %v", e.Path, e.Why)
	if e.Aside != "" {
		s += "; it is now at " + e.Aside
	}
	return s
}

func (e *NotOursError) Unwrap() []error { return []error{ErrNotOurs, e.Why} }

// errAppeared is CommitNew's reason.
var errAppeared = errors.New("a file appeared there")

// CommitOver is Commit for a path whose file the caller checked: keep is
// asked about the file actually replaced (at the path it then sits at)
// and, when it returns an error, that file is put back and the error is a
// *NotOursError wrapping it. A path that has no file any more is committed
// as by CommitNew.
func (f *File) CommitOver(keep func(old string) error) error {
	return f.commitWith(func(tmp string) error {
		err := exchangeFiles(tmp, f.path)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			return f.commitNew(tmp)
		case errors.Is(err, errUnsupported):
			if _, err := os.Lstat(f.path); errors.Is(err, fs.ErrNotExist) {
				return f.commitNew(tmp)
			}
			if why := keep(f.path); why != nil {
				return &NotOursError{Path: f.path, Why: why}
			}
			return os.Rename(tmp, f.path)
		case err != nil:
			return err
		}
		// The old file is at tmp now, the new one at the path.
		if why := keep(tmp); why != nil {
			if err := exchangeFiles(tmp, f.path); err != nil {
				// Not under a temp name, which a sweep would remove.
				aside := filepath.Join(filepath.Dir(f.path), asideName(filepath.Base(f.path)))
				if os.Rename(tmp, aside) != nil {
					aside = tmp
				}
				return &NotOursError{Path: f.path, Why: why, Aside: aside}
			}
			return &NotOursError{Path: f.path, Why: why}
		}
		return nil // the old file, at tmp, is removed by commitWith
	})
}

// CommitNew is Commit for a path that had no file: if one appeared there
// since, nothing is replaced and the error is a *NotOursError.
func (f *File) CommitNew() error {
	return f.commitWith(f.commitNew)
}

func (f *File) commitNew(tmp string) error {
	switch err := noReplace(tmp, f.path); {
	case errors.Is(err, fs.ErrExist):
		return &NotOursError{Path: f.path, Why: errAppeared}
	case errors.Is(err, errUnsupported):
		if _, err := os.Lstat(f.path); err == nil {
			return &NotOursError{Path: f.path, Why: errAppeared}
		}
		return os.Rename(tmp, f.path)
	default:
		return err
	}
}

// commitWith is Commit with rename in place of os.Rename. Whatever is at
// the temp name afterwards — the new file when it was not committed, the
// replaced one after an exchange — is removed, unless it is someone
// else's file that could not be put back (NotOursError.Aside).
func (f *File) commitWith(rename func(tmp string) error) (err error) {
	if f.done {
		return fmt.Errorf("commit %s: already committed or aborted", f.path)
	}
	f.done = true
	tmp := f.f.Name()
	defer func() {
		var nf *NotOursError
		if !errors.As(err, &nf) || nf.Aside == "" {
			_ = os.Remove(tmp)
		}
	}()
	f.setMode()
	if err := f.sync(); err != nil {
		_ = f.f.Close()
		return fmt.Errorf("sync %s: %w", tmp, err)
	}
	if err := f.f.Close(); err != nil {
		return fmt.Errorf("close %s: %w", tmp, err)
	}
	if err := rename(tmp); err != nil {
		var nf *NotOursError
		if errors.As(err, &nf) {
			return err
		}
		return fmt.Errorf("replace %s: %w", f.path, err)
	}
	if !f.noSync {
		SyncDir(filepath.Dir(f.path))
	}
	return nil
}

// RemoveOwned removes the file at path if keep, asked about the file
// actually removed, says it may: the file is first moved aside (to
// ".<name>.aside-<16 hex digits>", a name the temp sweep never removes),
// and put back when keep returns an error (a *NotOursError wrapping it).
// A path with no file is no error.
func RemoveOwned(path string, keep func(p string) error) error {
	aside := filepath.Join(filepath.Dir(path), asideName(filepath.Base(path)))
	if err := os.Rename(path, aside); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		return fmt.Errorf("remove %s: %w", path, err)
	}
	why := keep(aside)
	if why == nil {
		if err := os.Remove(aside); err != nil {
			return fmt.Errorf("remove %s: %w", path, err)
		}
		return nil
	}
	switch err := noReplace(aside, path); {
	case err == nil:
		return &NotOursError{Path: path, Why: why}
	case errors.Is(err, errUnsupported):
		if _, err := os.Lstat(path); err != nil && os.Rename(aside, path) == nil {
			return &NotOursError{Path: path, Why: why}
		}
	}
	return &NotOursError{Path: path, Why: why, Aside: aside}
}

// asideName is ".<base>.aside-<16 hex digits>": like a temp name, but not
// one (IsTemp), so that no sweep ever removes a file moved aside.
func asideName(base string) string {
	t := tempName(base)
	i := len(t) - tempRandLen - len(tempMarker)
	return t[:i] + ".aside-" + t[i+len(tempMarker):]
}

// The system's guarded renames; tests take them away to try the two-step
// way of systems without them.
var (
	noReplace     = renameNoReplace
	exchangeFiles = exchange
)

// errUnsupported: the file system cannot do the guarded step atomically.
var errUnsupported = errors.New("not supported by this file system")

// linkRename renames old to new unless new exists, by a hard link (which
// fails on an existing name) and the removal of old.
func linkRename(old, new string) error {
	if err := os.Link(old, new); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return fs.ErrExist
		}
		return errUnsupported
	}
	return os.Remove(old)
}
