package runner

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/impactbench/impactbench/internal/layout"
	"github.com/impactbench/impactbench/internal/merge"
	"github.com/impactbench/impactbench/internal/progress"
)

// TestShardHintsNameTheMergeThatWorks: a shard's last line and a merge
// missing shards say how to merge. Workers that shared only a store
// (store:, IMPACTBENCH_STORE; pods with disks of their own) have no shard
// files but their own, so a plain merge can never succeed for them: both
// messages name --from-store, and only then.
func TestShardHintsNameTheMergeThatWorks(t *testing.T) {
	for _, c := range []struct {
		name      string
		store     bool
		done      string
		fromStore bool
	}{
		{"project's own call store", false, "shard 1/2 done; when every shard has finished run `impactbench merge example`", false},
		{"a store the workers share", true, "shard 1/2 done; when every shard has finished run `impactbench merge example --from-store`", true},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg, bench := project(t)
			var store string
			if c.store {
				store = filepath.Join(t.TempDir(), "calls")
			}
			var log bytes.Buffer
			tr := progress.New(&syncWriter{w: &log}, progress.Lines, time.Hour)
			defer tr.Close()
			r := newRunner(t, cfg, bench, Options{Store: store})
			if err := r.GenScenarios(t.Context()); err != nil {
				t.Fatal(err)
			}
			r.Close()
			r = newRunner(t, cfg, bench, Options{Store: store, Shard: layout.Shard{Index: 1, Count: 2}, Progress: tr})
			if err := r.Run(t.Context(), r.Targets()); err != nil {
				t.Fatal(err)
			}
			r.Close()
			if !strings.Contains(log.String(), c.done) {
				t.Errorf("the shard's log does not say %q:\n%s", c.done, log.String())
			}

			m := newRunner(t, cfg, bench, Options{Store: store})
			_, err := merge.Run(t.Context(), m.Work(), m.Targets())
			if err == nil || !strings.Contains(err.Error(), "shard(s) 0 of 2 missing") {
				t.Fatalf("merge without shard 0: %v", err)
			}
			if got := strings.Contains(err.Error(), "are merged with --from-store"); got != c.fromStore {
				t.Errorf("merge without shard 0 names --from-store: %v, want %v: %v", got, c.fromStore, err)
			}
		})
	}
}
