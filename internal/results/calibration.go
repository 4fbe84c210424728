package results

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"

	"github.com/impactbench/impactbench/internal/artifacts"
	"github.com/impactbench/impactbench/internal/labels"
	"github.com/impactbench/impactbench/internal/stats"
)

// Judge calibration against people, and pass rates corrected for the
// judge's errors.
//
// Every target's pass rate on a metric is corrected with that target's own
// labels only: its labelled rows post-stratified by judge verdict, i.e.
// weighted to the target's own mix of verdicts (Rogan–Gladen with those
// weights is the double-sampling estimator FOR + p·(PPV − FOR) of the
// target's rows). A judge's error can differ by target (a model that
// hedges, another that answers tersely), and no test on a few labels sees
// it reliably: pooling every target's labels then biases the deviant
// target's rate and moves the others' (issue 35's simulation: 64 %
// coverage at 100 labels). A correction from the target's own labels has
// no such assumption to break; what it costs is labels per target, which
// the labelling plan asks for.
//
// Each judge is still measured per metric on every target's labels
// together (judge_calibration.by_metric), post-stratified by target ×
// verdict so that labels gathered one model at a time are weighted as they
// were drawn; a permutation test says whether its error differs by target.
// That block describes the judge; it corrects nothing.

// MinLabelsPerClass is the fewest labelled rows of each judge verdict
// (present, absent) on a metric — every target's together — below which a
// judge's calibration on the metric is flagged as thinly labelled.
const MinLabelsPerClass = 10

// MinTargetLabelsPerClass is the fewest labelled rows of each judge verdict
// of one target on a metric (or every such row, when it has fewer) before
// that target's rate is corrected: below it the interval spans most of 0–1
// (the simulation in docs/statistics.md), and one label moves the estimate
// by 20 points or more.
const MinTargetLabelsPerClass = 5

// calibrationReps is the number of bootstrap replicates behind κ;
// heterogeneityReps the permutations behind the by-target test.
const (
	calibrationReps   = 2000
	heterogeneityReps = 1999
)

// Judge roles in judge_calibration.
const (
	roleMain      = "main"
	rolePanel     = "panel member"
	roleAlternate = "alternate"
)

// Scopes of a calibration; corrections are always at scopeTarget.
const (
	scopeTargets = "all targets"
	scopeTarget  = "target"
	scopeMetrics = "all metrics"
)

// weighting documents how labelled rows are weighted.
const weighting = "each labelled row stands for the rows of its target with the same main verdict (present, absent, none) on its metric: weight = those rows / labelled ones (post-stratification by target × verdict), exact for random samples within each target × verdict however the labels were spread over targets (the queue's pooled draw, or one model at a time); rows of a target × verdict with no label are not represented. Sensitivity, specificity, κ and agreement are weighted; hits/n beside them are the raw counts"

// pooling documents the pooling.
const pooling = "by_metric: per judge × metric, the labels of every target together (post-stratified by target × verdict) — a description of the judge; by_target tests whether its error differs by target (Holm over the judge's metrics). Corrected rates never use it: each target × metric is corrected with the target's own labels (this_target; 5 of each verdict, or all, needed), so a judge that errs differently on one model cannot bias that model's rate or move the others'"

// correctedLeaderboardMethod says how the corrected leaderboard is made.
const correctedLeaderboardMethod = "mean of the corrected track rates; interval: mean of their limits (conservative)"

// stratum is a row's main verdict: 0 absent, 1 present, 2 none.
func stratum(p *bool) int {
	switch {
	case p == nil:
		return 2
	case *p:
		return 1
	}
	return 0
}

// convKey is a row's conversation and metric, as labels name them.
func (r row) convKey() labels.Key {
	id := r.ConvID
	if id == "" {
		id = artifacts.ConvID(r.ID, r.TargetModel, r.Sample)
	}
	return labels.Key{ConvID: id, MetricID: r.MetricID}
}

// targetOfConv is the target part of a conv_id (<scenario>__<target>__s<n>).
func targetOfConv(id string) string {
	parts := strings.Split(id, "__")
	if len(parts) < 3 {
		return ""
	}
	return strings.Join(parts[1:len(parts)-1], "__")
}

