package results

import (
	"errors"
	"fmt"
	"slices"
	"sort"

	"github.com/impactbench/impactbench/internal/artifacts"
	"github.com/impactbench/impactbench/internal/config"
	"github.com/impactbench/impactbench/internal/stats"
)

// Input is everything Aggregate needs, already read from disk.
type Input struct {
	// Metrics are benchmark.yaml's metrics; only ID and Type are used
	// (a duplicated id: the last one wins, like upstream's dict).
	Metrics []config.Metric
	// Scores of every target in upstream order: run directories sorted by
	// their scores.json path (layout.ListRunDirs), rows in file order.
	Scores []artifacts.Score
	// Rows, instead of Scores, are the same rows reduced to what the
	// statistics read: at 100,000 rows the full ones would be most of a
	// run's peak memory. Set one of the two. Aggregate takes Rows over: it
	// fills in and reorders them.
	Rows []ScoreRow
	// RunDirs[i] is the run directory name of row i: the target_model
	// of rows that lack one. May be nil when every row names its target.
	RunDirs []string
	// Scenarios (scenarios.json) supply demographics for the additions;
	// may be nil.
	Scenarios []artifacts.Scenario
	// Demographics, when Scenarios is nil, supplies the same in a tenth of
	// the memory: each scenario's id and demographic, in file order.
	Demographics []ScenarioDemographic
	// Calibration, when set, adds judge_calibration and corrected rates
	// (with labels) and judge_consistency (with repeats).
	Calibration *CalibrationInput
	// Human are the rows of conversations people played against the
	// targets (runs/<target>/human/scores.json), each naming its target:
	// they add human_comparison and count in no other figure.
	Human []ScoreRow
}

// ScenarioDemographic is the part of a scenario the additions use.
type ScenarioDemographic struct {
	ID          string
	Demographic artifacts.Demographic
}

// Options tune the additions; the upstream fields do not depend on them.
type Options struct {
	// Seed seeds the cluster bootstrap (recorded in positive_ci/negative_ci).
	Seed uint64
	// BootstrapReps is the number of bootstrap replicates (0: 2000).
	BootstrapReps int
	// Conf is the confidence level of every interval (0: 0.95).
	Conf float64
	// UpstreamOnly writes exactly upstream's fields and nothing else.
	UpstreamOnly bool
	// ValidOnly computes everything on rows whose conversation passed the
	// landmark-adherence check (valid == true); unchecked rows are left out.
	ValidOnly bool
	// Fingerprint, when set, is recorded per model as "fingerprint" so two
	// results files can be checked for comparability.
	Fingerprint Fingerprint
	// calibReps, when set, replaces the replicates behind κ's bootstrap and
	// the by-target permutation test: the simulations, which check the
	// corrected rates (which use neither), run thousands of studies.
	calibReps int
}

// DefaultBootstrapReps and DefaultConf apply when Options leaves them zero.
const (
	DefaultBootstrapReps = 2000
	DefaultConf          = 0.95
)

// unknownKey is upstream's group name for rows without a metric_id.
const unknownKey = "unknown"

// ScoreRow is the part of a scores.json row the statistics read.
type ScoreRow struct {
	ID, MetricID, TargetModel string
	// Judge names a single judge; Judges is a panel's verdicts (only Judge,
	// Present and Unverified are read).
	Judge  string
	ConvID string
	Judges []artifacts.JudgeVerdict
	Sample int
	// Present, Passed, Valid and Unverified are as on artifacts.Score.
	Present, Passed, Valid, Unverified *bool
	// UserModel is the simulated user's model ("" when the row does not say).
	UserModel string
	// Transcript is the transcript's hash as a number (0: not recorded):
	// samples of a scenario with equal ones are the same conversation.
	Transcript uint64
	// Invalid is the row's failure kinds (artifacts.Score.Invalid), one
	// bit per kind of artifacts.FailureKinds; unknownKind for any other.
	Invalid uint16
	// BreakTurn is the first assistant turn (1-based) the row's cited
	// evidence was found in, 0 when none was.
	BreakTurn uint16
	// Refused is the number of the target's replies in the row's
	// conversation that its provider stopped for safety
	// (artifacts.Score.Refused; 0: none, or not recorded).
	Refused uint16
	// AuditSample is the row's audit stratum (one byte: stratumNone when
	// every conversation was audited, else artifacts.AuditSample*'s index
	// in auditStrata plus one).
	AuditSample uint8
	// Repaired: reading the row's verdict took a repair (its _repairs, or
	// a panel judge's, is not empty).
	Repaired bool
	// typ is the metric's type, set by Aggregate ("" when the metric id is
	// unknown).
	typ config.MetricType
}

