package results

import (
	"strconv"

	"github.com/impactbench/impactbench/internal/stats"
)

// Families of tests, one per question a reader asks of the file. Holm
// adjusts within a family, so a finding is "significant" against the other
// answers to the same question, not against every test in the file:
//
//   - pairwise:leaderboard — which models' scores differ? Every pair of
//     models once. Adding a model adds its pairs to this family, so the
//     other pairs' adjusted p-values can rise (and fall back when it is
//     removed); nothing outside the family moves.
//   - pairwise:positive, pairwise:negative — the same per track;
//   - pairwise:metric:<id> — the same on one metric;
//   - gaps:<model>:<metric> — does this model treat demographic values
//     differently on this metric? All its axes and value pairs on the
//     metric. Other models never change it.
const (
	familyLeaderboard = "pairwise:" + trackLeaderboard
	familyTrackPrefix = "pairwise:"
	familyMetric      = "pairwise:metric:"
	familyGaps        = "gaps:"
)

// multiplicityRule is Multiplicity.Family: the rule that forms families.
const multiplicityRule = "one family per question: pairwise:leaderboard (every model pair's score difference), " +
	"pairwise:positive / pairwise:negative (each track's pairs), pairwise:metric:<id> (each metric's pairs), " +
	"gaps:<model>:<metric> (one model's demographic gaps on one metric); Holm within a family, Benjamini-Hochberg q-values beside it"

// familyTest is one test of the file: its family, raw p-value, and where
// to write the results.
type familyTest struct {
	family string
	p      float64
	set    func(p, adjusted float64, t Tested, significant bool)
	parts  Tested // PSignFlip, PFloor (raw)
}

// gapFamily and pairFamily name a test's family.
func gapFamily(target, metric string) string { return familyGaps + target + ":" + metric }

func pairFamily(track, metric string) string {
	if metric != "" {
		return familyMetric + metric
	}
	return familyTrackPrefix + track
}

// adjustFamilies applies Holm and Benjamini–Hochberg within each family
// and writes every test's rounded p-values, family and significance. It
// returns the file's Multiplicity (nil without tests).
func adjustFamilies(tests []familyTest) *Multiplicity {
	if len(tests) == 0 {
		return nil
	}
	members := map[string][]int{}
	var order []string
	for i, t := range tests {
		if _, ok := members[t.family]; !ok {
			order = append(order, t.family)
		}
		members[t.family] = append(members[t.family], i)
	}
	m := &Multiplicity{Correction: "holm", Family: multiplicityRule, Alpha: significance, FDR: "benjamini-hochberg"}
	for _, fam := range order {
		idx := members[fam]
		ps := make([]float64, len(idx))
		for j, i := range idx {
			ps[j] = tests[i].p
		}
		holm, bh := stats.Holm(ps), stats.BenjaminiHochberg(ps)
		for j, i := range idx {
			t := tests[i].parts
			t.Family, t.FamilySize, t.QValue = fam, len(idx), ptr(roundP(bh[j]))
			tests[i].set(roundP(ps[j]), roundP(holm[j]), t, holm[j] < significance)
		}
		m.Families = append(m.Families, Entry[int]{fam, len(idx)})
		m.FamilySize = max(m.FamilySize, len(idx))
	}
	return m
}

// roundP rounds a p-value to 4 significant digits (p-values span many
// orders of magnitude; 4 decimal places would print 3e-05 as 0.0) without
// moving it across the significance level: 0.049996 is written 0.049996,
// not 0.05, so a reader comparing the file's numbers with 0.05 gets the
// answer the tool did.
func roundP(p float64) float64 {
	for digits := 4; digits <= 17; digits++ {
		v, err := strconv.ParseFloat(strconv.FormatFloat(p, 'g', digits, 64), 64)
		if err != nil {
			return p
		}
		if (v < significance) == (p < significance) {
			return v
		}
	}
	return p
}

// limit rounds an interval limit to 4 places without rounding it onto or
// across 0: a lower limit of 0.00003 stays positive (written with 4
// significant digits), so an interval that excludes 0 still does in the
// file. NaN is nil.
func limit(x float64) *float64 {
	p := finite(x)
	if p != nil && *p == 0 && x != 0 {
		v, err := strconv.ParseFloat(strconv.FormatFloat(x, 'g', 4, 64), 64)
		if err == nil {
			return &v
		}
	}
	return p
}

// testParts is the Tested block of a stats.ClusterDiff result, before the
// family is known.
func testParts(d stats.DiffResult) Tested {
	return Tested{PSignFlip: ptr(roundP(d.PSignFlip)), PFloor: ptr(roundP(d.PFloor))}
}