// verdictKey matches a row across score files (alternate judges, repeats).
type verdictKey struct {
	id, metric string
	sample     int
}

func vkOf(s artifacts.Score) verdictKey { return verdictKey{s.ID, s.MetricID, s.Sample} }

// targetRows is one target's rows, as aggregated.
type targetRows struct {
	name string
	rows []row
}

// labRow is one labelled row with a human majority and a score row.
type labRow struct {
	t, idx int // target, row within it
	human  bool
}

// strataCounts are rows per main-verdict stratum (absent, present, none).
type strataCounts map[string]*[3]int

func (sc strataCounts) add(metric string, s int) {
	if sc[metric] == nil {
		sc[metric] = &[3]int{}
	}
	sc[metric][s]++
}

func (sc strataCounts) get(metric string, s int) int {
	if c := sc[metric]; c != nil {
		return c[s]
	}
	return 0
}

// labelPool is every labelled row of the benchmark, with the counts the
// weights and sufficiency rules need.
type labelPool struct {
	targets []targetRows
	labs    []labRow
	metrics []string // with labelled rows, sorted
	// study and labelled: rows per metric and stratum over every target;
	// studyOf and labelledOf: the same per target.
	study, labelled     strataCounts
	studyOf, labelledOf []strataCounts
	// deff: per metric, the design effect of the main verdict's share over
	// base scenarios (every target); deffOf per target.
	deff      map[string]float64
	deffOf    []map[string]float64
	summaries []LabelSummary // per target
	all       LabelSummary
	agreement Keyed[LabelerAgreement]
	mainJudge string
	opts      Options
	in        *CalibrationInput
}

// newLabelPool matches the labels to the targets' rows; nil without labels.
func newLabelPool(targets []targetRows, in *CalibrationInput, opts Options) *labelPool {
	if in == nil || len(in.Labels) == 0 {
		return nil
	}
	p := &labelPool{targets: targets, in: in, opts: opts, study: strataCounts{}, labelled: strataCounts{}, deff: map[string]float64{}}
	rowOf := map[labels.Key]labRow{}
	for ti, tr := range targets {
		for i, r := range tr.rows {
			rowOf[r.convKey()] = labRow{t: ti, idx: i}
		}
	}
	// A label's target: its row's, else the target named in its conv_id.
	targetOf := func(k labels.Key) int {
		if a, ok := rowOf[k]; ok {
			return a.t
		}
		name := targetOfConv(k.ConvID)
		return slices.IndexFunc(targets, func(tr targetRows) bool { return tr.name == name })
	}
	blind := p.summarise(in, targetOf)
	cons := labels.Consensuses(blind)
	p.consensus(cons, rowOf, targetOf)
	p.agreement = labelerAgreement(cons)
	p.countStrata()
	var all []row
	for _, tr := range targets {
		if len(tr.rows) > 0 {
			all = tr.rows
			if mainJudgeName(all, in) == "panel" {
				break
			}
		}
	}
	p.mainJudge = mainJudgeName(all, in)
	return p
}

// BlindLabels drops the labels given after the judges' verdict was shown
// (labels.Label.AfterReveal) and counts them: a person who saw the verdict
// is no longer an independent check on it.
func BlindLabels(ls []labels.Label) ([]labels.Label, int) {
	late := 0
	for _, l := range ls {
		if l.AfterReveal {
			late++
		}
	}
	if late == 0 {
		return ls, 0
	}
	out := make([]labels.Label, 0, len(ls)-late)
	for _, l := range ls {
		if !l.AfterReveal {
			out = append(out, l)
		}
	}
	return out, late
}

// CurrentLabels drops the labels given on a transcript that is no longer
// the conversation's (labels.Label.Stale: it was run again since) and
// counts them. A person's earlier lines on the same row go with their
// stale one: they are older still, and keeping them would bring back a
// verdict the person had replaced.
func CurrentLabels(ls []labels.Label) ([]labels.Label, int) {
	drop := staleLines(ls)
	if drop == nil {
		return ls, 0
	}
	out := make([]labels.Label, 0, len(ls))
	for i, l := range ls {
		if !drop[i] {
			out = append(out, l)
		}
	}
	return out, len(ls) - len(out)
}

