//go:build darwin || dragonfly || freebsd || linux || netbsd || openbsd

package fsx

import (
	"os"
	"syscall"
)

// nonBlock makes opening a named pipe return at once instead of waiting
// for a writer; a regular file ignores it.
const nonBlock = syscall.O_NONBLOCK

// openNoFollow opens path with O_NOFOLLOW: the kernel refuses a symbolic
// link at path in the same step as the open, so no link can be swapped in
// between a check and the open.
func openNoFollow(path string, flag int, mode os.FileMode) (*os.File, error) {
	f, err := os.OpenFile(path, flag|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, mode)
	if err != nil {
		return nil, asNotRegular(path, err)
	}
	return f, requireRegular(f, path)
}

// openDir opens the directory at path to list it, refusing a symbolic
// link there (O_NOFOLLOW) and anything but a directory (O_DIRECTORY) in
// the same step as the open: a walk never follows a link swapped in for a
// directory it listed.
func openDir(path string) (*os.File, error) {
	return os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_DIRECTORY|syscall.O_NONBLOCK, 0)
}
