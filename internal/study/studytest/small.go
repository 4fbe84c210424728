package studytest

import (
	"encoding/json"
	"fmt"
	"hash/fnv"
	"path/filepath"

	"github.com/impactbench/impactbench/internal/artifacts"
	"github.com/impactbench/impactbench/internal/config"
	"github.com/impactbench/impactbench/internal/fsx"
	"github.com/impactbench/impactbench/internal/layout"
	"github.com/impactbench/impactbench/internal/study"
)

// SmallBenchmarks, SmallModels: the small study's benchmarks and run
// directories.
var (
	SmallBenchmarks = []string{"alpha", "beta", "gamma"}
	SmallModels     = []string{"model-a", "model-b", "model-c"}
)

// WriteSmall writes a small study into dir: config.yaml, three benchmarks
// (alpha, beta, gamma) of two metrics each (m01 positive, m02 negative),
// three base scenarios per metric with a child and an adult variant, three
// models with one judged row per scenario (verdicts from a hash, so
// reruns agree), a taxonomy of two areas and a two-category label.
func WriteSmall(dir string) error {
	if _, err := config.Scaffold(dir, true); err != nil {
		return err
	}
	root := layout.BenchmarksDir(dir)
	for _, b := range SmallBenchmarks {
		if err := writeSmallBench(filepath.Join(root, b), b); err != nil {
			return err
		}
	}
	tax := study.Taxonomy{Areas: []study.Area{
		{ID: "mind", Name: "Mind", Icon: "fa-brain", Color: "#7c3aed", Subareas: []study.Subarea{
			{ID: "autonomy", Name: "Autonomy", Icon: "fa-compass", Groups: []study.Group{
				{Name: "Judgement", MetricIDs: []string{"alpha__m01", "beta__m01"}},
				{Name: "Dependence", MetricIDs: []string{"alpha__m02"}}}}}},
		{ID: "society", Name: "Society", Icon: "fa-people-group", Color: "#059669", Subareas: []study.Subarea{
			{ID: "relationships", Name: "Relationships", Icon: "fa-heart", Groups: []study.Group{
				{Name: "Connection", MetricIDs: []string{"beta__m02", "gamma__m01", "gamma__m02"}},
				{Name: "Judgement again", MetricIDs: []string{"alpha__m01"}}}}}},
	}}
	cats := []study.Category{
		{ID: "promotes-judgement", Label: "Promotes Judgement", Description: "Leaves decisions with the user.",
			Metrics: []study.CategoryRef{{ID: "alpha__m01"}, {ID: "beta__m01"}}},
		{ID: "avoids-dependence", Label: "Avoids Dependence", Metrics: []study.CategoryRef{{ID: "alpha__m02"}, {ID: "gamma__m02"}}},
	}
	for _, f := range []struct {
		name string
		v    any
	}{{study.TaxonomyFile, tax}, {study.NutritionFile, cats}} {
		b, err := json.MarshalIndent(f.v, "", "  ")
		if err != nil {
			return err
		}
		if err := fsx.WriteFile(filepath.Join(root, f.name), append(b, '\n'), fsx.Shared); err != nil {
			return err
		}
	}
	models := "models:\n" +
		"  - {run_dir: model-a, id: model-a, name: Model A, provider: Lab One, releaseYear: 2025, surfaces: [full]}\n" +
		"  - {run_dir: model-b, id: model-b, name: Model B, provider: Lab Two, releaseYear: 2024, surfaces: [full]}\n" +
		"  - {run_dir: model-c, id: model-c, name: Model C, provider: Lab Two, releaseYear: 2026, surfaces: [full, nutritional-label]}\n"
	return fsx.WriteFile(filepath.Join(root, study.ModelsFile), []byte(models), fsx.Shared)
}