// staleLines marks the lines CurrentLabels drops (nil when none).
func staleLines(ls []labels.Label) []bool {
	type who struct {
		k    labels.Key
		name string
	}
	lastStale := map[who]int{} // the person's last stale line on the row
	for i, l := range ls {
		if l.Stale {
			lastStale[who{l.Key(), l.Labeler}] = i
		}
	}
	if len(lastStale) == 0 {
		return nil
	}
	drop := make([]bool, len(ls))
	for i, l := range ls {
		if j, ok := lastStale[who{l.Key(), l.Labeler}]; ok && i <= j {
			drop[i] = true
		}
	}
	return drop
}

// summarise counts label lines and labelers per target and over all, and
// returns the labels calibration counts (after-reveal ones left out unless
// the input asks for them).
func (p *labelPool) summarise(in *CalibrationInput, targetOf func(labels.Key) int) []labels.Label {
	p.summaries = make([]LabelSummary, len(p.targets))
	people := make([]map[string]bool, len(p.targets))
	allPeople := map[string]bool{}
	drop := staleLines(in.Labels)
	counted, stale := CurrentLabels(in.Labels)
	late := 0
	if !in.IncludeAfterReveal {
		counted, late = BlindLabels(counted)
	}
	for i, l := range in.Labels {
		allPeople[l.Labeler] = true
		ti := targetOf(l.Key())
		if ti < 0 {
			continue
		}
		p.summaries[ti].NLines++
		switch {
		case drop != nil && drop[i]:
			p.summaries[ti].NStale++
		case l.AfterReveal && !in.IncludeAfterReveal:
			p.summaries[ti].NAfterReveal++
		}
		if people[ti] == nil {
			people[ti] = map[string]bool{}
		}
		people[ti][l.Labeler] = true
	}
	p.all = LabelSummary{NLines: len(in.Labels), NLabelers: len(allPeople), NAfterReveal: late, NStale: stale}
	for ti := range p.targets {
		p.summaries[ti].NLabelers = len(people[ti])
	}
	return counted
}

// consensus sorts the rows' human verdicts into labelled rows, ties and
// rows not judged yet.
func (p *labelPool) consensus(cons []labels.Consensus, rowOf map[labels.Key]labRow, targetOf func(labels.Key) int) {
	p.all.NRows = len(cons)
	for _, c := range cons {
		a, ok := rowOf[c.Key]
		ti := targetOf(c.Key)
		if ti >= 0 {
			p.summaries[ti].NRows++
		}
		switch {
		case !ok:
			p.all.NUnjudged++
			if ti >= 0 {
				p.summaries[ti].NUnjudged++
			}
		case c.Present == nil:
			p.all.NTies++
			p.summaries[ti].NTies++
		default:
			p.labs = append(p.labs, labRow{a.t, a.idx, *c.Present})
		}
	}
}

// countStrata counts rows and labelled rows per metric × verdict, over all
// targets and per target, and the design effects of the verdict shares.
func (p *labelPool) countStrata() {
	n := len(p.targets)
	p.studyOf, p.labelledOf, p.deffOf = make([]strataCounts, n), make([]strataCounts, n), make([]map[string]float64, n)
	byMetric := map[string]*clusterSet{}
	for ti, tr := range p.targets {
		p.studyOf[ti], p.labelledOf[ti], p.deffOf[ti] = strataCounts{}, strataCounts{}, map[string]float64{}
		own := map[string]*clusterSet{}
		for _, r := range tr.rows {
			m, s := r.metricKey(), stratum(r.Present)
			p.study.add(m, s)
			p.studyOf[ti].add(m, s)
			if r.Present == nil {
				continue
			}
			for _, cs := range []map[string]*clusterSet{byMetric, own} {
				if cs[m] == nil {
					cs[m] = newClusterSet()
				}
			}
			k := keyOf(r)
			byMetric[m].add(clusterKey{metric: m, base: tr.name + "\x00" + k.base}, *r.Present)
			own[m].add(k, *r.Present)
		}
		for m, cs := range own {
			p.deffOf[ti][m] = designEffect(cs)
		}
	}
	for m, cs := range byMetric {
		p.deff[m] = designEffect(cs)
	}
	for _, lb := range p.labs {
		r := p.row(lb)
		m, s := r.metricKey(), stratum(r.Present)
		p.labelled.add(m, s)
		p.labelledOf[lb.t].add(m, s)
		if !slices.Contains(p.metrics, m) {
			p.metrics = append(p.metrics, m)
		}
	}
	sort.Strings(p.metrics)
}

