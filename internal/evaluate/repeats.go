package evaluate

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"os"
	"strconv"

	"github.com/impactbench/impactbench/internal/artifacts"
	"github.com/impactbench/impactbench/internal/fault"
	"github.com/impactbench/impactbench/internal/layout"
	"github.com/impactbench/impactbench/internal/phase"
	"github.com/impactbench/impactbench/internal/results"
	"github.com/impactbench/impactbench/internal/summary"
	"github.com/impactbench/impactbench/internal/work"
)

// Repeat re-judges targetID's stored transcripts k times (evaluate
// --repeats K) to measure the judge's self-consistency. Each repeat is a
// real, independent judgement: its calls carry their own seed (so they
// have their own call-store keys and, where the provider takes a seed,
// their own sampling) and are stored in their own units, so repeat 2 never
// replays repeat 1 or the main evaluate. The main scores are never
// touched: the rows go to RepeatsPath, and each metric's flip rate (rows
// whose verdicts are not unanimous) is logged and, after aggregate, in
// results.json's judge_consistency. Rerunning with a larger K pays only
// for the new repeats.
func Repeat(ctx context.Context, b *work.Bench, targetID string, k int) error {
	err := repeat(ctx, b, targetID, k)
	b.Report.Settle()
	return err
}

func repeat(ctx context.Context, b *work.Bench, targetID string, k int) error {
	if k < 1 {
		return fault.Inputf("--repeats %d: want 1 or more re-judgements", k)
	}
	convPath := b.Conversations(targetID)
	scoresPath := b.Scores(targetID)
	out := layout.Repeats(b.Scores(targetID))
	if _, err := os.Stat(scoresPath); err != nil {
		return fault.Inputf("%s does not exist: run `impactbench evaluate %s %s` first (repeats are compared with its verdicts)", scoresPath, b.Spec.Slug, targetID)
	}
	rows, err := evalRows(b, convPath, "")
	if err != nil {
		return err
	}
	if b.Opts.DryRun {
		b.PlanEvaluate(targetID, len(rows)*k)
		return nil
	}
	rep := summary.PhaseReport{Phase: phase.StageRepeats, Target: targetID, Output: out, Rows: len(rows) * k}
	passes := make([]*Target, 0, k)
	for n := 1; n <= k; n++ {
		j, err := judgeRepeat(ctx, b, targetID, convPath, n, len(rows))
		if j != nil {
			passes = append(passes, j)
		}
		if err != nil {
			b.Report.Add(rep)
			return err
		}
	}
	written, err := writeRepeats(b, out, rows, passes)
	if err != nil {
		return err
	}
	if err := b.WriteCost(b.Files.RunDir(targetID), "evaluate:repeats", b.Report.SpentOn(phase.StageRepeats, targetID)); err != nil {
		return err
	}
	rep.Status = phase.StatusRan
	b.Report.Add(rep)
	return logFlipRates(b, targetID, scoresPath, written)
}

// judgeRepeat runs repeat n over every conversation. It returns the pass
// (for its unit names) even when it stopped early.
func judgeRepeat(ctx context.Context, b *work.Bench, targetID, convPath string, n, total int) (*Target, error) {
	j, err := NewTarget(nil, b, targetID, total)
	if err != nil {
		return nil, err
	}
	j.stage, j.lane = phase.StageRepeats, b.Lane(phase.StageRepeats, targetID)
	j.seed = repeatSeed(b.Cfg.Seed, n)
	j.unitDir += "-repeat" + strconv.Itoa(n)
	j.rowKeyBase = phase.Fingerprint(j.rowKeyBase, "repeat", n, j.seed)
	_, feedErr := judgeRows(ctx, b, j, convPath, nil)
	j.Close()
	if cause := j.halt.Err(); cause != nil && work.Fatal(cause) {
		return j, cause
	}
	if feedErr != nil && !errors.Is(feedErr, context.Canceled) {
		return j, feedErr
	}
	return j, ctx.Err()
}

// repeatSeed is repeat n's master seed: distinct per repeat and from the
// main evaluate's (repeat 0 would be the run's own seed).
func repeatSeed(master uint64, n int) uint64 {
	h := fnv.New64a()
	fmt.Fprintf(h, "judge-repeat\x00%d\x00%d", master, n)
	return h.Sum64()
}

// writeRepeats writes every stored repeat verdict, repeat by repeat in
// conversations.json's order; rows a repeat could not judge (cost ceiling)
// are left out.
func writeRepeats(b *work.Bench, out string, rows []evalRow, passes []*Target) ([]results.RepeatRow, error) {
	all := make([]results.RepeatRow, 0, len(rows)*len(passes))
	for n, j := range passes {
		for _, row := range rows {
			var sc artifacts.Score
			if _, ok := b.Store.ReadResult(j.unitName(row.ID, row.Sample), &sc); !ok {
				continue
			}
			sc.Usage = nil // cost is in cost.json; keep the file about verdicts
			all = append(all, results.RepeatRow{Repeat: n + 1, Score: sc})
		}
	}
	if err := work.WriteJSON(out, all); err != nil {
		return nil, err
	}
	return all, nil
}

// logFlipRates prints each metric's flip rate against scores.json.
func logFlipRates(b *work.Bench, targetID, scoresPath string, reps []results.RepeatRow) error {
	var scores []artifacts.Score
	if err := artifacts.EachScore(scoresPath, func(_ int, s artifacts.Score) error {
		scores = append(scores, s)
		return nil
	}); err != nil {
		return fault.AsInput(err)
	}
	main := ""
	if js := b.Judges(); len(js) == 1 {
		main = work.JudgeLabel(js[0])
	}
	jc := results.Consistency(targetID, scores, reps, main)
	if jc == nil {
		return nil
	}
	for _, e := range jc.Judges {
		for _, m := range e.Value {
			f := m.Value
			rate := "n/a"
			if f.Rate != nil {
				rate = fmt.Sprintf("%.1f%%", 100**f.Rate)
			}
			b.Logf("  %s %s %s: flip rate %s (%d of %d rows changed verdict over %d repeats)", targetID, e.Key, m.Key, rate, f.NFlipped, f.NRows, jc.Repeats)
		}
	}
	return nil
}
