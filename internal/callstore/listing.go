package callstore

import (
	"os"
	"strings"
	"time"
)

// UnitFile is one completed unit of a directory listing.
type UnitFile struct {
	Name    string // the unit's name within the directory, without ".json"
	ModTime time.Time
}

// ListUnits reads a directory of unit files as a reader outside the run
// (status, the viewer) may: <unit>.json is a completed unit, <unit>.jsonl
// the journal of one in progress. A unit with both is being redone and
// counts as in progress only. Temp files are skipped; a missing directory
// lists nothing.
func ListUnits(dir string) (done []UnitFile, inProgress int) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, 0
	}
	journals := map[string]bool{}
	for _, e := range ents {
		if n := e.Name(); !strings.HasPrefix(n, ".") && strings.HasSuffix(n, ".jsonl") {
			journals[strings.TrimSuffix(n, ".jsonl")] = true
		}
	}
	for _, e := range ents {
		n := e.Name()
		if strings.HasPrefix(n, ".") || !strings.HasSuffix(n, ".json") || journals[strings.TrimSuffix(n, ".json")] {
			continue
		}
		info, err := e.Info()
		if err != nil {
			continue // removed since the listing
		}
		done = append(done, UnitFile{Name: strings.TrimSuffix(n, ".json"), ModTime: info.ModTime()})
	}
	return done, len(journals)
}