// RowOf is s reduced to a ScoreRow. The verdicts point to shared values
// rather than to s's, so a row holds no allocation of its own for them.
func RowOf(s artifacts.Score) ScoreRow {
	out := ScoreRow{
		ID: s.ID, MetricID: s.MetricID, TargetModel: s.TargetModel, Judge: s.Judge, ConvID: s.ConvID,
		Sample: s.Sample, Present: shared(s.Present), Passed: shared(s.Passed), Valid: shared(s.Valid),
		Unverified: shared(s.Unverified), UserModel: s.UserModel, Transcript: transcriptNumber(s.TranscriptHash),
		Invalid: kindBits(s.Invalid), BreakTurn: breakTurn(s.Evidence), AuditSample: auditStratum(s.AuditSample),
		Refused: refusedReplies(s.Refused), Repaired: len(s.Repairs) > 0,
	}
	if len(s.Judges) > 0 {
		out.Judges = make([]artifacts.JudgeVerdict, len(s.Judges))
		for i, j := range s.Judges {
			out.Judges[i] = artifacts.JudgeVerdict{Judge: j.Judge, Present: shared(j.Present), Unverified: shared(j.Unverified)}
			out.Repaired = out.Repaired || len(j.Repairs) > 0
		}
	}
	return out
}

var sharedTrue, sharedFalse = true, false

// shared is p as a pointer to one of two package-level values. Nothing
// writes through a row's verdict pointers.
func shared(p *bool) *bool {
	switch {
	case p == nil:
		return nil
	case *p:
		return &sharedTrue
	}
	return &sharedFalse
}

// row is a score row resolved against its run (TargetModel is set) and the
// benchmark's metrics (typ is set). It is the input row itself, so that
// grouping 100,000 rows by target needs no second copy of them.
type row = ScoreRow

func (r row) key() verdictKey { return verdictKey{r.ID, r.MetricID, r.Sample} }

func (r row) metricKey() string {
	if r.MetricID == "" {
		return unknownKey
	}
	return r.MetricID
}

func (r row) scenarioKey() string {
	if r.ID == "" {
		return unknownKey
	}
	return r.ID
}

