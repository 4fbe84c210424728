package results

import (
	"fmt"
	"math"

	"github.com/impactbench/impactbench/internal/artifacts"
)

// Whether a metric's labelled rows look like the random draw the weights
// assume. Post-stratification by target × verdict is right for labels drawn
// at random within each target × verdict however they were spread over
// targets; it is not right for rows chosen for what they show. The viewer
// itself offers such a choice — its triage queue lists the rows whose
// judge panel split or whose scenario's samples got different verdicts,
// the rows a judge gets wrong most often — and a label there looks like
// any other in labels.jsonl. What can be checked is whether the labelled
// rows hold as many of those rows as a random draw would: a stratified
// hypergeometric test, within each target × verdict, of the count of
// triage rows among the labelled ones.

// drawAlpha is the two-sided level at which labelled rows are said not to
// be a random draw: a random draw is flagged on about 1 metric in 1,000.
const drawAlpha = 0.001

// drawWarning says, for metric m, when its labelled rows hold more (or
// fewer) of the triage queue's rows than a random draw within each target
// × verdict would — "" when they do not, or when no row is one.
func (p *labelPool) drawWarning(m string) string {
	type stratumKey struct{ t, s int }
	type counts struct{ rows, triage, labelled, labelledTriage int }
	cs := map[stratumKey]*counts{}
	var order []stratumKey
	triage := make([][]bool, len(p.targets))
	for ti, tr := range p.targets {
		triage[ti] = triageRows(tr.rows, m)
		for i, r := range tr.rows {
			if r.metricKey() != m || r.Present == nil {
				continue
			}
			k := stratumKey{ti, stratum(r.Present)}
			if cs[k] == nil {
				cs[k] = &counts{}
				order = append(order, k)
			}
			cs[k].rows++
			if triage[ti][i] {
				cs[k].triage++
			}
		}
	}
	for _, lb := range p.labs {
		r := p.row(lb)
		if r.metricKey() != m || r.Present == nil {
			continue
		}
		c := cs[stratumKey{lb.t, stratum(r.Present)}]
		c.labelled++
		if triage[lb.t][lb.idx] {
			c.labelledTriage++
		}
	}
	dist := []float64{1} // the distribution of the labelled triage rows under a random draw
	k, n, expected, anyTriage := 0, 0, 0.0, false
	for _, key := range order {
		c := cs[key]
		if c.labelled == 0 {
			continue
		}
		anyTriage = anyTriage || c.triage > 0
		k += c.labelledTriage
		n += c.labelled
		expected += float64(c.labelled) * float64(c.triage) / float64(c.rows)
		dist = convolve(dist, hypergeometric(c.rows, c.triage, c.labelled))
	}
	if !anyTriage || n == 0 {
		return ""
	}
	var upper, lower float64
	for x, q := range dist {
		if x >= k {
			upper += q
		}
		if x <= k {
			lower += q
		}
	}
	pv := math.Min(1, 2*math.Min(upper, lower))
	if pv >= drawAlpha {
		return ""
	}
	more := "more"
	if float64(k) < expected {
		more = "fewer"
	}
	return fmt.Sprintf("not a random draw: %d of the %d labelled rows are ones the triage queue lists (the judges split, or the scenario's samples got different verdicts), "+
		"against %.1f expected from a random draw within each target and verdict (p %s): rows chosen for what they show bias sensitivity and specificity, "+
		"and the corrected rates with them (%s such rows than chance); label rows drawn at random (the viewer's calibration queue)",
		k, n, expected, fmtDrawP(pv), more)
}

func fmtDrawP(p float64) string {
	if p < 0.0001 {
		return "< 0.0001"
	}
	return fmt.Sprintf("%.4f", p)
}

// triageRows marks the rows of metric m the viewer's triage queue lists:
// the judge panel split, or the same scenario got different main verdicts
// on different samples of this target.
func triageRows(rows []row, m string) []bool {
	verdicts := map[string][2]bool{} // scenario → saw absent, saw present
	for _, r := range rows {
		if r.metricKey() != m || r.Present == nil {
			continue
		}
		v := verdicts[r.ID]
		if *r.Present {
			v[1] = true
		} else {
			v[0] = true
		}
		verdicts[r.ID] = v
	}
	out := make([]bool, len(rows))
	for i, r := range rows {
		if r.metricKey() != m || r.Present == nil {
			continue
		}
		v := verdicts[r.ID]
		out[i] = v[0] && v[1] || panelSplit(r.Judges)
	}
	return out
}

// panelSplit: the panel's verdicts are not all the same.
func panelSplit(js []artifacts.JudgeVerdict) bool {
	seen := [2]bool{}
	for _, j := range js {
		if j.Present != nil {
			seen[b2i(*j.Present)] = true
		}
	}
	return seen[0] && seen[1]
}

// hypergeometric is the distribution of the successes in n draws without
// replacement from N holding K successes.
func hypergeometric(N, K, n int) []float64 {
	out := make([]float64, n+1)
	lc := func(a, b int) float64 {
		x, _ := math.Lgamma(float64(a + 1))
		y, _ := math.Lgamma(float64(b + 1))
		z, _ := math.Lgamma(float64(a - b + 1))
		return x - y - z
	}
	total := lc(N, n)
	for x := max(0, n-(N-K)); x <= min(n, K); x++ {
		out[x] = math.Exp(lc(K, x) + lc(N-K, n-x) - total)
	}
	return out
}

// convolve is the distribution of the sum of two independent counts.
func convolve(a, b []float64) []float64 {
	out := make([]float64, len(a)+len(b)-1)
	for i, x := range a {
		if x == 0 {
			continue
		}
		for j, y := range b {
			out[i+j] += x * y
		}
	}
	return out
}
