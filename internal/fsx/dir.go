package fsx

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"sort"

	"github.com/impactbench/impactbench/internal/fault"
)

// dirBatch is how many entries ReadDir asks the operating system for at a
// time.
const dirBatch = 256

// ReadDir lists the entries of the directory dir (a link to one is
// followed) that keep accepts (nil keeps all), sorted by name like
// os.ReadDir. It reads the directory in batches and stops with a
// *TooManyEntriesError once it has seen more than limit entries, kept or
// not: a folder of millions of entries costs at most limit entries' time,
// and memory only for those kept. Entries are not opened or followed:
// keep sees each one's type as the directory reports it (a named pipe, a
// socket or a link is not a regular file or a directory).
func ReadDir(dir string, limit int, keep func(fs.DirEntry) bool) ([]fs.DirEntry, error) {
	f, err := os.OpenFile(dir, os.O_RDONLY|nonBlock, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []fs.DirEntry
	seen := 0
	for {
		batch, err := f.ReadDir(dirBatch)
		seen += len(batch)
		if seen > limit {
			return nil, &TooManyEntriesError{Path: dir, Limit: limit}
		}
		for _, e := range batch {
			if keep == nil || keep(e) {
				out = append(out, e)
			}
		}
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, err
		}
		if len(batch) == 0 {
			break
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name() < out[j].Name() })
	return out, nil
}

// TooManyEntriesError is a directory holding more entries than what lists
// it allows. It is bad input (exit 2).
type TooManyEntriesError struct {
	Path  string
	Limit int
}

func (e *TooManyEntriesError) Error() string {
	return fmt.Sprintf("%s holds more than %d entries, the limit for this folder: move what does not belong there elsewhere", e.Path, e.Limit)
}

// FaultKind makes a folder with too many entries an input error.
func (e *TooManyEntriesError) FaultKind() fault.Kind { return fault.Input }
