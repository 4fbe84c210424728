//go:build windows

package fsx

import (
	"errors"
	"io/fs"
	"os"
)

// nonBlock: Windows has no named pipes in the file system namespace that
// an open could block on.
const nonBlock = 0

// openNoFollow refuses a symbolic link (or junction) at path: Windows has
// no O_NOFOLLOW, so the path is looked at first and the file opened is
// checked to be the very file looked at, which also catches a link swapped
// in between.
func openNoFollow(path string, flag int, mode os.FileMode) (*os.File, error) {
	for range 10 {
		before, err := os.Lstat(path)
		switch {
		case errors.Is(err, fs.ErrNotExist) && flag&os.O_CREATE != 0:
			f, err := os.OpenFile(path, flag|os.O_EXCL, mode)
			if errors.Is(err, fs.ErrExist) {
				continue // created meanwhile: look again
			}
			if err != nil {
				return nil, err
			}
			return f, requireRegular(f, path)
		case err != nil:
			return nil, err
		case !before.Mode().IsRegular():
			return nil, &NotRegularError{Path: path, What: describe(before.Mode())}
		}
		f, err := os.OpenFile(path, flag&^os.O_CREATE, mode)
		if err != nil {
			return nil, err
		}
		after, err := f.Stat()
		if err != nil || !os.SameFile(before, after) {
			f.Close()
			continue // replaced meanwhile: look again
		}
		return f, nil
	}
	return nil, &NotRegularError{Path: path, What: "a file that keeps changing while it is opened"}
}

// openDir opens the directory at path to list it, refusing a symbolic
// link (or junction) there and anything but a directory: Windows has no
// O_NOFOLLOW, so the path is looked at first and the directory opened is
// checked to be the one looked at.
func openDir(path string) (*os.File, error) {
	before, err := os.Lstat(path)
	if err != nil {
		return nil, err
	}
	if !before.IsDir() {
		return nil, &fs.PathError{Op: "open", Path: path, Err: errors.New("not a directory")}
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	if after, err := f.Stat(); err != nil || !os.SameFile(before, after) {
		f.Close()
		return nil, &fs.PathError{Op: "open", Path: path, Err: errors.New("replaced while it was opened")}
	}
	return f, nil
}