func (p *labelPool) row(lb labRow) row { return p.targets[lb.t].rows[lb.idx] }

// designEffect is the design effect of a share over clusters (1 when it
// cannot be estimated).
func designEffect(cs *clusterSet) float64 {
	r := stats.ClusterRate(cs.sums(func(clusterKey) bool { return true }), 0.95)
	if math.IsNaN(r.DesignEffect) || r.DesignEffect < 1 {
		return 1
	}
	return r.DesignEffect
}

// repsOr is n when set, else def.
func repsOr(n, def int) int {
	if n > 0 {
		return n
	}
	return def
}

// judge is one verdict source on every target's rows.
type judge struct {
	name, role string
	verdict    func(t, i int) *bool
}

// judges lists the main verdict, the main panel's members and the
// alternate judges, over every target.
func (p *labelPool) judges() []judge {
	out := []judge{{p.mainJudge, roleMain, func(t, i int) *bool { return p.targets[t].rows[i].Present }}}
	// Panel members: per target, per row, each member's verdict by name.
	var names []string
	members := make([]map[int]map[string]*bool, len(p.targets))
	for ti, tr := range p.targets {
		prs, ns := panelRows(tr.rows)
		for _, n := range ns {
			if !slices.Contains(names, n) {
				names = append(names, n)
			}
		}
		at := map[verdictKey]int{}
		for i, r := range tr.rows {
			at[r.key()] = i
		}
		members[ti] = map[int]map[string]*bool{}
		for _, pr := range prs {
			m := map[string]*bool{}
			for k, n := range pr.names {
				m[n] = pr.votes[k]
			}
			members[ti][at[pr.row.key()]] = m
		}
	}
	for _, n := range names {
		out = append(out, judge{n, rolePanel, func(t, i int) *bool { return members[t][i][n] }})
	}
	// Alternates: judge name → target → verdicts.
	var alts []string
	altOf := map[string][]map[verdictKey]*bool{}
	for _, a := range p.in.Alternates {
		ti := slices.IndexFunc(p.targets, func(tr targetRows) bool { return tr.name == a.Target })
		if ti < 0 {
			continue
		}
		if altOf[a.Judge] == nil {
			altOf[a.Judge] = make([]map[verdictKey]*bool, len(p.targets))
			alts = append(alts, a.Judge)
		}
		vs := map[verdictKey]*bool{}
		for _, s := range a.Scores {
			vs[vkOf(s)] = s.Present
		}
		altOf[a.Judge][ti] = vs
	}
	for _, n := range alts {
		byT := altOf[n]
		out = append(out, judge{n, roleAlternate, func(t, i int) *bool {
			if byT[t] == nil {
				return nil
			}
			return byT[t][p.targets[t].rows[i].key()]
		}})
	}
	return out
}

// calibSet is the labelled rows one calibration uses.
type calibSet struct {
	items   []stats.CalibItem
	targets []int // target of each item
	deff    float64
}

// itemsOf collects judge j's labelled rows accepted by keep, each weighted
// to its target × verdict stratum (weight) and stratified by stratumKey.
func (p *labelPool) itemsOf(j judge, keep func(labRow) bool, stratumKey func(t int, metric string, s int) int) calibSet {
	var out calibSet
	for _, lb := range p.labs {
		if !keep(lb) {
			continue
		}
		v := j.verdict(lb.t, lb.idx)
		if v == nil {
			continue
		}
		r := p.row(lb)
		m, s := r.metricKey(), stratum(r.Present)
		out.items = append(out.items, stats.CalibItem{Human: lb.human, Judge: *v, Weight: p.weight(lb.t, m, s), Stratum: stratumKey(lb.t, m, s)})
		out.targets = append(out.targets, lb.t)
	}
	return out
}

