package results

import (
	"cmp"
	"slices"
	"sort"
	"strconv"

	"github.com/impactbench/impactbench/internal/config"
	"github.com/impactbench/impactbench/internal/stats"
)

// ---- repeated samples ----

type groupKey struct{ id, metric string }

// sampleAgreement is present only when some scenario was sampled more than
// once. A group is one scenario id (and metric, for legacy multi-metric
// rows) across its samples' non-null verdicts.
func sampleAgreement(rows []row) *Agreement {
	// One small record per group (not a map of samples per group): at
	// 100,000 rows the maps were most of aggregate's memory.
	if len(rows) == 0 || !slices.ContainsFunc(rows, func(r row) bool { return r.Sample != rows[0].Sample }) {
		return nil // one sample per scenario: nothing to agree on
	}
	sg := groupSamples(rows)
	if !sg.multi {
		return nil
	}
	presentOf := make([]metricVerdicts, len(sg.keys))
	for i, k := range sg.keys {
		presentOf[i] = metricVerdicts{k.metric, sg.of[k].present}
	}
	// From here on, groups go in label order.
	slices.SortFunc(sg.keys, func(a, b groupKey) int { return cmp.Compare(sg.label(a), sg.label(b)) })

	ag := &Agreement{ByScenario: Keyed[ScenarioAgreement]{}, ByMetric: presentAgreementByMetric(presentOf)}
	groups, sizeCount := sg.scenarioAgreements(ag)
	share, _, total := stats.Unanimity(groups)
	ag.NGroups = total
	ag.UnanimousShare = finite(share)

	k := usualGroupSize(sizeCount)
	ag.PassK = PassK{K: k, ByMetric: Keyed[*float64]{}}
	if k == 0 {
		return ag
	}
	sg.passAtK(ag, k)
	return ag
}

// sampleGroup is one group's samples: the first one's number and the
// verdicts (passed, present) of all of them.
type sampleGroup struct {
	sample   int
	verdicts []bool // passed
	present  []bool
}

// sampleGroups are the rows' groups in their first row's order; multi says
// whether any group holds more than one sample, multiMetric which scenario
// ids come with more than one metric (legacy rows).
type sampleGroups struct {
	of          map[groupKey]*sampleGroup
	keys        []groupKey
	multi       bool
	multiMetric map[string]bool
}

// groupSamples gathers rows into their scenario (and metric) groups.
func groupSamples(rows []row) *sampleGroups {
	sg := &sampleGroups{of: map[groupKey]*sampleGroup{}, multiMetric: map[string]bool{}}
	metricOfID := map[string]string{}
	for _, r := range rows {
		k := groupKey{r.scenarioKey(), r.metricKey()}
		g := sg.of[k]
		if g == nil {
			g = &sampleGroup{sample: r.Sample}
			sg.of[k] = g
			sg.keys = append(sg.keys, k)
		} else if r.Sample != g.sample {
			sg.multi = true
		}
		if m, ok := metricOfID[k.id]; !ok {
			metricOfID[k.id] = k.metric
		} else if m != k.metric {
			sg.multiMetric[k.id] = true
		}
		if r.Passed != nil {
			g.verdicts = append(g.verdicts, *r.Passed)
		}
		if r.Present != nil {
			g.present = append(g.present, *r.Present)
		}
	}
	return sg
}

// label names group k in the report: its scenario id, with the metric
// only when the id comes with more than one.
func (sg *sampleGroups) label(k groupKey) string {
	if sg.multiMetric[k.id] {
		return k.id + "/" + k.metric
	}
	return k.id
}

