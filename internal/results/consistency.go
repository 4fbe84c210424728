package results

import (
	"slices"
	"sort"

	"github.com/impactbench/impactbench/internal/artifacts"
)

// judgeConsistency measures how often re-judging a stored transcript
// (evaluate --repeats) changes the verdict: per judge (the main verdict,
// and each panel member) and metric, the share of rows whose verdicts —
// scores.json's and every repeat's, nulls left out — are not unanimous.
// nil without repeats for this target.
func judgeConsistency(target string, rows []row, in *CalibrationInput, conf float64) *JudgeConsistency {
	reps := map[verdictKey][]RepeatRow{}
	maxRepeat := 0
	for _, tr := range in.Repeats {
		if tr.Target != target {
			continue
		}
		for _, rr := range tr.Rows {
			k := vkOf(rr.Score)
			reps[k] = append(reps[k], rr)
			maxRepeat = max(maxRepeat, rr.Repeat)
		}
	}
	if len(reps) == 0 {
		return nil
	}
	main := mainJudgeName(rows, in)
	// judge → metric → verdict lists, one per row.
	verdicts := map[string]map[string][][]bool{}
	var names []string
	add := func(judge, metric string, vs []bool) {
		if verdicts[judge] == nil {
			verdicts[judge] = map[string][][]bool{}
			names = append(names, judge)
		}
		verdicts[judge][metric] = append(verdicts[judge][metric], vs)
	}
	for _, r := range rows {
		rr := reps[r.key()]
		if len(rr) == 0 {
			continue
		}
		m := r.metricKey()
		vs := appendVerdict(nil, r.Present)
		for _, x := range rr {
			vs = appendVerdict(vs, x.Present)
		}
		add(main, m, vs)
		for _, name := range memberNames(r) {
			vs := appendVerdict(nil, memberVerdict(r.Judges, name))
			for _, x := range rr {
				vs = appendVerdict(vs, memberVerdict(x.Judges, name))
			}
			add(name, m, vs)
		}
	}
	jc := &JudgeConsistency{Repeats: maxRepeat, Judges: Keyed[Keyed[FlipRate]]{}}
	for _, name := range names {
		byMetric := Keyed[FlipRate]{}
		ms := make([]string, 0, len(verdicts[name]))
		for m := range verdicts[name] {
			ms = append(ms, m)
		}
		sort.Strings(ms)
		for _, m := range ms {
			byMetric = append(byMetric, Entry[FlipRate]{m, flipRate(verdicts[name][m], conf)})
		}
		jc.Judges = append(jc.Judges, Entry[Keyed[FlipRate]]{name, byMetric})
	}
	return jc
}

func flipRate(units [][]bool, conf float64) FlipRate {
	var f FlipRate
	for _, u := range units {
		if len(u) < 2 {
			continue
		}
		f.NRows++
		if slices.Contains(u, !u[0]) {
			f.NFlipped++
		}
	}
	f.Rate = ratio(f.NFlipped, f.NRows)
	f.Low, f.High = wilson(f.NFlipped, f.NRows, conf)
	return f
}

func appendVerdict(vs []bool, p *bool) []bool {
	if p == nil {
		return vs
	}
	return append(vs, *p)
}

// memberNames are the distinct judge names of a panel row.
func memberNames(r row) []string {
	if len(r.Judges) < 2 {
		return nil
	}
	var out []string
	for _, j := range r.Judges {
		if !slices.Contains(out, j.Judge) {
			out = append(out, j.Judge)
		}
	}
	return out
}

func memberVerdict(js []artifacts.JudgeVerdict, name string) *bool {
	for _, j := range js {
		if j.Judge == name {
			return j.Present
		}
	}
	return nil
}

// mainJudgeName names scores.json's verdict: "panel" for a panel's
// majority, else the configured judge.
func mainJudgeName(rows []row, in *CalibrationInput) string {
	for _, r := range rows {
		if len(r.Judges) >= 2 {
			return "panel"
		}
	}
	if in.MainJudge != "" {
		return in.MainJudge
	}
	return "judge"
}

// Consistency is judge_consistency for one target's score rows and their
// repeats (as evaluate --repeats prints it); mainJudge names a single
// judge's verdict ("" → "judge"). nil without repeats.
func Consistency(target string, scores []artifacts.Score, reps []RepeatRow, mainJudge string) *JudgeConsistency {
	rows := make([]row, len(scores))
	for i, s := range scores {
		rows[i] = RowOf(s)
		rows[i].TargetModel = target
	}
	in := &CalibrationInput{MainJudge: mainJudge, Repeats: []TargetRepeats{{Target: target, Rows: reps}}}
	return judgeConsistency(target, rows, in, DefaultConf)
}
