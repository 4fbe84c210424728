//go:build !linux

package fsx

// renameNoReplace renames old to new unless new exists (fs.ErrExist), by
// a hard link; errUnsupported where the file system has none.
func renameNoReplace(old, new string) error { return linkRename(old, new) }

// exchange cannot be done atomically here.
func exchange(a, b string) error { return errUnsupported }
