package artifacts

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"sync"

	"github.com/impactbench/impactbench/internal/fsx"
)

// costLocks serialises read-modify-write of one cost.json within this
// process (simulate and evaluate of one model may report concurrently).
// Across processes the last writer wins, as upstream.
var costLocks sync.Map // cleaned path → *sync.Mutex

func costLock(path string) *sync.Mutex {
	m, _ := costLocks.LoadOrStore(path, &sync.Mutex{})
	return m.(*sync.Mutex)
}

// UpdateCost records one phase in cost.json like upstream's reporter:
// re-read the file, replace only that phase's key (keeping its position;
// new phases are appended), keep every other phase byte-for-byte in value,
// and rewrite atomically. c.Phase is set to phase. An unreadable or corrupt
// file is copied to <path>.corrupt and replaced by a file holding only this
// phase, so a damaged ledger never blocks a run; one over
// MaxObjectFileBytes is renamed to <path>.corrupt unread. Anything but a
// regular file there (a directory, a named pipe that would block the read
// forever, a device) was not made by us: it is an error naming it, left
// in place.
func UpdateCost(path, phase string, c PhaseCost) error {
	mu := costLock(path)
	mu.Lock()
	defer mu.Unlock()

	c.Phase = phase
	obj := Object{}
	data, err := LimitedReadFile(path, MaxObjectFileBytes)
	var bad *FileError
	switch {
	case errors.As(err, &bad) && !isRegular(path):
		return fmt.Errorf("update cost: %w", err)
	case errors.As(err, &bad):
		// Too large to read: moved aside whole, never read nor copied.
		if rerr := os.Rename(path, path+".corrupt"); rerr != nil {
			return fmt.Errorf("%s is not a cost ledger (%v) and moving it aside failed: %w", path, bad.Err, rerr)
		}
	case err == nil:
		parsed, perr := decodeObjectRaw(data)
		if perr != nil {
			if berr := fsx.WriteFile(path+".corrupt", data, fsx.Shared); berr != nil {
				return fmt.Errorf("%s is corrupt (%v) and backing it up failed: %w", path, perr, berr)
			}
			break
		}
		obj = parsed
	case errors.Is(err, fs.ErrNotExist):
	default:
		// Unreadable (permissions, a directory…): upstream starts from {};
		// there is nothing we could back up. If the path cannot be written
		// either, WriteJSON below reports it.
	}
	obj.Set(phase, c)
	if err := WriteJSON(path, obj); err != nil {
		return fmt.Errorf("update cost %s: %w", path, err)
	}
	return nil
}

// ReadCost reads cost.json as its phases in file order. The object key is
// authoritative for Phase. A missing file is no phases and no error; a
// corrupt file is an error naming it.
func ReadCost(path string) ([]PhaseCost, error) {
	data, err := LimitedReadFile(path, MaxObjectFileBytes)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	const hint = "; delete the file or re-run the phases to rebuild it"
	obj, err := DecodeObjectFile(path, data)
	if err != nil {
		return nil, err
	}
	out := make([]PhaseCost, 0, len(obj))
	for _, p := range obj {
		var pc PhaseCost
		if err := strictUnmarshal(p.Value.(json.RawMessage), &pc); err != nil {
			return nil, &FileError{Path: path, Row: -1, Line: lineOfKey(data, p.Key), Field: joinPath(p.Key, fieldOf(err)), Err: err, Hint: hint}
		}
		pc.Phase = p.Key
		out = append(out, pc)
	}
	return out, nil
}

// TotalCost sums phases (CostKnown is false if any phase says so).
func TotalCost(phases []PhaseCost) PhaseCost {
	var t PhaseCost
	t.Phase = "total"
	for _, p := range phases {
		t.Cost += p.Cost
		t.InputTokens += p.InputTokens
		t.OutputTokens += p.OutputTokens
		t.CachedInputTokens += p.CachedInputTokens
		t.ReasoningTokens += p.ReasoningTokens
		t.Requests += p.Requests
		if p.CostKnown != nil && !*p.CostKnown {
			f := false
			t.CostKnown = &f
		}
	}
	return t
}

// isRegular reports whether path (links followed) is a regular file.
func isRegular(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.Mode().IsRegular()
}
