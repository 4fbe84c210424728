package fsx

import (
	"errors"
	"io/fs"
	"os"

	"golang.org/x/sys/unix"
)

// renameNoReplace renames old to new unless new exists (fs.ErrExist).
// Without renameat2's flag (an old kernel, a file system without it) a
// hard link does the same; errUnsupported when neither can.
func renameNoReplace(old, new string) error {
	err := unix.Renameat2(unix.AT_FDCWD, old, unix.AT_FDCWD, new, unix.RENAME_NOREPLACE)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, unix.EEXIST):
		return fs.ErrExist
	case errors.Is(err, unix.EINVAL), errors.Is(err, unix.ENOSYS), errors.Is(err, unix.EOPNOTSUPP):
		return linkRename(old, new)
	default:
		return &os.LinkError{Op: "rename", Old: old, New: new, Err: err}
	}
}

// exchange swaps the files at a and b atomically; fs.ErrNotExist when b
// has none, errUnsupported where the file system cannot.
func exchange(a, b string) error {
	err := unix.Renameat2(unix.AT_FDCWD, a, unix.AT_FDCWD, b, unix.RENAME_EXCHANGE)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, unix.ENOENT):
		return fs.ErrNotExist
	case errors.Is(err, unix.EINVAL), errors.Is(err, unix.ENOSYS), errors.Is(err, unix.EOPNOTSUPP):
		return errUnsupported
	default:
		return &os.LinkError{Op: "exchange", Old: a, New: b, Err: err}
	}
}
