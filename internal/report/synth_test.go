package report

import (
	"bufio"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/impactbench/impactbench/internal/artifacts"
)

// synthSpec describes a synthetic benchmark for scale tests and screenshots.
type synthSpec struct {
	Targets  []string
	Care     []float64 // per target: probability that a conversation passes
	Metrics  int
	Bases    int // base scenarios per metric
	Samples  int
	Turns    int // user+assistant pairs (messages = 2·Turns)
	UserLen  int // mean characters per simulated-user message
	AsstLen  int // mean characters per assistant message
	Seed     uint64
	Axes     [][2]any // name, []string values
	ScenDir  string   // reuse this dir's scenarios.json + benchmark.yaml instead of generating
	XSSFirst bool     // plant xssPayload in the first conversation
}

// defaultScale is 2,000 scenario variants × 5 targets × 2 samples =
// 20,000 conversations of 12 messages, with message lengths measured on
// upstream's humanebench run (user ≈ 370, assistant ≈ 1,570 characters).
func defaultScale() synthSpec {
	return synthSpec{
		Targets: []string{"model-a", "model-b", "model-c", "model-d", "model-e"},
		Care:    []float64{0.8, 0.7, 0.6, 0.5, 0.4},
		Metrics: 50, Bases: 5, Samples: 2, Turns: 6, UserLen: 370, AsstLen: 1570, Seed: 1,
		Axes: [][2]any{
			{"age", []string{"Child or teenager (6-17)", "Adult (18+)"}},
			{"gender", []string{"female", "male", "nonbinary", "unspecified"}},
		},
	}
}

// vocab is a Zipf-weighted word list taken from upstream's real
// transcripts, so synthetic text compresses about like model output does
// (a random-letter text would not compress; a repeated sentence would
// compress far too well).
var vocab = sync.OnceValue(func() []string {
	var rows []struct {
		Transcript []artifacts.Turn `json:"transcript"`
	}
	b, err := os.ReadFile("testdata/humanebench/runs/claude-haiku-4-5/conversations.json")
	if err != nil {
		panic(err)
	}
	if err := json.Unmarshal(b, &rows); err != nil {
		panic(err)
	}
	freq := map[string]int{}
	for _, r := range rows {
		for _, t := range r.Transcript {
			for _, w := range strings.Fields(t.Content) {
				freq[w]++
			}
		}
	}
	words := make([]string, 0, len(freq))
	for w := range freq {
		words = append(words, w)
	}
	sort.Slice(words, func(i, j int) bool {
		if freq[words[i]] != freq[words[j]] {
			return freq[words[i]] > freq[words[j]]
		}
		return words[i] < words[j]
	})
	return words
})

func text(r *rand.Rand, z *rand.Zipf, n int) string {
	words := vocab()
	var b strings.Builder
	target := n/2 + r.IntN(n+1) // mean ≈ n
	for b.Len() < target {
		if b.Len() > 0 {
			if r.IntN(40) == 0 {
				b.WriteString("\n\n")
			} else {
				b.WriteByte(' ')
			}
		}
		b.WriteString(words[z.Uint64()])
	}
	return b.String()
}

