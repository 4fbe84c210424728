package cluster

import (
	"strconv"
	"strings"
	"testing"

	"github.com/impactbench/impactbench/internal/fault"
	"github.com/impactbench/impactbench/internal/layout"
)

func env(kv ...string) func(string) string {
	m := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return func(k string) string { return m[k] }
}

func TestDetect(t *testing.T) {
	for _, c := range []struct {
		name    string
		flags   Flags
		env     func(string) string
		shard   layout.Shard
		workers int
		from    string
	}{
		{"alone", Flags{}, env(), layout.Shard{}, 1, ""},
		{"--shard", Flags{Shard: "2/8", Workers: 4}, env(), layout.Shard{Index: 2, Count: 8}, 4, "--shard"},
		{"--shard wins over the scheduler", Flags{Shard: "1/2"}, env(EnvK8sIndex, "5"), layout.Shard{Index: 1, Count: 2}, 2, "--shard"},
		{"kubernetes, count from the flag", Flags{Shards: 128, Workers: 16}, env(EnvK8sIndex, "127"), layout.Shard{Index: 127, Count: 128}, 16, EnvK8sIndex},
		{"kubernetes, count and workers from impactbench's variables", Flags{}, env(EnvK8sIndex, "3", EnvShards, "128", EnvWorkers, "16"), layout.Shard{Index: 3, Count: 128}, 16, EnvK8sIndex},
		{"slurm --array=0-127%16", Flags{}, env(EnvSlurmID, "40", EnvSlurmCount, "128", EnvSlurmMin, "0", EnvWorkers, "16"), layout.Shard{Index: 40, Count: 128}, 16, EnvSlurmID},
		{"slurm --array=1-8 counts from its minimum", Flags{}, env(EnvSlurmID, "1", EnvSlurmCount, "8", EnvSlurmMin, "1"), layout.Shard{Index: 0, Count: 8}, 8, EnvSlurmID},
		{"slurm --array=0-14:2", Flags{}, env(EnvSlurmID, "6", EnvSlurmCount, "8", EnvSlurmMin, "0", EnvSlurmStep, "2"), layout.Shard{Index: 3, Count: 8}, 8, EnvSlurmID},
		{"slurm --array=0-127%16 with the count given", Flags{}, env(EnvSlurmID, "40", EnvSlurmCount, "128", EnvSlurmMin, "0", EnvSlurmMax, "127", EnvShards, "128", EnvWorkers, "16"), layout.Shard{Index: 40, Count: 128}, 16, EnvSlurmID},
		{"slurm resubmission --array=37: the id is the index", Flags{}, env(EnvSlurmID, "37", EnvSlurmCount, "1", EnvSlurmMin, "37", EnvSlurmMax, "37", EnvShards, "128", EnvWorkers, "16"), layout.Shard{Index: 37, Count: 128}, 16, EnvSlurmID},
		{"slurm resubmission --array=3,9 with --shards", Flags{Shards: 16, Workers: 2}, env(EnvSlurmID, "9", EnvSlurmCount, "2", EnvSlurmMin, "3", EnvSlurmMax, "9"), layout.Shard{Index: 9, Count: 16}, 2, EnvSlurmID},
		{"aws batch", Flags{Shards: 10}, env(EnvAWSIndex, "9"), layout.Shard{Index: 9, Count: 10}, 10, EnvAWSIndex},
		{"aws batch, the array's size", Flags{}, env(EnvAWSIndex, "3", EnvAWSSize, "4"), layout.Shard{Index: 3, Count: 4}, 4, EnvAWSIndex},
		{"aws batch, IMPACTBENCH_SHARDS saying the array's size", Flags{}, env(EnvAWSIndex, "3", EnvAWSSize, "4", EnvShards, "4", EnvWorkers, "2"), layout.Shard{Index: 3, Count: 4}, 2, EnvAWSIndex},
		{"aws batch, --shards wins over the array's size", Flags{Shards: 8}, env(EnvAWSIndex, "3", EnvAWSSize, "4", EnvShards, "8"), layout.Shard{Index: 3, Count: 8}, 8, EnvAWSIndex},
	} {
		t.Run(c.name, func(t *testing.T) {
			w, err := Detect(c.flags, c.env)
			if err != nil {
				t.Fatal(err)
			}
			if w.Shard != c.shard || w.Workers != c.workers || w.From != c.from {
				t.Errorf("got %+v, want shard %v, %d workers, from %q", w, c.shard, c.workers, c.from)
			}
			if c.flags.Workers == 0 && w.Shard.Active() && c.env(EnvWorkers) == "" && !strings.Contains(w.Note, "assuming all") {
				t.Errorf("workers were assumed without a note: %+v", w)
			}
		})
	}
}

