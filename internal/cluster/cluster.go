// Package cluster finds a worker's place in a study run by a cluster's own
// scheduler: which slice of the rows it runs (its shard: an index and a
// count) and how many workers run at once (which divides every provider
// limit). A Kubernetes Indexed Job, a Slurm job array and an AWS Batch
// array job each tell a process its index in an environment variable; the
// count and the parallelism come from the command line or impactbench's
// own variables where the scheduler does not say them. Nothing here
// schedules anything: the cluster's scheduler hands out the indexes,
// and over-partitioning (more indexes than workers running at once) is
// how it balances the load.
package cluster

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/impactbench/impactbench/internal/fault"
	"github.com/impactbench/impactbench/internal/layout"
)

// The variables impactbench reads: the schedulers' own, and its own for
// what they do not say.
const (
	EnvShards  = "IMPACTBENCH_SHARDS"  // the shard count (the Job's completions, the array's size)
	EnvWorkers = "IMPACTBENCH_WORKERS" // workers running at once (the Job's parallelism, the array's %N)

	EnvK8sIndex   = "JOB_COMPLETION_INDEX"
	EnvSlurmID    = "SLURM_ARRAY_TASK_ID"
	EnvSlurmCount = "SLURM_ARRAY_TASK_COUNT"
	EnvSlurmMin   = "SLURM_ARRAY_TASK_MIN"
	EnvSlurmStep  = "SLURM_ARRAY_TASK_STEP"
	EnvSlurmMax   = "SLURM_ARRAY_TASK_MAX"
	EnvAWSIndex   = "AWS_BATCH_JOB_ARRAY_INDEX"
	EnvAWSSize    = "AWS_BATCH_JOB_ARRAY_SIZE"
)

// Flags are the command line's say: --shard i/K (Shard), --shards N and
// --workers K (0: not given).
type Flags struct {
	Shard   string
	Shards  int
	Workers int
}

// Worker is this process's place in the study.
type Worker struct {
	Shard layout.Shard // the rows it runs (the zero Shard: every row)
	// Workers is how many workers run at once; each takes 1/Workers of
	// every provider limit (1: alone).
	Workers int
	// From names where the index came from ("--shard", a variable, or ""
	// for an unsharded run).
	From string
	// CountFrom names where the shard count came from ("--shard",
	// "--shards", a variable, or "" for an unsharded run).
	CountFrom string
	// Note says what the worker assumed (workers unknown), for the log.
	Note string
}

// Detect finds the worker's place from the flags and, when --shard is
// absent, from the scheduler's variables (getenv: os.Getenv). A bad value
// is a usage error naming the flag or variable, before anything runs.
func Detect(f Flags, getenv func(string) string) (Worker, error) {
	var w Worker
	var err error
	switch {
	case f.Shard != "":
		w.Shard, err = ParseShard(f.Shard)
		w.From, w.CountFrom = "--shard", "--shard"
	case getenv(EnvK8sIndex) != "":
		w, err = fromIndex(f, getenv, EnvK8sIndex, "")
	case getenv(EnvSlurmID) != "":
		w, err = fromSlurm(f, getenv)
	case getenv(EnvAWSIndex) != "":
		w, err = fromIndex(f, getenv, EnvAWSIndex, EnvAWSSize)
	case f.Shards > 0:
		err = fault.Usagef("--shards %d names a count but no index: give --shard i/%d, or run under a scheduler that sets %s, %s or %s", f.Shards, f.Shards, EnvK8sIndex, EnvSlurmID, EnvAWSIndex)
	case getenv(EnvShards) != "":
		// As --shards: a worker told the study's count but not its index
		// (a script run outside its array, a Job without completionMode:
		// Indexed) must not run every row.
		err = fault.Usagef("%s=%q names a count but no index: give --shard i/K, or run under a scheduler that sets %s, %s or %s (unset %s to run every row)", EnvShards, getenv(EnvShards), EnvK8sIndex, EnvSlurmID, EnvAWSIndex, EnvShards)
	}
	if err != nil {
		return Worker{}, err
	}
	if w.Shard.Count > 0 && f.Shards > 0 && f.Shards != w.Shard.Count {
		return Worker{}, fault.Usagef("--shards %d disagrees with %s's count %d: one study has one count", f.Shards, w.From, w.Shard.Count)
	}
	return workers(w, f, getenv)
}

