package merge

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/impactbench/impactbench/internal/artifacts"
	"github.com/impactbench/impactbench/internal/fault"
	"github.com/impactbench/impactbench/internal/layout"
	"github.com/impactbench/impactbench/internal/llm"
	"github.com/impactbench/impactbench/internal/work"
)

// Report says what Merge combined.
type Report struct {
	Target        string `json:"target"`
	Shards        int    `json:"shards"`
	Conversations int    `json:"conversations"`
	Scores        int    `json:"scores"`
}

// Run combines the shard files written by `--shard i/K` runs into the
// normal runs/<target>/conversations.json, scores.json and cost.json, in the
// row order an unsharded run writes, so the result is byte-identical to it.
// Every shard 0..K-1 must be present for each file kind.
func Run(ctx context.Context, b *work.Bench, targets []string) ([]Report, error) {
	scs, err := b.LoadScenarios()
	if err != nil {
		return nil, err
	}
	pos := make(map[string]int, len(scs))
	for i, s := range scs {
		pos[s.ID] = i
	}
	splits, err := completeSplits(b, targets)
	if err != nil {
		return nil, err
	}
	var reps []Report
	for _, sp := range splits {
		rep, err := mergeSplit(ctx, b, sp, pos)
		if err != nil {
			return reps, err
		}
		reps = append(reps, rep)
	}
	return reps, nil
}

// shardKinds are the row files merged shard by shard, in merge order.
func shardKinds() []string { return []string{layout.ConversationsFile, layout.ScoresFile} }

// shardSplit is one target's shard files: its run directory, the shard
// count and, per file kind, each shard's path.
type shardSplit struct {
	target, dir string
	count       int
	files       map[string]map[int]string
}

// completeSplits finds every target's shard files and checks them all
// before any file is written: a merge missing a shard (a task that died
// between simulate and evaluate, or one target's shard gone) changes no
// file. Targets without shards are left out; targets whose runs were split
// in different ways are refused together.
func completeSplits(b *work.Bench, targets []string) ([]shardSplit, error) {
	var splits []shardSplit
	var mixed []*mixedSplits
	for _, t := range targets {
		dir := b.Files.RunDir(t)
		count, files, err := findShards(dir)
		var m *mixedSplits
		if errors.As(err, &m) {
			mixed = append(mixed, m) // every target's, in one refusal
			continue
		}
		if err != nil {
			return nil, err
		}
		if count == 0 {
			continue
		}
		if err := missingShards(b, dir, count, files); err != nil {
			return nil, err
		}
		splits = append(splits, shardSplit{t, dir, count, files})
	}
	if len(mixed) > 0 {
		return nil, mixedSplitsError(mixed)
	}
	return splits, nil
}

// missingShards is an input error naming the shards 0..count-1 of a file
// kind that dir lacks while it has others of that kind, or nil.
func missingShards(b *work.Bench, dir string, count int, files map[string]map[int]string) error {
	for _, name := range shardKinds() {
		got := files[name]
		if len(got) == 0 {
			continue
		}
		var missing []string
		for i := range count {
			if _, ok := got[i]; !ok {
				missing = append(missing, strconv.Itoa(i))
			}
		}
		if len(missing) > 0 {
			var fromStore string
			if b.SharedStore() {
				// Workers that shared only the store wrote their
				// shard files on disks of their own.
				fromStore = "; workers that shared only the call store (store:, IMPACTBENCH_STORE) are merged with --from-store"
			}
			kind := strings.TrimSuffix(name, filepath.Ext(name)) // conversations, scores
			return fault.Inputf("%s: %s shard(s) %s of %d missing: run those shards (--shard i/%d) before merging%s",
				dir, kind, strings.Join(missing, ", "), count, count, fromStore)
		}
	}
	return nil
}

// mergeSplit writes one target's merged conversations, scores and cost
// files from its shards (pos orders rows as an unsharded run does) and
// reports the rows merged.
func mergeSplit(ctx context.Context, b *work.Bench, sp shardSplit, pos map[string]int) (Report, error) {
	rep := Report{Target: sp.target, Shards: sp.count}
	for _, name := range shardKinds() {
		got := sp.files[name]
		if len(got) == 0 {
			continue
		}
		paths := make([]string, sp.count)
		for i := range sp.count {
			paths[i] = got[i]
		}
		out := b.Files.Conversations(sp.target, layout.Shard{})
		if name == layout.ScoresFile {
			out = b.Files.Scores(sp.target, nil, layout.Shard{})
		}
		n, err := mergeKind(ctx, name == layout.ConversationsFile, paths, out, pos)
		if err != nil {
			return rep, err
		}
		if name == layout.ConversationsFile {
			rep.Conversations = n
		} else {
			rep.Scores = n
		}
	}
	if err := mergeCost(sp.dir, sp.count); err != nil {
		return rep, err
	}
	return rep, nil
}

