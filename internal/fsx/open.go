package fsx

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
)

// NotRegularError is a path that impactbench will not read or write
// because it is not a regular file: a directory, a named pipe (which would
// block a reader forever), a device, or, for the no-follow opens, a
// symbolic link (appending through one would write into whatever file it
// points at, such as a shell's startup file).
type NotRegularError struct {
	Path string
	What string // "a symbolic link", "a directory", …
}

func (e *NotRegularError) Error() string {
	if e.What == "a symbolic link" {
		return fmt.Sprintf("%s is a symbolic link: impactbench does not write or lock through links; replace it with a regular file", e.Path)
	}
	return fmt.Sprintf("%s is %s, not a regular file", e.Path, e.What)
}

// describe names a non-regular file mode.
func describe(m fs.FileMode) string {
	switch {
	case m&fs.ModeSymlink != 0:
		return "a symbolic link"
	case m.IsDir():
		return "a directory"
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeDevice != 0:
		return "a device"
	}
	return "not a regular file (" + m.Type().String() + ")"
}

// Open opens path for reading, following symbolic links (a benchmark
// folder, or a file in it, may be a link to elsewhere), and refuses
// anything but a regular file with a *NotRegularError. A named pipe is
// refused without blocking.
func Open(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|nonBlock, 0)
	if err != nil {
		return nil, err
	}
	return f, requireRegular(f, path)
}

// OpenNoFollow opens path for reading like Open, but refuses a symbolic
// link at path itself (links among its parent directories are followed).
// It is for files impactbench also appends to or locks, so that reading
// and writing agree on what the file is.
func OpenNoFollow(path string) (*os.File, error) {
	return openNoFollow(path, os.O_RDONLY, 0)
}

// OpenAppend opens path for appending, creating it (mode as p says) when
// missing. A symbolic link at path is refused, never followed, and so is
// anything but a regular file: a *NotRegularError names the path.
func OpenAppend(path string, p Perm) (*os.File, error) {
	return openNoFollow(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, p.fileMode())
}

// OpenLockFile opens (creating when missing) a lock file for TryLock or
// Lock, refusing a symbolic link or anything but a regular file at path.
func OpenLockFile(path string) (*os.File, error) {
	return openNoFollow(path, os.O_RDWR|os.O_CREATE, Shared.fileMode())
}

// ReadFile reads the regular file at path (links followed, see Open),
// refusing one larger than limit bytes with an error naming the path and
// the limit, after reading at most limit+1 bytes.
func ReadFile(path string, limit int64) ([]byte, error) {
	return readCapped(Open, path, limit)
}

// ReadFileNoFollow is ReadFile of a file that must not be a link (see
// OpenNoFollow): for files impactbench itself writes and replaces.
func ReadFileNoFollow(path string, limit int64) ([]byte, error) {
	return readCapped(OpenNoFollow, path, limit)
}

func readCapped(open func(string) (*os.File, error), path string, limit int64) ([]byte, error) {
	f, err := open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	if int64(len(b)) > limit {
		return nil, &TooLargeError{Path: path, Limit: limit}
	}
	return b, nil
}

// TooLargeError is a file over the size limit of what reads it.
type TooLargeError struct {
	Path  string
	Limit int64
}

func (e *TooLargeError) Error() string {
	return fmt.Sprintf("%s is larger than the %d-byte limit for this file", e.Path, e.Limit)
}

// requireRegular closes f and returns a *NotRegularError unless f is a
// regular file.
func requireRegular(f *os.File, path string) error {
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return fmt.Errorf("stat %s: %w", path, err)
	}
	if !st.Mode().IsRegular() {
		f.Close()
		return &NotRegularError{Path: path, What: describe(st.Mode())}
	}
	return nil
}

// asNotRegular turns the error of an open that refused a symbolic link into
// a *NotRegularError; other errors pass unchanged.
func asNotRegular(path string, err error) error {
	if err == nil {
		return nil
	}
	if st, lerr := os.Lstat(path); lerr == nil && !st.Mode().IsRegular() {
		var pe *fs.PathError
		if errors.As(err, &pe) && !errors.Is(err, fs.ErrNotExist) {
			return &NotRegularError{Path: path, What: describe(st.Mode())}
		}
	}
	return err
}
