// Package scenarioset keeps the versions of a benchmark's scenario set. A
// set changes in two ways besides a fresh generation: it grows (run
// --until adds base scenarios where the intervals are widest), and its
// weak items are replaced (gen-scenarios --replace weak). Either way the
// base scenarios a metric keeps are kept exactly (the same ids, persona,
// goals and landmarks, so their variants, conversations and verdicts
// replay from the call store for free), new ones get ids never used
// before, and the new set is recorded as a version with its lineage in
// sets/sets.json, the old set's files kept under sets/v<N>/.
package scenarioset

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"syscall"
	"time"

	"github.com/impactbench/impactbench/internal/fault"
	"github.com/impactbench/impactbench/internal/fsx"
	"github.com/impactbench/impactbench/internal/generate"
	"github.com/impactbench/impactbench/internal/layout"
	"github.com/impactbench/impactbench/internal/phase"
	"github.com/impactbench/impactbench/internal/work"
)

// SetVersion is one version of a benchmark's scenario set.
type SetVersion struct {
	Version int       `json:"version"`
	Parent  int       `json:"parent,omitempty"`
	Created time.Time `json:"created"`
	// How is "replace weak" or "grow"; Replaced the base scenarios it
	// dropped, with why; Added the ones it generated.
	How      string         `json:"how,omitempty"`
	Replaced []ReplacedItem `json:"replaced,omitempty"`
	Added    []string       `json:"added,omitempty"`
	// Files is where the set's files were kept when the next version
	// replaced it (relative to the benchmark directory).
	Files string `json:"files,omitempty"`
}

// ReplacedItem is a base scenario a new set version dropped.
type ReplacedItem struct {
	ID      string   `json:"id"`
	Reasons []string `json:"reasons,omitempty"`
}

// ItemSet reads the benchmark's scenario-set lineage (nil: one set, never
// changed).
func ItemSet(benchDir string) ([]SetVersion, error) {
	path := layout.Bench{Dir: benchDir}.Sets()
	data, err := fsx.ReadFile(path, maxSetsBytes)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, notAFile(err)
	}
	var vs []SetVersion
	if err := json.Unmarshal(data, &vs); err != nil {
		return nil, fault.Inputf("%s: %v", path, err)
	}
	return vs, nil
}

// Keep copies the current set's files (scenarios, results and every
// target's conversations and scores) under sets/v<N>/ before a new version
// replaces them, and returns the lineage with the new version appended.
func Keep(files layout.Bench, how string, replaced []ReplacedItem) ([]SetVersion, error) {
	vs, err := ItemSet(files.Dir)
	if err != nil {
		return nil, err
	}
	if len(vs) == 0 {
		vs = []SetVersion{{Version: 1, Created: time.Now().UTC()}}
	}
	cur := &vs[len(vs)-1]
	cur.Files = layout.SetVersionDir(cur.Version)
	kept := []string{layout.ScenariosFile, layout.ResultsFile, layout.RunManifestFile}
	runs, err := runFiles(files)
	if err != nil {
		return nil, err
	}
	kept = append(kept, runs...)
	for _, rel := range kept {
		if err := copyInto(filepath.Join(files.Dir, rel), filepath.Join(files.Dir, cur.Files, rel)); err != nil {
			return nil, err
		}
	}
	sort.Slice(replaced, func(i, j int) bool { return replaced[i].ID < replaced[j].ID })
	return append(vs, SetVersion{Version: cur.Version + 1, Parent: cur.Version, Created: time.Now().UTC(), How: how, Replaced: replaced}), nil
}

// runFiles lists the files runs/*/*.json (every run's outputs, hidden
// folders and names included), relative to the benchmark directory, each
// folder through fsx.ReadDir: runs/ or a run's folder holding more than
// layout.MaxRunEntries entries is an *fsx.TooManyEntriesError naming it
// (exit 2), read no further, and one that cannot be read is an error, not
// a run left out of the kept set. What is not a folder (runs/ missing, a
// file in runs/) holds none.
func runFiles(files layout.Bench) ([]string, error) {
	runs := files.RunsDir()
	targets, err := fsx.ReadDir(runs, layout.MaxRunEntries, func(e fs.DirEntry) bool { return !e.Type().IsRegular() })
	if notAFolder(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []string
	for _, t := range targets {
		dir := filepath.Join(runs, t.Name())
		ents, err := fsx.ReadDir(dir, layout.MaxRunEntries, func(e fs.DirEntry) bool {
			ok, _ := filepath.Match("*.json", e.Name())
			return ok
		})
		if notAFolder(err) {
			continue // a link to a file, a pipe, or gone meanwhile
		}
		if err != nil {
			return nil, err
		}
		for _, e := range ents {
			out = append(out, filepath.Join(layout.RunsDirName, t.Name(), e.Name()))
		}
	}
	return out, nil
}

// notAFolder reports whether err says a path to list is missing or is not
// a directory.
func notAFolder(err error) bool {
	return errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR)
}

