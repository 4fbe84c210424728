package cli

import (
	"context"
	"fmt"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/impactbench/impactbench/internal/aggregate"
	"github.com/impactbench/impactbench/internal/clientset"
	"github.com/impactbench/impactbench/internal/fault"
	"github.com/impactbench/impactbench/internal/merge"
	"github.com/impactbench/impactbench/internal/phase"
	"github.com/impactbench/impactbench/internal/runner"
)

// mergeOptions are merge's switches.
type mergeOptions struct {
	noAggregate bool
	fromStore   bool
}

func newMergeCmd(g *globals) *cobra.Command {
	var o mergeOptions
	cmd := &cobra.Command{
		Use:   "merge <benchmark…|all> [target…]",
		Short: "Combine the shards' outputs into the normal files, then aggregate",
		Long: `Runs made with --shard i/K (or under a cluster's scheduler) write
runs/<target>/conversations.shard-i-of-K.json, scores.shard-i-of-K.json and
cost.shard-i-of-K.json. merge checks that all K shards are present and writes the normal
conversations.json, scores.json and cost.json in the row order of an unsharded run (the
files are identical to what one machine would have written), then aggregates.

With --from-store, merge reads no shard files: it assembles every output from the call
store the workers shared (store: in config.yaml, or IMPACTBENCH_STORE) — for workers that
had no shared file system, whose shard files stayed on their own disks. It calls no model
and needs no API key: a row the store does not hold belongs to a worker that has not
finished (exit 2 naming it); run that index again, then merge.`,
		Example: `  # on each of 4 machines (same config, same scenarios.json, one shared directory):
  impactbench run example --shard $JOB_COMPLETION_INDEX/4
  # then, once every shard has finished:
  impactbench merge example
  impactbench merge all
  # workers that shared only an object store (store: s3://bucket/prefix):
  impactbench merge all --from-store`,
		Args: benchArgs(true),
		RunE: func(cmd *cobra.Command, args []string) error {
			if o.fromStore && o.noAggregate {
				return usagef("--from-store with --no-aggregate: the replay writes every output, results included; drop --no-aggregate")
			}
			cfg, err := g.loadConfig()
			if err != nil {
				return err
			}
			dirs, targets, _, err := runArgs(cfg, args)
			if err != nil {
				return err
			}
			if err := checkTargets(cfg, dirs, targets); err != nil {
				return err
			}
			slugs := make([]string, len(dirs))
			errs := make([]error, len(dirs))
			for i, dir := range dirs {
				slugs[i], errs[i] = filepath.Base(dir), g.mergeOne(cmd.Context(), dir, targets, o)
			}
			return runner.JoinOnce(slugs, errs)
		},
	}
	cmd.Flags().BoolVar(&o.noAggregate, "no-aggregate", false, "only combine the files")
	cmd.Flags().BoolVar(&o.fromStore, "from-store", false, "assemble the outputs from the shared call store instead of shard files (workers without a shared file system); calls no model")
	return cmd
}

// mergeOne merges one benchmark.
func (g *globals) mergeOne(ctx context.Context, dir string, targets []string, o mergeOptions) error {
	if o.fromStore {
		return g.withRunner(ctx, "merge", dir, &phaseFlags{fromStore: true}, nil, func(ctx context.Context, r *runner.Runner, inv *invocation) error {
			return replayMerge(ctx, g, r, inv, targets)
		})
	}
	return g.withRunner(ctx, "merge", dir, &phaseFlags{}, nil, func(ctx context.Context, r *runner.Runner, inv *invocation) error {
		if len(targets) == 0 {
			targets = r.Targets()
		}
		reps, err := merge.Run(ctx, r.Work(), targets)
		if err != nil {
			return err
		}
		if len(reps) == 0 {
			// No benchmark name: several benchmarks' are said once
			// (runner.JoinOnce), naming the benchmarks when not all.
			return fault.Inputf("no shard files found under runs/*/ (written by --shard i/K runs); workers that shared only an object store are merged with --from-store")
		}
		inv.merged = reps
		for _, m := range reps {
			r.Logf("merged %s: %d shards → %d conversations, %d scores", m.Target, m.Shards, m.Conversations, m.Scores)
		}
		if o.noAggregate {
			return nil
		}
		if err := aggregate.Run(ctx, r.Work()); err != nil {
			return err
		}
		return writeReport(ctx, g, r, inv)
	})
}

// replayMerge runs the benchmark's phases with every answer from the call
// store (runner.Options.Replay): the outputs one process would have
// written, for nothing.
func replayMerge(ctx context.Context, g *globals, r *runner.Runner, inv *invocation, targets []string) error {
	if len(targets) == 0 {
		targets = r.Targets()
	}
	if err := r.Run(ctx, targets); err != nil {
		if clientset.NotStored(err) {
			if say := r.Work().UnfinishedShards(ctx); say != "" {
				return fmt.Errorf("%s\n%w", say, err)
			}
		}
		return err
	}
	if !r.Report.Ran(phase.StageAggregate) {
		return nil
	}
	return writeReport(ctx, g, r, inv)
}