// writeSynth writes a benchmark directory and returns its conversation count.
func writeSynth(t testing.TB, dir string, sp synthSpec) int {
	t.Helper()
	r := rand.New(rand.NewPCG(sp.Seed, 2))
	z := rand.NewZipf(r, 1.1, 2, uint64(len(vocab())-1))
	type scen struct {
		ID, Metric, Type, Goal string
		demo                   []string
	}
	var scens []scen
	var metricTypes = map[string]string{}
	if sp.ScenDir != "" {
		rows, _, err := readArray[Scenario](filepath.Join(sp.ScenDir, "scenarios.json"))
		if err != nil {
			t.Fatal(err)
		}
		in, err := Load(sp.ScenDir, Settings{})
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range in.Benchmark.Metrics {
			metricTypes[m.ID] = m.Type
		}
		for _, s := range rows {
			var d []string
			for _, av := range s.Demographic {
				d = append(d, av.Value)
			}
			scens = append(scens, scen{ID: s.ID, Metric: scenarioMetric(s), Type: metricTypes[scenarioMetric(s)], Goal: s.UserGoal, demo: d})
		}
	} else {
		var yml strings.Builder
		yml.WriteString("name: Synthetic scale benchmark\ndescription: Generated for report scale tests.\nmetrics:\n")
		for m := 1; m <= sp.Metrics; m++ {
			id := fmt.Sprintf("m%02d", m)
			typ := "positive"
			if m%3 == 0 {
				typ = "negative"
			}
			metricTypes[id] = typ
			fmt.Fprintf(&yml, "- id: %s\n  name: %q\n  type: %s\n  definition: %q\n", id, "Metric "+text(r, z, 30), typ, text(r, z, 200))
		}
		writeFile(t, filepath.Join(dir, "benchmark.yaml"), yml.String())
		// Variants: the cartesian product of the axes, in axis order.
		variants := [][]string{{}}
		for _, ax := range sp.Axes {
			var next [][]string
			for _, v := range variants {
				for _, val := range ax[1].([]string) {
					next = append(next, append(append([]string{}, v...), val))
				}
			}
			variants = next
		}
		var rows []json.RawMessage
		for m := 1; m <= sp.Metrics; m++ {
			mid := fmt.Sprintf("m%02d", m)
			for b := 1; b <= sp.Bases; b++ {
				persona, goal, latent := text(r, z, 600), text(r, z, 100), text(r, z, 150)
				var lms []artifacts.Landmark
				for turn := 1; turn <= sp.Turns; turn++ {
					lms = append(lms, artifacts.Landmark{Turn: turn, Instruction: text(r, z, 250)})
				}
				for vi, v := range variants {
					id := fmt.Sprintf("%s_s%03d_v%02d", mid, b, vi+1)
					var demo strings.Builder
					demo.WriteByte('{')
					for ai, ax := range sp.Axes {
						if ai > 0 {
							demo.WriteByte(',')
						}
						k, _ := json.Marshal(ax[0])
						val, _ := json.Marshal(v[ai])
						demo.Write(k)
						demo.WriteByte(':')
						demo.Write(val)
					}
					demo.WriteByte('}')
					lmJSON, _ := json.Marshal(lms)
					row, _ := json.Marshal(map[string]any{"id": id, "metric_id": mid, "persona": persona,
						"user_persona": persona + " " + strings.Join(v, ", "), "user_goal": goal,
						"latent_adversarial_goal": latent, "landmarks": json.RawMessage(lmJSON),
						"demographic": json.RawMessage(demo.String())})
					rows = append(rows, row)
					scens = append(scens, scen{ID: id, Metric: mid, Type: metricTypes[mid], Goal: goal, demo: v})
				}
			}
		}
		writeJSON(t, filepath.Join(dir, "scenarios.json"), rows)
	}

	total := 0
	var results []any
	if sp.ScenDir != "" {
		// Keep the existing targets' results (e.g. upstream's real run).
		old, _, err := readArray[json.RawMessage](filepath.Join(sp.ScenDir, "results.json"))
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range old {
			results = append(results, o)
		}
	}
	for ti, target := range sp.Targets {
		runDir := filepath.Join(dir, "runs", target)
		if err := os.MkdirAll(runDir, 0o755); err != nil {
			t.Fatal(err)
		}
		cf, err := os.Create(filepath.Join(runDir, "conversations.json"))
		if err != nil {
			t.Fatal(err)
		}
		cw := bufio.NewWriterSize(cf, 1<<20)
		cw.WriteString("[\n")
		var scores []artifacts.Score
		type cnt struct{ k, n int }
		byType, byMetric := map[string]*cnt{}, map[string]*cnt{}
		first := true
		var usage artifacts.UsageRecord
		for _, s := range scens {
			for sample := range sp.Samples {
				var tr []artifacts.Turn
				for range sp.Turns {
					tr = append(tr, artifacts.Turn{Role: "user", Content: text(r, z, sp.UserLen)},
						artifacts.Turn{Role: "assistant", Content: text(r, z, sp.AsstLen)})
				}
				if sp.XSSFirst && total == 0 {
					tr[1].Content = xssPayload
				}
				status := artifacts.StatusCompleted
				if r.IntN(200) == 0 {
					status = artifacts.StatusUserTerminated
				}
				u := artifacts.UsageRecord{Cost: math.Round(r.Float64()*2000) / 1e6, InputTokens: 4000 + r.IntN(4000), OutputTokens: 1500 + r.IntN(1000), Requests: sp.Turns}
				usage.Cost += u.Cost
				usage.InputTokens += u.InputTokens
				usage.OutputTokens += u.OutputTokens
				c := artifacts.Conversation{ID: s.ID, MetricID: s.Metric, ConvID: artifacts.ConvID(s.ID, target, sample), Sample: sample,
					TargetModel: target, Transcript: tr, Usage: u, Status: status,
					Run: &artifacts.RunInfo{UserModel: "offline-user", TargetModel: target, Turns: sp.Turns, Landmarks: true, Seed: sp.Seed}}
				b, err := json.Marshal(c)
				if err != nil {
					t.Fatal(err)
				}
				if !first {
					cw.WriteString(",\n")
				}
				first = false
				cw.Write(b)
				total++

				pass := r.Float64() < sp.Care[ti]
				present := pass == (s.Type != "negative")
				var judges []artifacts.JudgeVerdict
				for j := range 3 {
					judges = append(judges, artifacts.JudgeVerdict{Judge: fmt.Sprintf("judge-%d", j+1), Present: ptr(present), Justification: text(r, z, 200)})
				}
				scores = append(scores, artifacts.Score{ID: s.ID, MetricID: s.Metric, TargetModel: target, Sample: sample,
					Present: ptr(present), Passed: ptr(pass), Justification: text(r, z, 290), ConvID: c.ConvID, Judges: judges})
				for key, m := range map[string]map[string]*cnt{s.Type: byType, s.Metric: byMetric} {
					if m[key] == nil {
						m[key] = &cnt{}
					}
					m[key].n++
					if pass {
						m[key].k++
					}
				}
			}
		}
		cw.WriteString("\n]\n")
		if err := cw.Flush(); err != nil {
			t.Fatal(err)
		}
		cf.Close()
		writeJSON(t, filepath.Join(runDir, "scores.json"), scores)
		writeJSON(t, filepath.Join(runDir, "cost.json"), map[string]artifacts.PhaseCost{
			"simulate": {Cost: artifacts.Round(usage.Cost, 6), InputTokens: usage.InputTokens, OutputTokens: usage.OutputTokens, Phase: "simulate"},
			"evaluate": {Cost: artifacts.Round(usage.Cost/4, 6), InputTokens: usage.InputTokens / 2, OutputTokens: usage.OutputTokens / 10, Phase: "evaluate"},
		})
		rate := func(c *cnt) any {
			if c == nil || c.n == 0 {
				return nil
			}
			return artifacts.Round(float64(c.k)/float64(c.n), 4)
		}
		n := func(c *cnt) int {
			if c == nil {
				return 0
			}
			return c.n
		}
		bm := map[string]any{}
		for mid, c := range byMetric {
			bm[mid] = map[string]any{"pass_rate": rate(c), "n_passed": c.k, "n_total": c.n}
		}
		results = append(results, map[string]any{"target_model": target,
			"positive_pass_rate": rate(byType["positive"]), "negative_pass_rate": rate(byType["negative"]),
			"n_positive": n(byType["positive"]), "n_negative": n(byType["negative"]),
			"n_total": n(byType["positive"]) + n(byType["negative"]), "by_metric": bm, "by_scenario": map[string]any{}})
	}
	writeJSON(t, filepath.Join(dir, "results.json"), results)
	return total
}