// findShards finds the shard files of a run directory (layout.ShardFiles:
// the names a shard's run writes): how many shards the split had, and by
// file name (conversations.json, scores.json) each shard's file. Files of
// two different splits are an input error.
func findShards(dir string) (int, map[string]map[int]string, error) {
	type shardFile struct {
		name, path string
		shard      layout.Shard
	}
	var all []shardFile
	for _, name := range []string{layout.ConversationsFile, layout.ScoresFile} {
		found, err := layout.ShardFiles(dir, name)
		if err != nil {
			return 0, nil, err
		}
		for p, s := range found {
			all = append(all, shardFile{name, p, s})
		}
	}
	sort.Slice(all, func(i, j int) bool { return all[i].path < all[j].path })
	counts := map[int]bool{}
	for _, f := range all {
		counts[f.shard.Count] = true
	}
	if len(counts) > 1 {
		return 0, nil, newMixedSplits(dir)
	}
	files := map[string]map[int]string{}
	count := 0
	for _, f := range all {
		count = f.shard.Count
		if files[f.name] == nil {
			files[f.name] = map[int]string{}
		}
		files[f.name][f.shard.Index] = f.path
	}
	return count, files, nil
}

type rowRef struct {
	pos, sample int
	raw         any
}

// mergeKind reads every shard's rows and writes them sorted by scenario
// position and sample (each shard file is a disjoint slice of the rows).
func mergeKind(ctx context.Context, conversations bool, paths []string, out string, pos map[string]int) (int, error) {
	var rows []rowRef
	for _, p := range paths {
		var err error
		if conversations {
			err = artifacts.EachConversation(p, func(i int, c artifacts.Conversation) error {
				idx, ok := pos[c.ID]
				if !ok {
					return fmt.Errorf("%s row %d: scenario %q is not in %s (shards from another scenario set?)", p, i, c.ID, layout.ScenariosFile)
				}
				rows = append(rows, rowRef{idx, c.Sample, c})
				return ctx.Err()
			})
		} else {
			err = artifacts.EachScore(p, func(i int, s artifacts.Score) error {
				idx, ok := pos[s.ID]
				if !ok {
					return fmt.Errorf("%s row %d: scenario %q is not in %s (shards from another scenario set?)", p, i, s.ID, layout.ScenariosFile)
				}
				rows = append(rows, rowRef{idx, s.Sample, s})
				return ctx.Err()
			})
		}
		if err != nil {
			return 0, err
		}
	}
	sort.SliceStable(rows, func(a, b int) bool {
		if rows[a].pos != rows[b].pos {
			return rows[a].pos < rows[b].pos
		}
		return rows[a].sample < rows[b].sample
	})
	for i := 1; i < len(rows); i++ {
		if rows[i].pos == rows[i-1].pos && rows[i].sample == rows[i-1].sample {
			return 0, fault.Inputf("%s: the same row appears in two shards (scenario position %d, sample %d); were shards run with different --shard counts?", out, rows[i].pos, rows[i].sample)
		}
	}
	w, err := artifacts.NewArrayWriter(out)
	if err != nil {
		return 0, err
	}
	for _, r := range rows {
		if err := w.Write(r.raw); err != nil {
			w.Abort()
			return 0, err
		}
	}
	return len(rows), w.Close()
}

// mergeCost folds the shards' costs into dir/cost.json's "<phase>"
// entries, so cost.json reads as if the run had not been sharded: each
// shard's cost.shard-i-of-K.json of this count (K), and the
// "<phase>.shard-i-of-K" entries earlier versions wrote into cost.json
// itself (dropped once folded). A phase the shards ran replaces the
// cost.json entry of that phase: merging twice gives the same file.
func mergeCost(dir string, count int) error {
	path := filepath.Join(dir, layout.CostFile)
	phases, err := artifacts.ReadCost(path)
	if err != nil {
		return err
	}
	merged, models := map[string]llm.Usage{}, map[string]work.ByModel{}
	var order []string
	fold := func(base string, p artifacts.PhaseCost) {
		if _, ok := merged[base]; !ok {
			order = append(order, base)
			models[base] = work.ByModel{}
		}
		u, m := work.PhaseUsage(p)
		merged[base] = merged[base].Add(u)
		for label, mu := range m {
			models[base].Add(label, mu)
		}
	}
	var keep []artifacts.PhaseCost
	for _, p := range phases {
		base, _, isShard := layout.CutShard(p.Phase)
		if !isShard {
			keep = append(keep, p)
			continue
		}
		fold(base, p)
	}
	files, err := layout.ShardFiles(dir, layout.CostFile)
	if err != nil {
		return err
	}
	for i := range count {
		p := filepath.Join(dir, layout.Shard{Index: i, Count: count}.File(layout.CostFile))
		if _, ok := files[p]; !ok {
			continue
		}
		shard, err := artifacts.ReadCost(p)
		if err != nil {
			return err
		}
		for _, pc := range shard {
			fold(pc.Phase, pc)
		}
	}
	if len(order) == 0 {
		return nil
	}
	var obj artifacts.Object
	for _, p := range keep {
		if _, replaced := merged[p.Phase]; !replaced {
			obj.Set(p.Phase, p)
		}
	}
	for _, ph := range order {
		obj.Set(ph, work.PhaseCost(ph, merged[ph], models[ph]))
	}
	return artifacts.WriteJSON(path, obj)
}
