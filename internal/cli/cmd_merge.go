package cli

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/impactbench/impactbench/internal/aggregate"
	"github.com/impactbench/impactbench/internal/fault"
	"github.com/impactbench/impactbench/internal/merge"
	"github.com/impactbench/impactbench/internal/runner"
)

func newMergeCmd(g *globals) *cobra.Command {
	var noAggregate bool
	cmd := &cobra.Command{
		Use:   "merge <benchmark> [target…]",
		Short: "Combine --shard outputs into the normal files, then aggregate",
		Long: `Runs made with --shard i/K write runs/<target>/conversations.shard-i-of-K.json and
scores.shard-i-of-K.json. merge checks that all K shards are present and writes the normal
conversations.json, scores.json and cost.json in the row order of an unsharded run (the
files are identical to what one machine would have written), then aggregates.`,
		Example: `  # on each of 4 machines (same config, same scenarios.json):
  impactbench run example --shard $JOB_COMPLETION_INDEX/4
  # then, once, with all runs/ directories gathered:
  impactbench merge example`,
		Args: benchArgs(true),
		RunE: func(cmd *cobra.Command, args []string) error {
			return g.withRunner(cmd.Context(), "merge", args[0], &phaseFlags{}, nil, func(ctx context.Context, r *runner.Runner, inv *invocation) error {
				targets := args[1:]
				if len(targets) == 0 {
					targets = r.Targets()
				}
				reps, err := merge.Run(ctx, r.Work(), targets)
				if err != nil {
					return err
				}
				if len(reps) == 0 {
					return &fault.Error{Kind: fault.Input, Msg: "no shard files found under runs/*/ (written by --shard i/K runs)"}
				}
				inv.merged = reps
				for _, m := range reps {
					r.Logf("merged %s: %d shards → %d conversations, %d scores", m.Target, m.Shards, m.Conversations, m.Scores)
				}
				if noAggregate {
					return nil
				}
				if err := aggregate.Run(ctx, r.Work()); err != nil {
					return err
				}
				return writeReport(ctx, g, r, inv)
			})
		},
	}
	cmd.Flags().BoolVar(&noAggregate, "no-aggregate", false, "only combine the files")
	return cmd
}