// weight is a labelled row's design weight: the rows of its target × verdict
// stratum over the labelled ones. Weighting by verdict alone over every
// target would be right only for labels drawn at random across targets; a
// team that labels one model at a time draws them per target, and the
// verdict-only weights then gave the wrong target's errors the weight
// (issue 35: 88 % coverage of specificity). Per target × verdict is right
// for both draws.
func (p *labelPool) weight(t int, m string, s int) float64 {
	if l := p.labelledOf[t].get(m, s); l > 0 {
		return float64(p.studyOf[t].get(m, s)) / float64(l)
	}
	return 0
}

// calib is one judge's calibration on one set of labels, kept with the
// raw stats the corrections need.
type calib struct {
	mc  MetricCalibration
	raw stats.Calibration
	// enough: labelled rows of each main verdict suffice for a correction
	// at this scope (only meaningful for the main judge).
	enough bool
}

func (p *labelPool) calibrate(set calibSet, scope, judgeName, key string, enough bool) calib {
	seed := testSeed(p.opts.Seed, "calibration", scope, judgeName, key)
	raw := stats.Calibrate(set.items, stats.CalibOptions{Conf: p.opts.Conf, Reps: repsOr(p.opts.calibReps, calibrationReps), Seed: seed, StudyDeff: set.deff})
	mc := metricCalibration(set.items, raw)
	mc.Scope = scope
	ts := map[int]bool{}
	for _, t := range set.targets {
		ts[t] = true
	}
	mc.NTargets = len(ts)
	return calib{mc: mc, raw: raw, enough: enough}
}

// enoughLabels: need labelled rows of each main verdict (or every row of a
// verdict the rows have fewer of), given per-verdict counts.
func enoughLabels(need int, labelled, study func(s int) int) bool {
	for s := range 2 {
		l, n := labelled(s), study(s)
		if n == 0 {
			continue
		}
		if !(l >= need || (l == n && l > 0)) {
			return false
		}
	}
	return labelled(0)+labelled(1) > 0
}

// metricCalibration turns stats.Calibrate into results.json's entry.
func metricCalibration(items []stats.CalibItem, c stats.Calibration) MetricCalibration {
	mc := MetricCalibration{N: len(items), NAgree: c.AgreeHits}
	for _, it := range items {
		if it.Human {
			mc.NHumanPresent++
		} else {
			mc.NHumanAbsent++
		}
		if it.Judge {
			mc.NJudgePresent++
		} else {
			mc.NJudgeAbsent++
		}
	}
	share := func(s stats.Share, none string) Statistic {
		st := Statistic{N: s.N, Hits: ptr(s.Hits), Weighted: true, Method: stats.MethodCalibrationRatio}
		if math.IsNaN(s.Estimate) {
			st.Hits, st.Reason = nil, none
			return st
		}
		st.Estimate, st.Low, st.High = finite(s.Estimate), finite(s.Lo), finite(s.Hi)
		return st
	}
	mc.Sensitivity = share(c.Sensitivity, "no labelled row the humans call present")
	mc.Specificity = share(c.Specificity, "no labelled row the humans call absent")
	mc.Kappa = Statistic{Estimate: finite(c.Kappa), Low: finite(c.KappaLo), High: finite(c.KappaHi), N: c.KappaN, Weighted: true,
		Method: stats.MethodKappaBootstrap, Reason: c.KappaWhy}
	if mc.Kappa.Estimate != nil {
		mc.Kappa.Reason = ""
	}
	mc.Youden = Statistic{Estimate: finite(c.Youden), Low: finite(c.YoudenLo), High: finite(c.YoudenHi), N: len(items), Weighted: true,
		Method: stats.MethodYoudenMOVER}
	if mc.Youden.Estimate == nil {
		mc.Youden.Reason = "needs labelled rows of both human answers"
	}
	mc.Agreement = finite(c.Agreement)
	mc.YoudenLower = finite(c.YoudenLower)
	if !math.IsNaN(c.Youden) {
		mc.Informative = ptr(c.YoudenLower > 0)
	}
	return mc
}