// ParseShard reads --shard's "i/K" (0 ≤ i < K).
func ParseShard(s string) (layout.Shard, error) {
	a, b, ok := strings.Cut(s, "/")
	i, err1 := strconv.Atoi(a)
	k, err2 := strconv.Atoi(b)
	if !ok || err1 != nil || err2 != nil || k < 1 || i < 0 || i >= k {
		return layout.Shard{}, fault.Usagef("--shard %q: want i/K with 0 ≤ i < K, e.g. 0/4", s)
	}
	return layout.Shard{Index: i, Count: k}, nil
}

// fromIndex is a scheduler that says the index in index and, maybe, the
// count in size; else the count is --shards or IMPACTBENCH_SHARDS.
func fromIndex(f Flags, getenv func(string) string, index, size string) (Worker, error) {
	i, err := number(getenv, index)
	if err != nil {
		return Worker{}, err
	}
	count, from := f.Shards, "--shards"
	if count == 0 && size != "" && getenv(size) != "" {
		if count, err = number(getenv, size); err != nil {
			return Worker{}, err
		}
		from = size
		// IMPACTBENCH_SHARDS beside the scheduler's size: the count given
		// twice. Differently, one of them is a mistake (a job definition
		// copied from another study), and neither may be dropped unsaid.
		if getenv(EnvShards) != "" {
			given, err := positive(getenv, EnvShards)
			if err != nil {
				return Worker{}, err
			}
			if given != count {
				return Worker{}, fault.Usagef("%s=%d disagrees with %s=%d: one study has one count — submit an array of %d, or set %s to the array's size (or leave it unset)", EnvShards, given, size, count, given, EnvShards)
			}
		}
	}
	if count == 0 && getenv(EnvShards) != "" {
		if count, err = positive(getenv, EnvShards); err != nil {
			return Worker{}, err
		}
		from = EnvShards
	}
	if count == 0 {
		return Worker{}, fault.Usagef("%s=%d is set but the shard count is not: give --shards N or %s (the Job's completions, the array's size)", index, i, EnvShards)
	}
	return shardOf(index, i, from, count)
}

// fromSlurm reads a Slurm array task. With the shard count given
// (--shards or IMPACTBENCH_SHARDS) the task id is the shard index, so
// `sbatch --array=37` reruns shard 37 of the study (Slurm makes it a
// one-task array). Without it the array is the study: the index is the
// task id's place in the array, (id − min) / step, the count the array's.
func fromSlurm(f Flags, getenv func(string) string) (Worker, error) {
	id, err := number(getenv, EnvSlurmID)
	if err != nil {
		return Worker{}, err
	}
	count, from, err := givenCount(f, getenv)
	if err != nil {
		return Worker{}, err
	}
	if count > 0 {
		return slurmByID(getenv, id, count, from)
	}
	return slurmByPlace(getenv, id)
}

// givenCount is the shard count the user gave: --shards, else
// IMPACTBENCH_SHARDS, else 0.
func givenCount(f Flags, getenv func(string) string) (int, string, error) {
	if f.Shards > 0 {
		return f.Shards, "--shards", nil
	}
	if getenv(EnvShards) == "" {
		return 0, "", nil
	}
	n, err := positive(getenv, EnvShards)
	return n, EnvShards, err
}

// slurmByID: the count is given, so the task id is the index. Every id of
// the array must then be below the count (SLURM_ARRAY_TASK_MAX): an array
// numbered otherwise (--array=1-8 for 8 shards) would give some tasks
// the wrong shard, so every task of it is refused alike, not only the
// last.
func slurmByID(getenv func(string) string, id, count int, from string) (Worker, error) {
	if getenv(EnvSlurmCount) != "" {
		n, err := number(getenv, EnvSlurmCount)
		if err != nil {
			return Worker{}, err
		}
		if n > count {
			return Worker{}, fault.Usagef("%s=%d: an array of %d tasks for %d shards (%s): submit --array=0-%d", EnvSlurmCount, n, n, count, from, count-1)
		}
	}
	if getenv(EnvSlurmMax) != "" {
		top, err := number(getenv, EnvSlurmMax)
		if err != nil {
			return Worker{}, err
		}
		if top >= count {
			return Worker{}, fault.Usagef("%s=%d: with the shard count given (%s %d) a task's id is its shard index, so every id must be below %d: submit --array=0-%d (or a part of it)", EnvSlurmMax, top, from, count, count, count-1)
		}
	}
	return shardOf(EnvSlurmID, id, from, count)
}