// Aggregate computes results.json's entries. The upstream fields follow
// upstream's aggregate exactly (see the package doc and FIELDS.md): rows
// grouped by target_model in first-appearance order, pooled rates rounded
// to 4 places, the list sorted by positive_pass_rate descending (null as 0,
// stable). Unless opts.UpstreamOnly, each entry also carries the additions.
func Aggregate(in Input, opts Options) ([]ModelResult, error) {
	opts, err := withDefaults(opts)
	if err != nil {
		return nil, err
	}
	types := make(map[string]config.MetricType, len(in.Metrics))
	for _, m := range in.Metrics {
		types[m.ID] = m.Type
	}
	demos := scenarioDemographics(in)
	rows, runDirs, calIn := scoreRows(in), in.RunDirs, in.Calibration
	people := humanByTarget(in.Human, types)
	in = Input{} // the rows are grouped in place: let the input go
	order, groups, anyValidity, err := groupByTarget(rows, runDirs, types)
	if err != nil {
		return nil, err
	}
	rows = nil
	if opts.ValidOnly && !anyValidity {
		return nil, errors.New("aggregate: valid-only results requested, but no score row carries a validity verdict; run simulate with the checks of the simulated user on (validity.turn_checks, validity.audit) first, or drop valid_only")
	}

	var demo *demographics
	if !opts.UpstreamOnly {
		demo = newDemographics(demos)
	}

	out := make([]ModelResult, 0, len(order))
	var clusters []*modelClusters
	var targets []targetRows
	for _, target := range order {
		all := groups[target]
		rows := all
		if opts.ValidOnly {
			rows = slices.DeleteFunc(slices.Clone(all), func(r row) bool { return r.Valid == nil || !*r.Valid })
		}
		m := upstreamModel(target, rows)
		if !opts.UpstreamOnly {
			clusters = append(clusters, addExtensions(&m, rows, all, demo, opts))
			if calIn != nil {
				m.JudgeConsistency = judgeConsistency(target, rows, calIn, opts.Conf)
			}
			targets = append(targets, targetRows{target, rows})
			m.VarianceComponents = varianceComponents(target, rows, calIn, opts)
			if h := people[target]; len(h) > 0 {
				m.HumanComparison = compareHuman(target, rows, h, opts)
			}
			m.Fingerprint = opts.Fingerprint.For(target)
		}
		out = append(out, m)
	}
	if !opts.UpstreamOnly {
		finishFile(out, clusters, opts)
		for i, cal := range calibrateFile(targets, calIn, opts) {
			addCalibration(&out[i], cal)
			out[i].Leaderboard.Corrected = cal.leaderboardCorrected(out[i].Leaderboard)
		}
	}
	// Python: sorted(..., key=lambda r: r["positive_pass_rate"] or 0, reverse=True)
	// — stable, so ties keep first-appearance order.
	sort.SliceStable(out, func(i, j int) bool {
		return orZero(out[i].PositivePassRate) > orZero(out[j].PositivePassRate)
	})
	return out, nil
}

// withDefaults fills opts' unset bootstrap reps and confidence level with
// the defaults and rejects values Aggregate cannot use.
func withDefaults(opts Options) (Options, error) {
	if err := stats.ResamplingDefaults(&opts.BootstrapReps, &opts.Conf, DefaultBootstrapReps, DefaultConf); err != nil {
		return opts, fmt.Errorf("aggregate: %w", err)
	}
	return opts, nil
}

// scenarioDemographics is each scenario's demographic: from in.Scenarios
// when given, else in.Demographics.
func scenarioDemographics(in Input) []ScenarioDemographic {
	if in.Scenarios == nil {
		return in.Demographics
	}
	demos := make([]ScenarioDemographic, len(in.Scenarios))
	for i, sc := range in.Scenarios {
		demos[i] = ScenarioDemographic{sc.ID, sc.Demographic}
	}
	return demos
}

// scoreRows is in.Rows, or, when the caller gave scores only, their rows.
func scoreRows(in Input) []ScoreRow {
	if in.Rows != nil {
		return in.Rows
	}
	rows := make([]ScoreRow, len(in.Scores))
	for i, sc := range in.Scores {
		rows[i] = RowOf(sc)
	}
	return rows
}

// groupByTarget resolves each row's target (its target_model, else its run
// directory's name) and metric type, and groups the rows by target in
// first-appearance order, each group in file order. The groups share rows'
// array, reordered in place: a second copy of 100,000 rows would be most
// of aggregate's memory.
func groupByTarget(rows []row, runDirs []string, types map[string]config.MetricType) (order []string, groups map[string][]row, anyValidity bool, err error) {
	if runDirs != nil && len(runDirs) != len(rows) {
		return nil, nil, false, fmt.Errorf("aggregate: %d run dir names for %d score rows; give one per row (or none)", len(runDirs), len(rows))
	}
	place := map[string]int{} // target → its index in order
	for i := range rows {
		r := &rows[i]
		if r.TargetModel == "" && runDirs != nil {
			r.TargetModel = runDirs[i]
		}
		if r.TargetModel == "" {
			return nil, nil, false, fmt.Errorf("aggregate: score row %d (id %q) has no target_model and no run directory name", i, r.ID)
		}
		if r.Valid != nil {
			anyValidity = true
		}
		if _, ok := place[r.TargetModel]; !ok {
			place[r.TargetModel] = len(order)
			order = append(order, r.TargetModel)
		}
		r.typ = types[r.MetricID]
	}
	byPlace := func(a, b row) int { return place[a.TargetModel] - place[b.TargetModel] }
	if !slices.IsSortedFunc(rows, byPlace) { // rows come grouped from the runner
		slices.SortStableFunc(rows, byPlace)
	}
	groups = make(map[string][]row, len(order))
	for lo := 0; lo < len(rows); {
		hi := lo + 1
		for hi < len(rows) && rows[hi].TargetModel == rows[lo].TargetModel {
			hi++
		}
		groups[rows[lo].TargetModel] = rows[lo:hi:hi]
		lo = hi
	}
	return order, groups, anyValidity, nil
}