// warn fills mc.Warning: too few labels (need of each verdict; for a
// target's own calibration the correction's rule, else a recommendation),
// one human answer, an uninformative judge.
func (mc *MetricCalibration) warn(enough bool, need, nPresentVerdict, nAbsentVerdict int) {
	var w []string
	if !enough {
		what := "recommended for the judge's calibration on this metric"
		if mc.Scope == scopeTarget {
			what = "needed for this target's corrected rate"
		}
		w = append(w, fmt.Sprintf("thinly labelled: %d rows the judge called present and %d it called absent are labelled; %d of each (or all of them) %s", nPresentVerdict, nAbsentVerdict, need, what))
	}
	if mc.N > 0 && (mc.NHumanPresent == 0 || mc.NHumanAbsent == 0) {
		w = append(w, fmt.Sprintf("the humans gave one answer only (%d present, %d absent): sensitivity or specificity, and κ, are undefined", mc.NHumanPresent, mc.NHumanAbsent))
	}
	if mc.Informative != nil && !*mc.Informative {
		w = append(w, "uninformative: the labels do not show sensitivity + specificity > 1 (Youden's J's one-sided 95 % lower limit is not above 0)")
	}
	mc.Warning = strings.Join(w, "; ")
}

// alphaNote explains an α that reads low beside a high raw agreement: when
// nearly every label gives one answer, the agreement expected by chance is
// already high and α (which measures agreement beyond it) is near 0 or
// undefined — the "prevalence paradox" — so 0.00 beside "6 of 7 unanimous"
// is not a contradiction. "" when there is nothing to explain.
func alphaNote(units [][]int, la LabelerAgreement) string {
	var yes, all int
	for _, u := range units {
		for _, v := range u {
			all++
			yes += v
		}
	}
	if all == 0 || la.NRows == 0 {
		return ""
	}
	q := float64(yes) / float64(all)
	chance := q*q + (1-q)*(1-q)
	word, n := "absent", all-yes
	if yes > all-yes {
		word, n = "present", yes
	}
	unanimous := float64(la.NUnanimous) / float64(la.NRows)
	switch {
	case la.Alpha == nil:
		return fmt.Sprintf("α is undefined: all %d labels on rows labelled twice say %s, so there is no disagreement to measure beyond chance; %d of %d rows are unanimous", all, word, la.NUnanimous, la.NRows)
	case *la.Alpha < 0.4 && unanimous >= 0.75 && chance >= 0.7:
		return fmt.Sprintf("α is %.2f although %d of %d rows are unanimous: %d of the %d labels say %s, so %.0f %% agreement is expected by chance alone and α counts only agreement beyond it (the prevalence paradox); with so few disagreements (%d row(s)) α is unstable — read the raw agreement, and label rows where the behaviour is likelier to measure agreement where it matters",
			*la.Alpha, la.NUnanimous, la.NRows, n, all, word, 100*chance, la.NRows-la.NUnanimous)
	}
	return ""
}

// labelerAgreement is, per metric, agreement between people on rows with
// two or more labelers (each person's latest label).
func labelerAgreement(cons []labels.Consensus) Keyed[LabelerAgreement] {
	units := map[string][][]int{}
	for _, c := range cons {
		if len(c.Votes) < 2 {
			continue
		}
		units[c.Key.MetricID] = append(units[c.Key.MetricID], boolsToInts(c.Votes))
	}
	ms := make([]string, 0, len(units))
	for m := range units {
		ms = append(ms, m)
	}
	sort.Strings(ms)
	out := Keyed[LabelerAgreement]{}
	for _, m := range ms {
		la := LabelerAgreement{NRows: len(units[m])}
		for _, u := range units[m] {
			if !slices.Contains(u, 1-u[0]) {
				la.NUnanimous++
			}
		}
		a, n := stats.KrippendorffAlpha(units[m])
		la.Alpha, la.NValues = finite(a), n
		la.Note = alphaNote(units[m], la)
		out = append(out, Entry[LabelerAgreement]{m, la})
	}
	return out
}