// slurmByPlace: no count given, so the array is the study.
func slurmByPlace(getenv func(string) string, id int) (Worker, error) {
	lo, step := 0, 1
	var err error
	if getenv(EnvSlurmMin) != "" {
		if lo, err = number(getenv, EnvSlurmMin); err != nil {
			return Worker{}, err
		}
	}
	if getenv(EnvSlurmStep) != "" {
		if step, err = number(getenv, EnvSlurmStep); err != nil || step < 1 {
			return Worker{}, fault.Usagef("%s=%q: want a step of at least 1", EnvSlurmStep, getenv(EnvSlurmStep))
		}
	}
	if id < lo || (id-lo)%step != 0 {
		return Worker{}, fault.Usagef("%s=%d is not a task of an array starting at %s=%d with %s=%d", EnvSlurmID, id, EnvSlurmMin, lo, EnvSlurmStep, step)
	}
	if getenv(EnvSlurmCount) == "" {
		return Worker{}, fault.Usagef("%s=%d is set but %s is not: give --shards N or %s", EnvSlurmID, id, EnvSlurmCount, EnvShards)
	}
	count, err := number(getenv, EnvSlurmCount)
	if err != nil {
		return Worker{}, err
	}
	return shardOf(EnvSlurmID, (id-lo)/step, EnvSlurmCount, count)
}

func shardOf(from string, index int, countFrom string, count int) (Worker, error) {
	if count < 1 {
		return Worker{}, fault.Usagef("%s: the shard count %d must be at least 1", countFrom, count)
	}
	if index >= count {
		return Worker{}, fault.Usagef("%s: index %d is not below the shard count %d (%s)", from, index, count, countFrom)
	}
	return Worker{Shard: layout.Shard{Index: index, Count: count}, From: from, CountFrom: countFrom}, nil
}

// workers sets how many workers run at once: --workers, else
// IMPACTBENCH_WORKERS, else every shard at once (the safe share when the
// parallelism is not said), else 1 for an unsharded run.
func workers(w Worker, f Flags, getenv func(string) string) (Worker, error) {
	n, from := f.Workers, "--workers"
	if n == 0 && getenv(EnvWorkers) != "" {
		var err error
		if n, err = positive(getenv, EnvWorkers); err != nil {
			return Worker{}, err
		}
		from = EnvWorkers
	}
	switch {
	case n < 0:
		return Worker{}, fault.Usagef("%s %d: want the number of workers running at once (≥ 1)", from, n)
	case n > 0 && w.Shard.Count > 0 && n > w.Shard.Count:
		return Worker{}, tooManyWorkers(w, from, n)
	case n > 0:
		w.Workers = n
	case w.Shard.Active():
		w.Workers = w.Shard.Count
		w.Note = fmt.Sprintf("workers running at once not given (--workers or %s): assuming all %d shards at once, so each takes 1/%d of every provider limit", EnvWorkers, w.Shard.Count, w.Shard.Count)
	default:
		w.Workers = 1
	}
	return w, nil
}

// tooManyWorkers refuses n workers for fewer shards, saying where the
// count came from. A Slurm array's size is the count only when none is
// given, so a task resubmitted alone (sbatch --array=37: an array of one)
// of a script without IMPACTBENCH_SHARDS lands here: say that.
func tooManyWorkers(w Worker, from string, n int) error {
	msg := fmt.Sprintf("%s %d is more than the %d shards", from, n, w.Shard.Count)
	if w.CountFrom != "" {
		msg += fmt.Sprintf(" (the count from %s)", w.CountFrom)
	}
	msg += ": at most one worker runs a shard"
	if w.CountFrom == EnvSlurmCount {
		msg += fmt.Sprintf("; without a count given (%s or --shards) the array is the study, and a task submitted alone (sbatch --array=37) is an array of %d: export %s=<the study's shard count> so that a task's id is its shard index", EnvShards, w.Shard.Count, EnvShards)
	}
	return fault.Usagef("%s", msg)
}

// positive reads impactbench's own count variable name as a whole number
// ≥ 1: a count of 0 shards or workers is no count (read as 0 it was taken
// for an unset variable, and the array's size or every shard at once used
// instead without a word).
func positive(getenv func(string) string, name string) (int, error) {
	n, err := number(getenv, name)
	if err != nil || n < 1 {
		return 0, fault.Usagef("%s=%q: want a whole number ≥ 1", name, getenv(name))
	}
	return n, nil
}

// number reads variable name as a whole number ≥ 0.
func number(getenv func(string) string, name string) (int, error) {
	v := strings.TrimSpace(getenv(name))
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		return 0, fault.Usagef("%s=%q: want a whole number ≥ 0", name, getenv(name))
	}
	return n, nil
}