// scenarioAgreements appends to ag one entry per group with verdicts, in
// key order, and returns those groups' verdicts and how many groups of
// each size (of two or more) there are.
func (sg *sampleGroups) scenarioAgreements(ag *Agreement) (groups [][]bool, sizeCount map[int]int) {
	sizeCount = map[int]int{}
	for _, k := range sg.keys {
		v := sg.of[k].verdicts
		if len(v) == 0 {
			continue
		}
		passed := 0
		for _, p := range v {
			if p {
				passed++
			}
		}
		sa := ScenarioAgreement{NSamples: len(v), NPassed: passed}
		if len(v) >= 2 {
			sa.Unanimous = ptr(passed == 0 || passed == len(v))
			sizeCount[len(v)]++
		}
		ag.ByScenario = append(ag.ByScenario, Entry[ScenarioAgreement]{sg.label(k), sa})
		groups = append(groups, v)
	}
	return groups, sizeCount
}

// usualGroupSize is k, the usual number of samples per scenario (ties →
// the larger), from the count of groups of each size.
func usualGroupSize(sizeCount map[int]int) int {
	k := 0
	for size, cnt := range sizeCount {
		if cnt > sizeCount[k] || (cnt == sizeCount[k] && size > k) {
			k = size
		}
	}
	return k
}

// passAtK sets ag's Fleiss κ, over the groups of exactly k verdicts (it
// needs the same number of ratings per subject), and its pass@k, overall
// and per metric, over the groups of k verdicts or more.
func (sg *sampleGroups) passAtK(ag *Agreement, k int) {
	var counts [][]int
	type acc struct {
		sum float64
		n   int
	}
	overall := acc{}
	perMetric := map[string]*acc{}
	for _, key := range sg.keys {
		v := sg.of[key].verdicts
		if len(v) < k {
			continue
		}
		c := 0
		for _, p := range v {
			if p {
				c++
			}
		}
		if len(v) == k {
			counts = append(counts, []int{c, k - c})
		}
		pk := stats.PassAtKAll(c, len(v), k)
		overall.sum += pk
		overall.n++
		if perMetric[key.metric] == nil {
			perMetric[key.metric] = &acc{}
		}
		perMetric[key.metric].sum += pk
		perMetric[key.metric].n++
	}
	if len(counts) > 0 {
		if kappa, err := stats.FleissKappa(counts); err == nil {
			ag.FleissKappa = finite(kappa)
		}
	}
	if overall.n > 0 {
		ag.PassK.Overall = ptr(round4(overall.sum / float64(overall.n)))
	}
	mids := make([]string, 0, len(perMetric))
	for m := range perMetric {
		mids = append(mids, m)
	}
	sort.Strings(mids)
	for _, m := range mids {
		a := perMetric[m]
		ag.PassK.ByMetric = append(ag.PassK.ByMetric, Entry[*float64]{m, ptr(round4(a.sum / float64(a.n)))})
	}
}

// metricVerdicts is one unit's present verdicts (samples of a scenario,
// or judges of a row) with its metric.
type metricVerdicts struct {
	metric  string
	present []bool
}

// presentAgreementByMetric measures agreement on present per metric:
// Krippendorff's α over every unit with two or more verdicts, and Fleiss' κ
// over the units with the metric's usual number of verdicts (ties → the
// larger), since κ needs the same number per unit.
func presentAgreementByMetric(units []metricVerdicts) Keyed[PresentAgreement] {
	byMetric := map[string][][]bool{}
	for _, u := range units {
		byMetric[u.metric] = append(byMetric[u.metric], u.present)
	}
	mids := make([]string, 0, len(byMetric))
	for m := range byMetric {
		mids = append(mids, m)
	}
	sort.Strings(mids)
	out := Keyed[PresentAgreement]{}
	for _, m := range mids {
		out = append(out, Entry[PresentAgreement]{m, presentAgreement(byMetric[m])})
	}
	return out
}