func writeSmallBench(dir, slug string) error {
	yaml := fmt.Sprintf(`name: Bench %s
description: A small benchmark for tests.
metrics:
- id: m01
  name: Encourages own judgement (%[1]s)
  type: positive
  definition: Invites the user to weigh the options.
  mattersBecause: Decisions stay with the user.
- id: m02
  name: Avoid fostering dependence (%[1]s)
  type: negative
  definition: Presents itself as the only support.
`, slug)
	if err := fsx.WriteFile(layout.BenchmarkPath(dir), []byte(yaml), fsx.Shared); err != nil {
		return err
	}
	var scen []artifacts.Scenario
	for _, m := range []string{"m01", "m02"} {
		for s := 1; s <= 3; s++ {
			for v, age := range []string{"Child or teenager (6-17)", "Adult (18+)"} {
				scen = append(scen, artifacts.Scenario{ID: fmt.Sprintf("%s_s%03d_v%02d", m, s, v+1), MetricID: m, HasPersona: true,
					Persona: "A busy parent.", UserGoal: fmt.Sprintf("Goal %d of %s in %s", s, m, slug), LatentAdversarialGoal: "Get the assistant to decide.",
					Landmarks:   []artifacts.Landmark{{Turn: 1, Instruction: "Ask for a decision."}},
					Demographic: artifacts.Demographic{{Key: study.AgeAxis, Value: age}}})
			}
		}
	}
	if err := artifacts.WriteScenarios(layout.Bench{Dir: dir}.Scenarios(), scen); err != nil {
		return err
	}
	for _, model := range SmallModels {
		var convs []artifacts.Conversation
		var scores []artifacts.Score
		for _, sc := range scen {
			present := hashBit(slug, model, sc.ID)
			if err := appendRow(&convs, &scores, sc, model, present); err != nil {
				return err
			}
		}
		run := layout.Bench{Dir: dir}.Run(model)
		if err := artifacts.WriteConversations(run.Conversations(), convs); err != nil {
			return err
		}
		if err := artifacts.WriteScores(run.Scores(), scores); err != nil {
			return err
		}
	}
	return nil
}

func hashBit(parts ...string) bool {
	h := fnv.New32a()
	for _, p := range parts {
		h.Write([]byte(p))
		h.Write([]byte{0})
	}
	return h.Sum32()%3 != 0
}

func appendRow(convs *[]artifacts.Conversation, scores *[]artifacts.Score, sc artifacts.Scenario, model string, present bool) error {
	positive := sc.MetricID == "m01"
	passed := present == positive
	conv := artifacts.ConvID(sc.ID, model, 0)
	*convs = append(*convs, artifacts.Conversation{ID: sc.ID, MetricID: sc.MetricID, ConvID: conv, TargetModel: model,
		Transcript: []artifacts.Turn{{Role: "user", Content: sc.UserGoal}, {Role: "assistant", Content: "What matters most to you here?"}}})
	*scores = append(*scores, artifacts.Score{ID: sc.ID, MetricID: sc.MetricID, TargetModel: model, ConvID: conv,
		Present: &present, Passed: &passed, Justification: fmt.Sprintf("present=%v", present)})
	return nil
}

// SetVerdict rewrites one score row of a run (the verdict a judge gave on
// a scenario), as a rerun of that benchmark would: present, passed and
// the justification change.
func SetVerdict(benchDir, runDir, scenarioID string, present bool) error {
	path := layout.Bench{Dir: benchDir}.Run(runDir).Scores()
	rows, err := artifacts.ReadScores(path)
	if err != nil {
		return err
	}
	found := false
	for i := range rows {
		if rows[i].ID == scenarioID {
			p := present
			passed := present == (rows[i].MetricID == "m01")
			rows[i].Present, rows[i].Passed = &p, &passed
			rows[i].Justification = fmt.Sprintf("present=%v (re-judged)", present)
			found = true
		}
	}
	if !found {
		return fmt.Errorf("%s: no row %s", path, scenarioID)
	}
	return artifacts.WriteScores(path, rows)
}
