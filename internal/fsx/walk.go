package fsx

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// WalkDepth is how deep below its root Walk goes: a directory that many
// levels down is shown to Walk's fn but not entered, so a folder nested
// without end (or a loop a link swapped in between listing and opening
// would make) costs a bounded number of open directories.
const WalkDepth = 64

// Walk calls fn with the path and the entry of everything under the
// directory root (root itself excluded; a link to a directory is followed
// as root, so resolve it first to see paths through the real folder), a
// directory before what it holds. Unlike filepath.WalkDir, which reads
// each directory whole (and sorts it) before looking at any entry, Walk
// reads every directory in batches and calls fn on each entry as it comes,
// going into a subdirectory when it meets it: it holds one batch per level
// it is in, never a whole listing, so a folder of millions of files costs
// time, not memory. Entries come in the directory's order, not sorted.
//
// Nothing under root is followed: a link, to a directory or not, is given
// to fn as a link and not entered. A directory WalkDepth levels below root
// is given to fn but not entered. A directory that cannot be opened or
// read to its end is left (what fn saw of it stands). fn returning
// fs.SkipDir for a directory leaves what it holds; any other error from
// fn ends the walk with that error. Walk's error is that, or why root
// cannot be listed.
func Walk(root string, fn func(path string, e fs.DirEntry) error) error {
	f, err := os.OpenFile(root, os.O_RDONLY|nonBlock, 0)
	if err != nil {
		return err
	}
	if st, err := f.Stat(); err != nil || !st.IsDir() {
		f.Close()
		if err == nil {
			err = fmt.Errorf("walk %s: not a directory", root)
		}
		return err
	}
	return walkDir(f, root, 1, fn)
}

// walkDir gives fn the entries of the open directory f (at path dir,
// holding entries depth levels below the root) and walks its
// subdirectories, then closes f.
func walkDir(f *os.File, dir string, depth int, fn func(string, fs.DirEntry) error) error {
	defer f.Close()
	for {
		batch, readErr := f.ReadDir(dirBatch)
		for _, e := range batch {
			path := filepath.Join(dir, e.Name())
			err := fn(path, e)
			if errors.Is(err, fs.SkipDir) {
				continue
			}
			if err != nil {
				return err
			}
			if !e.IsDir() || depth >= WalkDepth {
				continue // a link to a directory is not one here: e.Type() is the link's
			}
			sub, err := openDir(path)
			if err != nil {
				continue // unreadable, or replaced since it was listed: left
			}
			if err := walkDir(sub, path, depth+1, fn); err != nil {
				return err
			}
		}
		if readErr != nil || len(batch) == 0 {
			return nil // the end, or a directory that stopped reading: left
		}
	}
}