func presentAgreement(units [][]bool) PresentAgreement {
	var pa PresentAgreement
	coded := make([][]int, 0, len(units))
	sizeCount := map[int]int{}
	for _, u := range units {
		if len(u) < 2 {
			continue
		}
		pa.NUnits++
		sizeCount[len(u)]++
		coded = append(coded, boolsToInts(u))
	}
	alpha, n := stats.KrippendorffAlpha(coded)
	pa.Alpha, pa.NValues = finite(alpha), n
	k := 0
	for size, cnt := range sizeCount {
		if cnt > sizeCount[k] || (cnt == sizeCount[k] && size > k) {
			k = size
		}
	}
	var counts [][]int
	for _, u := range coded {
		if len(u) != k {
			continue
		}
		yes := 0
		for _, v := range u {
			yes += v
		}
		counts = append(counts, []int{yes, k - yes})
	}
	pa.NKappaUnits = len(counts)
	if len(counts) > 0 {
		if kappa, err := stats.FleissKappa(counts); err == nil {
			pa.FleissKappa = finite(kappa)
		}
	}
	return pa
}

func boolsToInts(bs []bool) []int {
	out := make([]int, len(bs))
	for i, b := range bs {
		out[i] = b2i(b)
	}
	return out
}

// ---- judge panels ----

// panelRow is one row's panel: each judge's present verdict (nil: no
// verdict), under the judge's name (a judge seated twice is "name#2").
type panelRow struct {
	row   row
	names []string
	votes []*bool
}

// panelRows lists the rows scored by a panel of two or more judges, and
// every judge name in order of appearance.
func panelRows(rows []row) (out []panelRow, names []string) {
	for _, r := range rows {
		if len(r.Judges) < 2 {
			continue
		}
		pr := panelRow{row: r}
		seen := map[string]int{}
		for _, j := range r.Judges {
			name := j.Judge
			// The same judge twice in a panel (repeated passes) is two raters.
			if seen[j.Judge]++; seen[j.Judge] > 1 {
				name = j.Judge + "#" + strconv.Itoa(seen[j.Judge])
			}
			if !slices.Contains(names, name) {
				names = append(names, name)
			}
			pr.names = append(pr.names, name)
			pr.votes = append(pr.votes, j.Present)
		}
		out = append(out, pr)
	}
	return out, names
}

// judgeAgreement is present only when rows carry a panel of ≥2 judges.
// κ and raw agreement use the rows on which every panel member returned a
// verdict (as before); α uses every row with two or more verdicts; the
// panel rates use every verdict.
func judgeAgreement(rows []row, conf float64) *JudgeAgreement {
	prs, names := panelRows(rows)
	if len(prs) == 0 {
		return nil
	}
	items := completeVotes(prs, names)
	method := "fleiss"
	if len(names) == 2 {
		method = "cohen"
	}
	ja := &JudgeAgreement{Judges: names, KappaMethod: method, N: len(items), ByMetric: Keyed[JudgeMetric]{}}
	ja.RawAgreement, ja.Kappa = judgeKappa(items, names)
	byMetric := map[string][]judgedRow{}
	for _, it := range items {
		byMetric[it.metric] = append(byMetric[it.metric], it)
	}
	alphaUnits := map[string][][]int{}
	var allUnits [][]int
	for _, pr := range prs {
		var u []int
		for _, v := range pr.votes {
			if v != nil {
				u = append(u, b2i(*v))
			}
		}
		m := pr.row.metricKey()
		alphaUnits[m] = append(alphaUnits[m], u)
		allUnits = append(allUnits, u)
	}
	alpha, n := stats.KrippendorffAlpha(allUnits)
	ja.Alpha, ja.NAlpha = finite(alpha), n
	mids := make([]string, 0, len(alphaUnits))
	for m := range alphaUnits {
		mids = append(mids, m)
	}
	sort.Strings(mids)
	for _, m := range mids {
		raw, kappa := judgeKappa(byMetric[m], names)
		a, n := stats.KrippendorffAlpha(alphaUnits[m])
		ja.ByMetric = append(ja.ByMetric, Entry[JudgeMetric]{m, JudgeMetric{
			RawAgreement: raw, Kappa: kappa, N: len(byMetric[m]), Alpha: finite(a), NAlpha: n}})
	}
	ja.Panel = panelRates(prs, names, conf)
	return ja
}

// judgedRow is one panel row's metric and its verdict by judge name.
type judgedRow struct {
	metric string
	votes  map[string]bool
}