// Bad values are usage errors (exit 2) naming the flag or variable, before
// anything runs.
func TestDetectRefusesBadValues(t *testing.T) {
	for _, c := range []struct {
		name  string
		flags Flags
		env   func(string) string
		want  string
	}{
		{"index not a number", Flags{Shards: 4}, env(EnvK8sIndex, "two"), EnvK8sIndex},
		{"index past the count", Flags{Shards: 4}, env(EnvK8sIndex, "4"), "not below the shard count 4"},
		{"no count", Flags{}, env(EnvK8sIndex, "1"), EnvShards},
		{"count not a number", Flags{}, env(EnvK8sIndex, "1", EnvShards, "lots"), EnvShards},
		{"slurm task past its array", Flags{}, env(EnvSlurmID, "9", EnvSlurmCount, "8"), "not below the shard count 8"},
		{"slurm task not in its array", Flags{}, env(EnvSlurmID, "3", EnvSlurmCount, "8", EnvSlurmMin, "4"), EnvSlurmMin},
		{"two counts", Flags{Shard: "1/2", Shards: 16}, env(), "disagrees"},
		{"aws array size and IMPACTBENCH_SHARDS differ", Flags{}, env(EnvAWSIndex, "1", EnvAWSSize, "4", EnvShards, "8"), EnvShards + "=8 disagrees with " + EnvAWSSize + "=4"},
		{"aws array size beside a bad IMPACTBENCH_SHARDS", Flags{}, env(EnvAWSIndex, "1", EnvAWSSize, "4", EnvShards, "0"), EnvShards + `="0": want a whole number ≥ 1`},
		{"slurm array larger than the study", Flags{Shards: 4}, env(EnvSlurmID, "3", EnvSlurmCount, "8"), EnvSlurmCount},
		{"slurm array not numbered from 0 with the count given", Flags{}, env(EnvSlurmID, "1", EnvSlurmCount, "8", EnvSlurmMin, "1", EnvSlurmMax, "8", EnvShards, "8"), EnvSlurmMax},
		{"slurm resubmitted task past the study", Flags{}, env(EnvSlurmID, "128", EnvSlurmCount, "1", EnvShards, "128"), "not below the shard count 128"},
		{"slurm count not a number", Flags{}, env(EnvSlurmID, "1", EnvShards, "many"), EnvShards},
		{"--shards without an index", Flags{Shards: 8}, env(), "no index"},
		{"IMPACTBENCH_SHARDS without an index", Flags{}, env(EnvShards, "8"), EnvShards + `="8" names a count but no index`},
		{"IMPACTBENCH_SHARDS without an index, workers given", Flags{}, env(EnvShards, "128", EnvWorkers, "16"), EnvShards + `="128" names a count but no index`},
		{"bad --shard", Flags{Shard: "4/4"}, env(), "--shard"},
		{"workers not a number", Flags{Shard: "0/4"}, env(EnvWorkers, "x"), EnvWorkers},
		{"no workers", Flags{Shard: "0/4"}, env(EnvWorkers, "0"), EnvWorkers + `="0": want a whole number ≥ 1`},
		{"a count of 0", Flags{}, env(EnvK8sIndex, "0", EnvShards, "0"), EnvShards + `="0": want a whole number ≥ 1`},
		{"slurm, a count of 0", Flags{}, env(EnvSlurmID, "0", EnvSlurmCount, "4", EnvShards, "0"), EnvShards + `="0": want a whole number ≥ 1`},
		{"more workers than shards", Flags{Shard: "0/4", Workers: 8}, env(), "more than the 4 shards (the count from --shard)"},
		{"more workers than shards of the count variable", Flags{}, env(EnvK8sIndex, "0", EnvShards, "2", EnvWorkers, "4"), EnvWorkers + " 4 is more than the 2 shards (the count from " + EnvShards + ")"},
		// sbatch --array=37 study.sbatch of a script that does not export
		// IMPACTBENCH_SHARDS: an array of one task, so one shard.
		{"slurm task resubmitted alone without the count", Flags{}, env(EnvSlurmID, "37", EnvSlurmCount, "1", EnvSlurmMin, "37", EnvSlurmMax, "37", EnvWorkers, "16"), "(the count from " + EnvSlurmCount + "): at most one worker runs a shard; without a count given (" + EnvShards + " or --shards) the array is the study, and a task submitted alone (sbatch --array=37) is an array of 1: export " + EnvShards + "=<the study's shard count>"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := Detect(c.flags, c.env)
			if err == nil || fault.KindOf(err) != fault.Usage || !strings.Contains(err.Error(), c.want) {
				t.Errorf("err = %v (kind %v), want a usage error naming %q", err, fault.KindOf(err), c.want)
			}
		})
	}
}

// 128 indexes run by 16 workers at a time cover every shard once: the
// split the scheduler hands out is the one merge expects.
func TestManyMoreIndexesThanWorkers(t *testing.T) {
	seen := map[int]bool{}
	for id := range 128 {
		w, err := Detect(Flags{}, env(EnvSlurmID, strconv.Itoa(id), EnvSlurmCount, "128", EnvWorkers, "16"))
		if err != nil {
			t.Fatal(err)
		}
		if seen[w.Shard.Index] || w.Shard.Count != 128 || w.Workers != 16 {
			t.Fatalf("task %d: %+v", id, w)
		}
		seen[w.Shard.Index] = true
	}
	if len(seen) != 128 {
		t.Errorf("%d shards covered, want 128", len(seen))
	}
}
