package runner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/impactbench/impactbench/internal/artifacts"
	"github.com/impactbench/impactbench/internal/clientset"
	"github.com/impactbench/impactbench/internal/fault"
	"github.com/impactbench/impactbench/internal/fsx"
	"github.com/impactbench/impactbench/internal/llm"
	"github.com/impactbench/impactbench/internal/phase"
)

// A scenario set changes in two ways besides a fresh generation: it grows
// (run --until adds base scenarios where the intervals are widest), and its
// weak items are replaced (gen-scenarios --replace weak). Either way the
// base scenarios a metric keeps are kept exactly (the same ids, persona,
// goals and landmarks, so their variants, conversations and verdicts
// replay from the call store for free), new ones get ids never used
// before, and the new set is recorded as a version with its lineage in
// sets/sets.json, the old set's files kept under sets/v<N>/.

// growth is how gen_scenarios changes the set: per metric, the base
// scenarios kept (in order), how many the metric should have, and the
// number of its first new id.
type growth struct {
	keep   map[string][]artifacts.Scenario
	target map[string]int
	next   map[string]int
}

// metricResult is what a gen_scenarios row stores: its variants' count
// and its base scenarios, so a later top-up can keep them exactly.
type metricResult struct {
	Variants int                  `json:"variants"`
	Bases    []artifacts.Scenario `json:"bases"`
}

// setBases are the base scenarios of the current scenarios.json, per
// metric in file order, and each metric's largest id number.
type setBases struct {
	ids    map[string][]string // metric → base ids
	maxNum map[string]int
	order  []string // metrics
}

func (r *Runner) readSetBases() (*setBases, error) {
	sb := &setBases{ids: map[string][]string{}, maxNum: map[string]int{}}
	seen := map[string]bool{}
	err := r.scanScenarios(func(s artifacts.Scenario) {
		b := s.BaseID()
		if seen[b] {
			return
		}
		seen[b] = true
		if _, ok := sb.ids[s.MetricID]; !ok {
			sb.order = append(sb.order, s.MetricID)
		}
		sb.ids[s.MetricID] = append(sb.ids[s.MetricID], b)
		if i := strings.LastIndex(b, "_s"); i >= 0 {
			if n, err := strconv.Atoi(b[i+2:]); err == nil {
				sb.maxNum[s.MetricID] = max(sb.maxNum[s.MetricID], n)
			}
		}
	})
	return sb, err
}

// storedBases reads the base scenarios a metric's gen_scenarios row stored.
// Rows stored before bases were kept hold only a count: their bases are
// replayed from the call store instead (replayBases).
func (r *Runner) storedBases(ctx context.Context, metricID string, count int) ([]artifacts.Scenario, error) {
	var mr metricResult
	if _, ok := r.store.ReadResult("gen_scenarios/"+safeName(metricID), &mr); ok && len(mr.Bases) > 0 {
		return mr.Bases, nil
	}
	return r.replayBases(ctx, metricID, count)
}

// errNotStored answers a call the top-up needed from the store but did not find.
var errNotStored = errors.New("not in the call store")

// replayBases replays a metric's first generation from the call store
// (never calling the provider): the same request gives the same bases.
func (r *Runner) replayBases(ctx context.Context, metricID string, count int) ([]artifacts.Scenario, error) {
	m, ok := r.bench.MetricByID(metricID)
	if !ok {
		return nil, fault.Inputf("scenarios.json: metric %q is not in %s", metricID, r.bench.Path)
	}
	unit, err := r.store.Unit("gen_scenarios/" + safeName(metricID))
	if err != nil {
		return nil, err
	}
	defer unit.Close()
	none := llm.ClientFunc(func(context.Context, llm.Request) (llm.Response, error) { return llm.Response{}, errNotStored })
	bases, _, err := genBases(ctx, r, unit.Client(clientset.Identity(r.cfg.Generator()), none), m, count, nil, 0)
	if err != nil {
		return nil, fmt.Errorf("the base scenarios of %s cannot be kept: their generation is not in the call store (%s); regenerate the set with `impactbench gen-scenarios %s --force`", metricID, r.store.Dir(), r.bench.Slug)
	}
	return bases, nil
}

