package merge

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/impactbench/impactbench/internal/fault"
	"github.com/impactbench/impactbench/internal/layout"
)

// mixedSplits is a run directory holding the shard files of more than one
// split (another shard count): typically a study merged, then run again in
// another count, whose earlier shard files stayed beside the merged
// outputs. A merge takes one split, so it refuses, naming every split's
// files and the commands that move the older ones aside.
type mixedSplits struct {
	dir    string
	splits []splitFiles // newest last
}

// splitFiles is one split's shard files in a run directory.
type splitFiles struct {
	count  int
	files  int
	newest time.Time
}

func (m *mixedSplits) Error() string {
	return fmt.Sprintf("%s: shard files of %d splits", m.dir, len(m.splits))
}

// newMixedSplits reads dir's shard files (conversations, scores, cost) by
// split, oldest split (by its newest file) first.
func newMixedSplits(dir string) error {
	by := map[int]*splitFiles{}
	for _, name := range []string{layout.ConversationsFile, layout.ScoresFile, layout.CostFile} {
		found, err := layout.ShardFiles(dir, name)
		if err != nil {
			return err
		}
		for p, s := range found {
			sf := by[s.Count]
			if sf == nil {
				sf = &splitFiles{count: s.Count}
				by[s.Count] = sf
			}
			sf.files++
			if st, err := os.Stat(p); err == nil && st.ModTime().After(sf.newest) {
				sf.newest = st.ModTime()
			}
		}
	}
	m := &mixedSplits{dir: dir}
	for _, sf := range by {
		m.splits = append(m.splits, *sf)
	}
	slices.SortFunc(m.splits, func(a, b splitFiles) int {
		if c := a.newest.Compare(b.newest); c != 0 {
			return c
		}
		return a.count - b.count
	})
	return m
}

// mixedSplitsError is the refusal: for each run directory, each split's
// shard files (their pattern, how many, when last written), and the shell
// commands that move every split but the newest into the directory's
// stale-shards folder — moved, not deleted: the user decides, and the call
// store keeps every answer, so running those shards again costs nothing.
func mixedSplitsError(ms []*mixedSplits) error {
	var b strings.Builder
	b.WriteString("shard files of more than one split (shard count); a merge takes the shards of one split:\n")
	var cmds []string
	for _, m := range ms {
		fmt.Fprintf(&b, "  %s:", m.dir)
		for i, sf := range m.splits {
			sep := ","
			if i == 0 {
				sep = ""
			}
			fmt.Fprintf(&b, "%s %d files %s (%d shards, last written %s)", sep, sf.files, layout.SplitPattern(sf.count), sf.count, sf.newest.UTC().Format(time.RFC3339))
		}
		b.WriteString("\n")
		stale := filepath.Join(m.dir, layout.StaleShardsDirName)
		for _, sf := range m.splits[:len(m.splits)-1] {
			cmds = append(cmds, fmt.Sprintf("mkdir -p %s && mv %s/%s %s/", shellQuote(stale), shellQuote(m.dir), layout.SplitPattern(sf.count), shellQuote(stale)))
		}
	}
	newest := map[int]bool{}
	for _, m := range ms {
		newest[m.splits[len(m.splits)-1].count] = true
	}
	which := "each directory's newest split"
	if len(newest) == 1 {
		which = fmt.Sprintf("the newest split (%d shards)", ms[0].splits[len(ms[0].splits)-1].count)
	}
	fmt.Fprintf(&b, "To merge %s, move the older shard files aside — nothing is deleted, and the call store keeps every answer they hold — then merge again:\n  %s",
		which, strings.Join(cmds, "\n  "))
	return fault.Inputf("%s", b.String())
}

// shellQuote quotes a path for a POSIX shell.
func shellQuote(p string) string {
	return "'" + strings.ReplaceAll(p, "'", `'\''`) + "'"
}
