package report

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/impactbench/impactbench/internal/artifacts"
)

type costView struct {
	Rows []costRow `json:"rows"`
	// Total is the sum of known costs; Unknown counts entries whose cost
	// could not be priced (so the total is a lower bound).
	Total   float64 `json:"total"`
	Unknown int     `json:"unknown"`
	In      int     `json:"in"`
	Out     int     `json:"out"`
}

type costRow struct {
	Scope    string  `json:"scope"` // "" = benchmark (generation), else target
	Phase    string  `json:"phase"`
	Cost     float64 `json:"cost"`
	Known    bool    `json:"known"`
	In       int     `json:"in"`
	Out      int     `json:"out"`
	Cached   int     `json:"cached"`
	Requests int     `json:"requests"`
	// Derived rows are summed from conversations' _usage because the run
	// directory has no cost.json (older or interrupted runs).
	Derived bool `json:"derived,omitempty"`
}

func costKnown(p artifacts.PhaseCost) bool { return p.CostKnown == nil || *p.CostKnown }

func buildCost(in *Input) costView {
	var v costView
	haveScope := map[string]bool{}
	for _, e := range in.Costs {
		haveScope[e.Scope] = true
		phase := e.Cost.Phase
		if phase == "" {
			phase = e.Key
		}
		v.Rows = append(v.Rows, costRow{Scope: e.Scope, Phase: phase, Cost: e.Cost.Cost, Known: costKnown(e.Cost),
			In: e.Cost.InputTokens, Out: e.Cost.OutputTokens, Cached: e.Cost.CachedInputTokens, Requests: e.Cost.Requests})
	}
	for _, run := range in.Runs {
		if haveScope[run.Target] {
			continue
		}
		row := costRow{Scope: run.Target, Phase: "simulate", Known: true, Derived: true}
		for _, c := range run.Conversations {
			u := c.Usage
			row.Cost += u.Cost
			row.In += u.InputTokens
			row.Out += u.OutputTokens
			row.Cached += u.CachedInputTokens
			row.Requests += u.Requests
			if u.CostKnown != nil && !*u.CostKnown {
				row.Known = false
			}
		}
		if row.In+row.Out > 0 || row.Cost > 0 {
			v.Rows = append(v.Rows, row)
		}
	}
	for _, r := range v.Rows {
		if r.Known {
			v.Total += r.Cost
		} else {
			v.Unknown++
		}
		v.In += r.In
		v.Out += r.Out
	}
	return v
}

// settingsRows flattens Settings into label/value rows, inferring the
// user model, turns and seed from conversations' run records when the
// caller did not pass them (e.g. `impactbench report` without a config).
func settingsRows(in *Input) [][2]string {
	s := in.Settings
	if s.UserModel == "" || s.Turns == 0 {
		for _, run := range in.Runs {
			for _, c := range run.Conversations {
				if c.Run == nil {
					continue
				}
				if s.UserModel == "" {
					s.UserModel = c.Run.UserModel
				}
				if s.Turns == 0 {
					s.Turns = c.Run.Turns
				}
				if s.Seed == 0 {
					s.Seed = c.Run.Seed
				}
				if s.Landmarks == nil {
					b := c.Run.Landmarks
					s.Landmarks = &b
				}
				if s.Perfunctory == nil {
					b := c.Run.Perfunctory
					s.Perfunctory = &b
				}
				break
			}
		}
	}
	if s.Samples == 0 {
		maxS := -1
		for _, run := range in.Runs {
			for _, c := range run.Conversations {
				maxS = max(maxS, c.Sample)
			}
		}
		s.Samples = maxS + 1
	}
	var rows [][2]string
	add := func(k, v string) {
		if v != "" && v != "0" {
			rows = append(rows, [2]string{k, v})
		}
	}
	add("Simulated user model", s.UserModel)
	add("Generator model", s.GeneratorModel)
	add("Judge models", strings.Join(s.JudgeModels, ", "))
	targets := make([]string, 0, len(s.Targets))
	for _, t := range s.Targets {
		if t.Model != "" && t.Model != t.ID {
			targets = append(targets, t.ID+" ("+t.Model+")")
		} else {
			targets = append(targets, t.ID)
		}
	}
	if len(targets) == 0 {
		for _, r := range in.Runs {
			targets = append(targets, r.Target)
		}
	}
	add("Targets", strings.Join(targets, ", "))
	add("Turns per conversation", strconv.Itoa(s.Turns))
	add("Samples per scenario", strconv.Itoa(s.Samples))
	add("Scenarios per metric", strconv.Itoa(s.ScenariosPerMetric))
	add("Scenarios (variants)", strconv.Itoa(len(in.Scenarios)))
	add("Metrics", strconv.Itoa(len(in.Benchmark.Metrics)))
	if s.Seed != 0 {
		add("Seed", strconv.FormatUint(s.Seed, 10))
	}
	if s.Landmarks != nil {
		add("Landmarks", fmt.Sprint(*s.Landmarks))
	}
	if s.Perfunctory != nil {
		add("Perfunctory noise", fmt.Sprint(*s.Perfunctory))
	}
	for _, e := range s.Extra {
		add(e[0], e[1])
	}
	return rows
}