// growthFor builds the growth that keeps every base scenario of the set
// except drop, and gives each metric want[metric] base scenarios (absent:
// as many as it has now).
func (r *Runner) growthFor(ctx context.Context, sb *setBases, drop map[string]bool, want map[string]int) (*growth, error) {
	g := &growth{keep: map[string][]artifacts.Scenario{}, target: map[string]int{}, next: map[string]int{}}
	for _, metric := range sb.order {
		bases, err := r.storedBases(ctx, metric, len(sb.ids[metric]))
		if err != nil {
			return nil, err
		}
		inSet := map[string]bool{}
		for _, id := range sb.ids[metric] {
			inSet[id] = true
		}
		for _, b := range bases {
			if inSet[b.ID] && !drop[b.ID] {
				g.keep[metric] = append(g.keep[metric], b)
			}
		}
		g.target[metric] = len(sb.ids[metric])
		if n, ok := want[metric]; ok {
			g.target[metric] = n
		}
		g.next[metric] = sb.maxNum[metric] + 1
	}
	return g, nil
}

// setsFile is the lineage of a benchmark's scenario sets.
const setsFile = "sets.json"

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
	path := filepath.Join(benchDir, "sets", setsFile)
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var vs []SetVersion
	if err := json.Unmarshal(b, &vs); err != nil {
		return nil, fault.Inputf("%s: %v", path, err)
	}
	return vs, nil
}

// keepSet copies the current set's files (scenarios, results and every
// target's conversations and scores) under sets/v<N>/ before a new version
// replaces them, and returns the lineage with the new version appended.
func (r *Runner) keepSet(how string, replaced []ReplacedItem) ([]SetVersion, error) {
	vs, err := ItemSet(r.outDir)
	if err != nil {
		return nil, err
	}
	if len(vs) == 0 {
		vs = []SetVersion{{Version: 1, Created: time.Now().UTC()}}
	}
	cur := &vs[len(vs)-1]
	cur.Files = filepath.Join("sets", fmt.Sprintf("v%d", cur.Version))
	files := []string{"scenarios.json", "results.json", "run_manifest.json"}
	runs, _ := filepath.Glob(filepath.Join(r.outDir, "runs", "*", "*.json"))
	for _, f := range runs {
		rel, _ := filepath.Rel(r.outDir, f)
		files = append(files, rel)
	}
	for _, rel := range files {
		if err := copyInto(filepath.Join(r.outDir, rel), filepath.Join(r.outDir, cur.Files, rel)); err != nil {
			return nil, err
		}
	}
	sort.Slice(replaced, func(i, j int) bool { return replaced[i].ID < replaced[j].ID })
	return append(vs, SetVersion{Version: cur.Version + 1, Parent: cur.Version, Created: time.Now().UTC(), How: how, Replaced: replaced}), nil
}

// copyInto copies a file if it exists (a set has no results yet, say).
func copyInto(src, dst string) error {
	b, err := os.ReadFile(src)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	return fsx.WriteFile(dst, b, fsx.Shared)
}

// recordSet writes the lineage, with the ids the new version added.
func (r *Runner) recordSet(vs []SetVersion, before *setBases) error {
	after, err := r.readSetBases()
	if err != nil {
		return err
	}
	old := map[string]bool{}
	for _, ids := range before.ids {
		for _, id := range ids {
			old[id] = true
		}
	}
	last := &vs[len(vs)-1]
	for _, m := range after.order {
		for _, id := range after.ids[m] {
			if !old[id] {
				last.Added = append(last.Added, id)
			}
		}
	}
	b, err := json.MarshalIndent(vs, "", "  ")
	if err != nil {
		return err
	}
	return fsx.WriteFile(filepath.Join(r.outDir, "sets", setsFile), append(b, '\n'), fsx.Shared)
}

// currentSet is the version of the scenario set now in use (1 when it
// never changed).
func currentSet(vs []SetVersion) int {
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
func (r *Runner) ReplaceWeak(ctx context.Context, weak []ReplacedItem) error {
	if len(weak) == 0 {
		r.logf("no weak base scenarios: the set is kept as it is")
		return nil
	}
	sb, err := r.readSetBases()
	if err != nil {
		return err
	}
	drop := map[string]bool{}
	for _, w := range weak {
		drop[w.ID] = true
	}
	g, err := r.growthFor(ctx, sb, drop, nil)
	if err != nil {
		return err
	}
	vs, err := r.keepSet("replace weak", weak)
	if err != nil {
		return err
	}
	r.grow = g
	defer func() { r.grow = nil }()
	if err := r.genScenarios(ctx, nil); err != nil {
		return err
	}
	if !r.Report.Wrote(phase.StageGenScenarios) {
		return nil // nothing written: the failure is in the summary
	}
	if err := r.recordSet(vs, sb); err != nil {
		return err
	}
	r.logf("scenario set v%d: %d weak base scenario(s) replaced; v%d's files are kept in %s; run `impactbench run %s` to simulate and judge the new ones",
		vs[len(vs)-1].Version, len(weak), vs[len(vs)-2].Version, vs[len(vs)-2].Files, r.bench.Slug)
	return nil
}
