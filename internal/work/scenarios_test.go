package work

import (
	"testing"

	"github.com/impactbench/impactbench/internal/layout"
)

func TestShardPartitionIsDeterministicAndComplete(t *testing.T) {
	ids := []string{"m01_s001", "m01_s002", "m02_s001", "m02_s002", "m03_s010"}
	for _, id := range ids {
		a, b := ShardOf(id, 4), ShardOf(id, 4)
		if a != b || a < 0 || a >= 4 {
			t.Fatalf("ShardOf(%q) = %d, %d", id, a, b)
		}
	}
	b := &Bench{Env: &Env{Opts: Options{Shard: layout.Shard{Index: 1, Count: 3}}}}
	if b.InShard("m01_s001_v01") != b.InShard("m01_s001_v02") {
		t.Error("variants of one base scenario landed in different shards")
	}
}