// copyInto copies a file if it exists (a set has no results yet, say).
// A named pipe or a device there is refused, not read (it would block, or
// never end). The copy streams (a conversations.json may be hundreds of
// MB: it is never held in memory) and stops at the size the file had when
// opened, so a file another process keeps appending to is not followed.
func copyInto(src, dst string) error {
	f, err := fsx.Open(src)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return notAFile(err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return fmt.Errorf("read %s: %w", src, err)
	}
	out, err := fsx.Create(dst, fsx.Shared)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, io.LimitReader(f, st.Size())); err != nil {
		out.Abort()
		return fmt.Errorf("copy %s: %w", src, err)
	}
	return out.Commit()
}

// maxSetsBytes bounds sets.json, a list of set versions: a few KiB.
const maxSetsBytes = 16 << 20

// notAFile makes a file that is not a regular one, or over its limit, an
// input error (exit 2).
func notAFile(err error) error {
	var nr *fsx.NotRegularError
	var tl *fsx.TooLargeError
	if errors.As(err, &nr) || errors.As(err, &tl) {
		return fault.AsInput(err)
	}
	return err
}

// Record writes the lineage, with the ids the new version added (after:
// the new set's bases, before: the old one's).
func Record(files layout.Bench, vs []SetVersion, before, after *generate.SetBases) error {
	old := map[string]bool{}
	for _, ids := range before.IDs {
		for _, id := range ids {
			old[id] = true
		}
	}
	last := &vs[len(vs)-1]
	for _, m := range after.Order {
		for _, id := range after.IDs[m] {
			if !old[id] {
				last.Added = append(last.Added, id)
			}
		}
	}
	data, err := json.MarshalIndent(vs, "", "  ")
	if err != nil {
		return err
	}
	return fsx.WriteFile(files.Sets(), append(data, '\n'), fsx.Shared)
}

// Current is the version of the scenario set now in use (1 when it
// never changed).
func Current(vs []SetVersion) int {
	if len(vs) == 0 {
		return 1
	}
	return vs[len(vs)-1].Version
}

// ReplaceWeak replaces the given weak base scenarios with new ones
// (gen-scenarios --replace weak). The current set's files are kept under
// sets/v<N>/; the new set keeps every other base scenario exactly (their
// rows replay from the call store) and gives each metric as many base
// scenarios as before, the new ones with ids never used; sets/sets.json
// records the lineage. `run` then pays only for the new scenarios' rows.
func ReplaceWeak(ctx context.Context, b *work.Bench, weak []ReplacedItem) error {
	if len(weak) == 0 {
		b.Logf("no weak base scenarios: the set is kept as it is")
		return nil
	}
	sb, err := generate.ReadSetBases(b)
	if err != nil {
		return err
	}
	drop := map[string]bool{}
	for _, w := range weak {
		drop[w.ID] = true
	}
	g, err := generate.GrowthFor(ctx, b, sb, drop, nil)
	if err != nil {
		return err
	}
	vs, err := Keep(b.Files, "replace weak", weak)
	if err != nil {
		return err
	}
	if err := generate.Scenarios(ctx, b, g, nil); err != nil {
		return err
	}
	if !b.Report.Wrote(phase.StageGenScenarios) {
		return nil // nothing written: the failure is in the summary
	}
	after, err := generate.ReadSetBases(b)
	if err != nil {
		return err
	}
	if err := Record(b.Files, vs, sb, after); err != nil {
		return err
	}
	b.Logf("scenario set v%d: %d weak base scenario(s) replaced; v%d's files are kept in %s; run `impactbench run %s` to simulate and judge the new ones",
		vs[len(vs)-1].Version, len(weak), vs[len(vs)-2].Version, vs[len(vs)-2].Files, b.Spec.Slug)
	return nil
}