// humanByTarget groups human-played rows by target, their types set.
func humanByTarget(rows []ScoreRow, types map[string]config.MetricType) map[string][]row {
	out := map[string][]row{}
	for _, r := range rows {
		r.typ = types[r.MetricID]
		out[r.TargetModel] = append(out[r.TargetModel], r)
	}
	return out
}

// addCalibration adds judge_calibration and the corrected rates to m.
func addCalibration(m *ModelResult, cal *calibrationOf) {
	if cal == nil {
		return
	}
	m.JudgeCalibration = cal.block
	for i := range m.ByMetric {
		m.ByMetric[i].Value.Corrected = cal.byMetric[m.ByMetric[i].Key]
	}
	m.PositiveCorrected = cal.tracks[config.Positive]
	m.NegativeCorrected = cal.tracks[config.Negative]
}

func orZero(p *float64) float64 {
	if p == nil {
		return 0
	}
	return *p
}

// round4 is Python's round(x, 4).
func round4(x float64) float64 { return artifacts.Round(x, 4) }

// ratio is round4(k/n), or nil when n is 0 (upstream's None).
func ratio(k, n int) *float64 {
	if n == 0 {
		return nil
	}
	v := round4(float64(k) / float64(n))
	return &v
}

// upstreamModel computes upstream's eight fields.
func upstreamModel(target string, rows []row) ModelResult {
	m := ModelResult{TargetModel: target, NTotal: len(rows)}
	var posK, posN, negK, negN int
	for _, r := range rows {
		switch r.typ {
		case config.Positive:
			m.NPositive++
			if r.Passed != nil {
				posN++
				if *r.Passed {
					posK++
				}
			}
		case config.Negative:
			m.NNegative++
			if r.Passed != nil {
				negN++
				if *r.Passed {
					negK++
				}
			}
		}
	}
	m.PositivePassRate = ratio(posK, posN)
	m.NegativePassRate = ratio(negK, negN)
	m.ByMetric = rateBy(rows, row.metricKey)
	m.ByScenario = rateBy(rows, row.scenarioKey)
	return m
}

// tally counts verdicts.
type tally struct{ passed, total int }

func (t *tally) add(r row) {
	if r.Passed == nil {
		return
	}
	t.total++
	if *r.Passed {
		t.passed++
	}
}

func (t tally) rate() Rate {
	return Rate{PassRate: ratio(t.passed, t.total), NPassed: t.passed, NTotal: t.total}
}

// rateBy groups rows by key (sorted string order, like Python's sorted())
// into {pass_rate, n_passed, n_total=rows with a verdict}. A key whose rows
// are all null still appears, with pass_rate null and n_total 0.
func rateBy(rows []row, key func(row) string) Keyed[Rate] {
	t := map[string]*tally{}
	for _, r := range rows {
		k := key(r)
		if t[k] == nil {
			t[k] = &tally{}
		}
		t[k].add(r)
	}
	keys := make([]string, 0, len(t))
	for k := range t {
		keys = append(keys, k)
	}
	sort.Strings(keys) // byte order = code point order = Python's str order
	out := make(Keyed[Rate], len(keys))
	for i, k := range keys {
		out[i] = Entry[Rate]{k, t[k].rate()}
	}
	return out
}
