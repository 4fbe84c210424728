package report

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/goccy/go-yaml"

	"github.com/impactbench/impactbench/internal/artifacts"
	"github.com/impactbench/impactbench/internal/results"
)

// Load reads a benchmark directory into an Input. Only a missing or
// unreadable benchDir is an error: absent files leave their part empty, and
// a file that does not parse is recorded in Input.Notes, so a half-finished
// or partly damaged run still gets a report.
func Load(benchDir string, settings Settings) (Input, error) {
	st, err := os.Stat(benchDir)
	if err != nil {
		return Input{}, fmt.Errorf("report: %w", err)
	}
	if !st.IsDir() {
		return Input{}, fmt.Errorf("report: %s is not a directory", benchDir)
	}
	in := Input{Settings: settings}
	note := func(path string, err error) {
		rel, _ := filepath.Rel(benchDir, path)
		msg := err.Error()
		// artifacts' readers start their errors with the file's path;
		// the note already names it (relative, so the page stays portable).
		if rest, ok := strings.CutPrefix(msg, path); ok {
			msg = strings.TrimLeft(rest, ": ")
		}
		in.Notes = append(in.Notes, fmt.Sprintf("%s could not be read: %s", rel, msg))
	}

	bp := filepath.Join(benchDir, "benchmark.yaml")
	if b, err := os.ReadFile(bp); err == nil {
		if err := yaml.Unmarshal(b, &in.Benchmark); err != nil {
			note(bp, err)
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		note(bp, err)
	}
	if in.Benchmark.Name == "" {
		in.Benchmark.Name = filepath.Base(filepath.Clean(benchDir))
	}

	sp := filepath.Join(benchDir, "scenarios.json")
	if rows, ok, err := readArray[Scenario](sp); err != nil {
		note(sp, err)
	} else if ok {
		in.Scenarios = rows
	}

	rp := filepath.Join(benchDir, "results.json")
	if rows, err := readResults(rp); err != nil {
		note(rp, err)
	} else {
		in.Results = rows
	}

	cp := filepath.Join(benchDir, "cost.json")
	if c, err := readCost(cp, ""); err != nil {
		note(cp, err)
	} else {
		in.Costs = append(in.Costs, c...)
	}

	for _, target := range runTargets(benchDir, settings, in.Results) {
		dir := filepath.Join(benchDir, "runs", target)
		run := Run{Target: target}
		convPath := filepath.Join(dir, "conversations.json")
		if rows, ok, err := readArray[artifacts.Conversation](convPath); err != nil {
			note(convPath, err)
		} else {
			run.Conversations, run.HasConvs = rows, ok
		}
		scorePath := filepath.Join(dir, "scores.json")
		if rows, ok, err := readArray[artifacts.Score](scorePath); err != nil {
			note(scorePath, err)
		} else {
			run.Scores, run.HasScores = rows, ok
		}
		costPath := filepath.Join(dir, "cost.json")
		if c, err := readCost(costPath, target); err != nil {
			note(costPath, err)
		} else {
			in.Costs = append(in.Costs, c...)
		}
		in.Runs = append(in.Runs, run)
	}
	return in, nil
}

// runTargets lists run directories in display order: configured targets
// first (config order), then targets named in results.json, then any other
// directory under runs/ alphabetically (a run from an older config still
// shows up).
func runTargets(benchDir string, settings Settings, res []results.ModelResult) []string {
	seen := map[string]bool{}
	var out []string
	add := func(t string) {
		if t == "" || seen[t] {
			return
		}
		if st, err := os.Stat(filepath.Join(benchDir, "runs", t)); err != nil || !st.IsDir() {
			return
		}
		seen[t] = true
		out = append(out, t)
	}
	for _, t := range settings.Targets {
		add(t.ID)
	}
	for _, r := range res {
		add(r.TargetModel)
	}
	entries, _ := os.ReadDir(filepath.Join(benchDir, "runs"))
	var rest []string
	for _, e := range entries {
		if e.IsDir() && !seen[e.Name()] {
			rest = append(rest, e.Name())
		}
	}
	sort.Strings(rest)
	for _, t := range rest {
		add(t)
	}
	return out
}

// readResults reads results.json through the results package (the one
// definition of its format), which accepts upstream-only entries (our
// additions left zero/nil) as well as ours. A missing file is no results
// (nil, nil), not an error.
func readResults(path string) ([]results.ModelResult, error) {
	rows, err := results.ReadResults(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	return rows, err
}

// readArray decodes a JSON array file element by element, so a 20,000-row
// conversations.json never needs a second in-memory copy of its raw bytes.
// ok is false when the file does not exist.
func readArray[T any](path string) (rows []T, ok bool, err error) {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	defer f.Close()
	dec := json.NewDecoder(bufio.NewReaderSize(f, 1<<20))
	tok, err := dec.Token()
	if err != nil {
		return nil, false, err
	}
	if tok != json.Delim('[') {
		return nil, false, fmt.Errorf("want a JSON array, got %v", tok)
	}
	rows = []T{}
	for dec.More() {
		var v T
		if err := dec.Decode(&v); err != nil {
			return nil, false, fmt.Errorf("row %d: %w", len(rows), err)
		}
		rows = append(rows, v)
	}
	if _, err := dec.Token(); err != nil {
		return nil, false, err
	}
	return rows, true, nil
}

// readCost reads a cost.json object ({phase: entry}) in key order.
func readCost(path, scope string) ([]CostEntry, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var m map[string]artifacts.PhaseCost
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, err
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return phaseLess(keys[i], keys[j]) })
	out := make([]CostEntry, 0, len(keys))
	for _, k := range keys {
		out = append(out, CostEntry{Scope: scope, Key: k, Cost: m[k]})
	}
	return out, nil
}

// phaseOrder is the pipeline order, so cost tables read top to bottom like
// the run happened; unknown phases sort after, alphabetically.
var phaseOrder = map[string]int{
	"gen_metrics": 1, "gen_scenarios": 2, "gen_scenarios_expand": 3,
	"simulate": 4, "validity": 5, "evaluate": 6,
}

func phaseLess(a, b string) bool {
	pa, pb := phaseOrder[a], phaseOrder[b]
	if pa == 0 {
		pa = 100
	}
	if pb == 0 {
		pb = 100
	}
	if pa != pb {
		return pa < pb
	}
	return a < b
}
