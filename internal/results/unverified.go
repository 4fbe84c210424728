package results

import (
	"cmp"
	"maps"
	"slices"
)

// Unverified verdicts are verdicts whose evidence — the judge's quotes of
// the assistant — was not found in the assistant's messages even after the
// judge was asked once more (see stages.Judge). They are kept, so every
// rate includes them; these counts say how much of a rate rests on them.

// UnverifiedCount counts judge verdicts: Checked had their evidence looked
// up, Unverified of them were not found.
type UnverifiedCount struct {
	Checked    int `json:"n_checked"`
	Unverified int `json:"n_unverified"`
}

// UnverifiedMetric is one metric's count, also split by judge.
type UnverifiedMetric struct {
	Checked    int                    `json:"n_checked"`
	Unverified int                    `json:"n_unverified"`
	ByJudge    Keyed[UnverifiedCount] `json:"by_judge"`
}

// UnverifiedStats is results.json's "unverified": the model's judge
// verdicts in total, per metric (and judge within it) and per judge.
// RowsUnverified counts rows whose own verdict (the one the rates use) is
// unverified: for a panel, no judge of the majority had its evidence found.
type UnverifiedStats struct {
	Checked        int                     `json:"n_checked"`
	Unverified     int                     `json:"n_unverified"`
	RowsUnverified int                     `json:"rows_unverified"`
	ByMetric       Keyed[UnverifiedMetric] `json:"by_metric"`
	ByJudge        Keyed[UnverifiedCount]  `json:"by_judge"`
}

// unverifiedJudgeKey names the judge of a single-judge row that does not
// record one.
const unverifiedJudgeKey = "judge"

// unverified counts the verdicts of rows judged with evidence checking; nil
// when no row was (rows written before the check, or upstream's).
func unverified(rows []row) *UnverifiedStats {
	type cell struct{ metric, judge string }
	counts := map[cell]*UnverifiedCount{}
	st := &UnverifiedStats{}
	add := func(metric, judge string, bad *bool) {
		if bad == nil {
			return
		}
		if judge == "" {
			judge = unverifiedJudgeKey
		}
		c := counts[cell{metric, judge}]
		if c == nil {
			c = &UnverifiedCount{}
			counts[cell{metric, judge}] = c
		}
		c.Checked++
		st.Checked++
		if *bad {
			c.Unverified++
			st.Unverified++
		}
	}
	for _, r := range rows {
		if r.Unverified != nil && *r.Unverified {
			st.RowsUnverified++
		}
		if len(r.Judges) > 1 {
			for _, j := range r.Judges {
				add(r.metricKey(), j.Judge, j.Unverified)
			}
			continue
		}
		add(r.metricKey(), r.Judge, r.Unverified)
	}
	if st.Checked == 0 {
		return nil
	}
	cells := make([]cell, 0, len(counts))
	for c := range counts {
		cells = append(cells, c)
	}
	slices.SortFunc(cells, func(a, b cell) int { return cmp.Or(cmp.Compare(a.metric, b.metric), cmp.Compare(a.judge, b.judge)) })
	st.ByMetric = Keyed[UnverifiedMetric]{}
	judges := map[string]*UnverifiedCount{}
	for _, c := range cells {
		n := *counts[c]
		if k := len(st.ByMetric); k == 0 || st.ByMetric[k-1].Key != c.metric {
			st.ByMetric = append(st.ByMetric, Entry[UnverifiedMetric]{c.metric, UnverifiedMetric{ByJudge: Keyed[UnverifiedCount]{}}})
		}
		m := &st.ByMetric[len(st.ByMetric)-1].Value
		m.Checked += n.Checked
		m.Unverified += n.Unverified
		m.ByJudge = append(m.ByJudge, Entry[UnverifiedCount]{c.judge, n})
		if judges[c.judge] == nil {
			judges[c.judge] = &UnverifiedCount{}
		}
		judges[c.judge].Checked += n.Checked
		judges[c.judge].Unverified += n.Unverified
	}
	st.ByJudge = Keyed[UnverifiedCount]{}
	for _, j := range slices.Sorted(maps.Keys(judges)) {
		st.ByJudge = append(st.ByJudge, Entry[UnverifiedCount]{j, *judges[j]})
	}
	return st
}