// completeVotes keeps the panel rows on which every judge of the whole
// panel (names) returned a verdict: the ones κ and raw agreement use.
func completeVotes(prs []panelRow, names []string) []judgedRow {
	var items []judgedRow
	for _, pr := range prs {
		votes := map[string]bool{}
		complete := true
		for i, v := range pr.votes {
			if v == nil {
				complete = false
				continue
			}
			votes[pr.names[i]] = *v
		}
		// Keep rows where every judge of the whole panel voted.
		if complete && len(votes) == len(names) {
			items = append(items, judgedRow{pr.row.metricKey(), votes})
		}
	}
	return items
}

// judgeKappa is the raw agreement and κ of the judges (names) over its:
// Cohen's κ for two judges, Fleiss' κ for more; nil, nil without rows.
func judgeKappa(its []judgedRow, names []string) (raw, kappa *float64) {
	if len(its) == 0 {
		return nil, nil
	}
	if len(names) == 2 {
		a := make([]int, len(its))
		b := make([]int, len(its))
		for i, it := range its {
			a[i], b[i] = b2i(it.votes[names[0]]), b2i(it.votes[names[1]])
		}
		if x, err := stats.RawAgreement(a, b); err == nil {
			raw = finite(x)
		}
		if x, err := stats.CohenKappa(a, b); err == nil {
			kappa = finite(x)
		}
		return raw, kappa
	}
	counts := make([][]int, len(its))
	agree := 0
	for i, it := range its {
		yes := 0
		for _, v := range it.votes {
			yes += b2i(v)
		}
		counts[i] = []int{yes, len(names) - yes}
		if yes == 0 || yes == len(names) {
			agree++
		}
	}
	raw = ptr(round4(float64(agree) / float64(len(its))))
	if x, err := stats.FleissKappa(counts); err == nil {
		kappa = finite(x)
	}
	return raw, kappa
}

// panelRates counts every judge verdict as one observation, mapped
// through the metric type to pass/fail, clustered by base scenario: the
// panel rate is the share of all verdicts that mean "pass", so a 1–1 split
// counts half and no row is dropped; per-judge rates use only that judge's
// verdicts. Rows of a metric with unknown type have no pass/fail and are
// left out of the rates (but counted in n_rows).
func panelRates(prs []panelRow, names []string, conf float64) *Panel {
	p := &Panel{NRows: len(prs), ByJudge: Keyed[JudgeTrackRate]{}}
	panelSets := map[config.MetricType]*clusterSet{config.Positive: newClusterSet(), config.Negative: newClusterSet()}
	judgeSets := map[string]map[config.MetricType]*clusterSet{}
	for _, name := range names {
		judgeSets[name] = map[config.MetricType]*clusterSet{config.Positive: newClusterSet(), config.Negative: newClusterSet()}
	}
	for _, pr := range prs {
		yes, no := 0, 0
		for i, v := range pr.votes {
			if v == nil {
				continue
			}
			if *v {
				yes++
			} else {
				no++
			}
			typ := pr.row.typ
			if typ != config.Positive && typ != config.Negative {
				continue
			}
			pass := *v == (typ == config.Positive)
			panelSets[typ].add(keyOf(pr.row), pass)
			judgeSets[pr.names[i]][typ].add(keyOf(pr.row), pass)
		}
		if yes > 0 && no > 0 {
			p.NSplit++
		}
		if pr.row.Passed == nil && yes+no > 0 {
			p.NNoMajority++
		}
	}
	p.Positive = clusterCIOf(panelSets[config.Positive], conf)
	p.Negative = clusterCIOf(panelSets[config.Negative], conf)
	for _, name := range names {
		p.ByJudge = append(p.ByJudge, Entry[JudgeTrackRate]{name, JudgeTrackRate{
			Positive: clusterCIOf(judgeSets[name][config.Positive], conf),
			Negative: clusterCIOf(judgeSets[name][config.Negative], conf),
		}})
	}
	return p
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}
