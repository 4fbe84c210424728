package runner

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/impactbench/impactbench/internal/artifacts"
	"github.com/impactbench/impactbench/internal/config"
	"github.com/impactbench/impactbench/internal/llm"
	"github.com/impactbench/impactbench/internal/stages"
)

// judges returns the evaluator panel of this invocation.
func (r *Runner) judges() []config.ModelConfig {
	if len(r.opts.Judges) > 0 {
		return r.opts.Judges
	}
	return r.cfg.EvaluatorModels
}

// JudgeLabel names a judge in score rows and directories.
func JudgeLabel(m config.ModelConfig) string {
	if m.ID != "" {
		return m.ID
	}
	return m.Model
}

func (r *Runner) scoresPath(target string) string {
	if len(r.opts.Judges) > 0 {
		labels := make([]string, len(r.opts.Judges))
		for i, j := range r.opts.Judges {
			labels[i] = safeName(JudgeLabel(j))
		}
		return filepath.Join(r.runDir(target), "judges", strings.Join(labels, "+"), "scores"+r.shardSuffix()+".json")
	}
	return filepath.Join(r.runDir(target), "scores"+r.shardSuffix()+".json")
}

type evalRow struct {
	ID     string
	Sample int
	Metric string
}

// Evaluate judges runs/<target>/conversations.json and writes scores.json.
func (r *Runner) Evaluate(ctx context.Context, targetID string) error {
	convPath := filepath.Join(r.runDir(targetID), "conversations"+r.shardSuffix()+".json")
	out := r.scoresPath(targetID)
	rep := PhaseReport{Phase: "evaluate", Target: targetID, Output: out}
	judges := r.judges()
	if _, err := os.Stat(convPath); err != nil {
		if r.opts.DryRun {
			rows := r.expectedConversations()
			r.planEvaluate(targetID, judges, rows)
			return nil
		}
		return &InputError{Msg: fmt.Sprintf("%s does not exist: run `impactbench simulate %s %s` first", convPath, r.bench.Slug, targetID)}
	}
	// First pass: check every row's metric before spending anything; a
	// missing metric is an input error, never a silently dropped row.
	var rows []evalRow
	var missing []string
	err := artifacts.EachConversation(convPath, func(i int, c artifacts.Conversation) error {
		if _, ok := r.bench.MetricByID(c.MetricID); !ok {
			missing = append(missing, fmt.Sprintf("row %d (%s): metric_id %q", i, c.ID, c.MetricID))
		}
		rows = append(rows, evalRow{c.ID, c.Sample, c.MetricID})
		return nil
	})
	if err != nil {
		return &InputError{Msg: err.Error()}
	}
	if len(missing) > 0 {
		return &InputError{Msg: fmt.Sprintf("%s: %d conversation(s) refer to metrics that are not in %s (known: %s); fix the metric ids or restore the metrics:\n  %s",
			convPath, len(missing), r.bench.Path, r.metricIDs(), strings.Join(firstN(missing, 10), "\n  "))}
	}
	convSHA, _ := fileSHA(convPath)
	jids := make([]any, len(judges))
	for i, j := range judges {
		jids[i] = identity(j)
	}
	inputs := map[string]string{
		"conversations.json": convSHA,
		"metrics":            fingerprint(r.bench.Metrics),
		"judges":             fingerprint(jids...),
		"options":            fingerprint(r.cfg.Judge, r.cfg.Validity),
		"prompts":            r.prompts.Hash(),
	}
	key := "evaluate/" + targetID + r.shardSuffix() + "/" + rel(r.runDir(targetID), out)
	skip, note := r.checkSkip("evaluate", targetID, key, out, inputs, rep)
	if skip {
		return nil
	}
	if note != "" {
		defer r.planNote("evaluate", targetID, note)
	}
	if r.opts.DryRun {
		r.planEvaluate(targetID, judges, len(rows))
		return nil
	}
	panel := make([]stages.NamedClient, len(judges))
	judgeField := "evaluator_model"
	if len(r.opts.Judges) > 0 {
		judgeField = ""
	}
	for i, j := range judges {
		c, err := r.modelClient(judgeField, j)
		if err != nil {
			return err
		}
		panel[i] = stages.NamedClient{Name: JudgeLabel(j), Client: c}
	}
	var landmarkC llm.Client
	var landmarkM config.ModelConfig
	var scenarios map[string]artifacts.Scenario
	if r.cfg.Validity.LandmarkCheck {
		landmarkM = judges[0]
		if r.cfg.LandmarkModel != nil {
			landmarkM = *r.cfg.LandmarkModel
		}
		if landmarkC, err = r.modelClient("", landmarkM); err != nil {
			return err
		}
		scs, err := r.loadScenarios()
		if err != nil {
			return err
		}
		scenarios = make(map[string]artifacts.Scenario, len(scs))
		for _, s := range scs {
			scenarios[s.ID] = s
		}
	}
	rowKeyBase := fingerprint(inputs["metrics"], inputs["judges"], inputs["options"], inputs["prompts"])
	unitDir := "eval"
	if len(r.opts.Judges) > 0 {
		unitDir = "eval-" + filepath.Base(filepath.Dir(out))
	}
	unitName := func(row evalRow) string {
		return fmt.Sprintf("%s/%s/%s__s%d", safeName(targetID), unitDir, safeName(row.ID), row.Sample)
	}

	jb, err := r.runJudgeBatches(ctx, targetID, convPath, judges, rowKeyBase, unitDir, unitName, rows)
	if err != nil {
		return err
	}
	seats := make([]llm.Client, len(panel))
	for k, p := range panel {
		seats[k] = jb.client(k, p.Client)
	}

	ctx, stop := context.WithCancelCause(ctx)
	defer stop(nil)
	bar := r.prog.Start("evaluate "+targetID, len(rows))
	var mu sync.Mutex
	var spent, saved llm.Usage
	var failures []RowFailure
	done := make([]bool, len(rows))
	// Stream the conversations to the workers: memory holds only the rows in flight.
	type job struct {
		i int
		c artifacts.Conversation
	}
	jobs := make(chan job)
	var wg sync.WaitGroup
	workers := max(1, r.cfg.Run.Concurrency.Evaluate)
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for jb := range jobs {
				start := time.Now()
				row := rows[jb.i]
				conv := jb.c
				if conv.ConvID == "" {
					conv.ConvID = artifacts.ConvID(conv.ID, targetID, conv.Sample)
				}
				rowKey := fingerprint(rowKeyBase, conv.Transcript, conv.Status, conv.StatusReason, conv.MetricID)
				unit, err := r.store.Unit(unitName(row))
				if err != nil {
					mu.Lock()
					failures = append(failures, RowFailure{Row: conv.ConvID, Reason: err.Error()})
					mu.Unlock()
					bar.Done(true, false, llm.Usage{}, time.Since(start))
					continue
				}
				var sc artifacts.Score
				if unit.Result(rowKey, &sc) {
					done[jb.i] = true
					bar.Done(false, true, llm.Usage{}, time.Since(start))
					continue
				}
				m, _ := r.bench.MetricByID(conv.MetricID)
				mp := make([]stages.NamedClient, len(panel))
				for k, p := range panel {
					mp[k] = stages.NamedClient{Name: p.Name, Client: unit.Client(identity(judges[k]), seats[k])}
				}
				sc, u, err := stages.Evaluate(ctx, mp, r.prompts, m, conv, stages.JudgeOptions{ShowExamples: r.cfg.Judge.ShowExamples, Seed: r.cfg.Seed})
				if err == nil && landmarkC != nil && conv.Status != artifacts.StatusError && len(conv.Transcript) > 0 {
					var v artifacts.Validity
					var lu llm.Usage
					v, lu, err = stages.CheckLandmarks(ctx, unit.Client(identity(landmarkM), landmarkC), r.prompts, scenarios[conv.ID], conv, JudgeLabel(landmarkM))
					u = u.Add(lu)
					if err == nil {
						sc.Valid = v.Valid
					}
				}
				st := unit.Stats()
				mu.Lock()
				spent, saved = spent.Add(st.Spent), saved.Add(st.Saved)
				mu.Unlock()
				if err != nil {
					if fatalErr(err) {
						stop(err)
					}
					if ctx.Err() != nil || budgetStopped(err) {
						bar.Done(false, false, st.Spent, time.Since(start))
						continue
					}
					mu.Lock()
					failures = append(failures, RowFailure{Row: conv.ConvID, Reason: err.Error()})
					mu.Unlock()
					// Recorded as a null verdict with its reason; retried next run.
					sc = artifacts.Score{ID: conv.ID, MetricID: conv.MetricID, TargetModel: targetID, Sample: conv.Sample,
						ConvID: conv.ConvID, NullReason: "judge failed: " + err.Error()}
					_ = unit.SetResult("error:"+rowKey, sc)
					done[jb.i] = true
					bar.Done(true, false, st.Spent, time.Since(start))
					continue
				}
				ur := artifacts.UsageFrom(u)
				sc.Usage = &ur
				if sc.TargetModel == "" {
					sc.TargetModel = targetID
				}
				if err := unit.SetResult(rowKey, sc); err != nil {
					mu.Lock()
					failures = append(failures, RowFailure{Row: conv.ConvID, Reason: err.Error()})
					mu.Unlock()
					bar.Done(true, false, st.Spent, time.Since(start))
					continue
				}
				done[jb.i] = true
				bar.Done(false, st.Misses == 0, st.Spent, time.Since(start))
			}
		}()
	}
	feedErr := artifacts.EachConversation(convPath, func(i int, c artifacts.Conversation) error {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case jobs <- job{i, c}:
			return nil
		}
	})
	close(jobs)
	wg.Wait()
	bar.End()
	_, _, reused := bar.Counts()
	rep.Rows, rep.Reused, rep.Spent, rep.Calls, rep.Failed = len(rows), reused, spent, spent.Requests, len(failures)
	rep.Failures = failures
	if len(rep.Failures) > maxListedFailures {
		rep.Failures = rep.Failures[:maxListedFailures]
	}
	r.Report.addReused(saved)
	if cause := context.Cause(ctx); cause != nil && fatalErr(cause) {
		r.Report.add(rep)
		return cause
	}
	if feedErr != nil && !errors.Is(feedErr, context.Canceled) && !errors.Is(feedErr, context.DeadlineExceeded) {
		return feedErr
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	notRun := 0
	for _, ok := range done {
		if !ok {
			notRun++
		}
	}
	if notRun > 0 {
		rep.Status = "stopped"
		rep.Reason = fmt.Sprintf("%d of %d conversations not judged (cost ceiling); judged rows are saved", notRun, len(rows))
		r.noteRemaining(notRun)
		r.Report.add(rep)
		return nil
	}
	w, err := artifacts.NewArrayWriter(out)
	if err != nil {
		return err
	}
	var total llm.Usage
	passed, valid := 0, 0
	for _, row := range rows {
		var sc artifacts.Score
		if _, ok := r.store.ReadResult(unitName(row), &sc); !ok {
			w.Abort()
			return fmt.Errorf("evaluate %s: score of %s sample %d missing from %s", targetID, row.ID, row.Sample, r.store.Dir())
		}
		if sc.Usage != nil {
			total = total.Add(usageOf(*sc.Usage))
		}
		if sc.Passed != nil {
			valid++
			if *sc.Passed {
				passed++
			}
		}
		if err := w.Write(sc); err != nil {
			w.Abort()
			return err
		}
	}
	if err := w.Close(); err != nil {
		return err
	}
	jb.cleanup()
	costPhase := "evaluate"
	if len(r.opts.Judges) > 0 {
		costPhase = "evaluate:" + filepath.Base(filepath.Dir(out))
	}
	if err := r.writeCost(r.runDir(targetID), costPhase, total); err != nil {
		return err
	}
	if err := r.record(key, out, inputs, rep.Failed); err != nil {
		return err
	}
	rep.Status = "ran"
	if rep.Failed > 0 {
		rep.Status = "failed"
	}
	r.logf("evaluated %d conversations → %d scores (%d/%d passed) for %s", len(rows), len(rows), passed, valid, targetID)
	r.Report.add(rep)
	return nil
}

// expectedConversations estimates rows for a dry run before simulate ran.
func (r *Runner) expectedConversations() int {
	if scs, err := r.loadScenarios(); err == nil {
		n := 0
		for _, s := range scs {
			if r.inShard(s.ID) {
				n++
			}
		}
		return n * r.cfg.Generation.NumSamples
	}
	nm := len(r.bench.Metrics)
	if nm == 0 {
		nm = 5
	}
	return nm * r.cfg.Generation.ScenariosPerMetric * r.cfg.Demographics.Size() * r.cfg.Generation.NumSamples
}
