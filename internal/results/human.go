package results

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/impactbench/impactbench/internal/artifacts"
	"github.com/impactbench/impactbench/internal/config"
	"github.com/impactbench/impactbench/internal/stats"
)

// HumanComparison is one target's pass rates with simulated users against
// those with people playing the user (results.json's "human_comparison";
// present when people played against the target). The unit is the base
// scenario: on each base scenario of a metric that people played and that
// has simulated verdicts, the pass rate of the people's conversations
// against that of the simulated conversations of the same scenario
// variants. Only scenarios both have count.
type HumanComparison struct {
	// NHuman counts the human-played conversations with a verdict on a
	// positive or negative metric; NUnpaired those of them whose scenario
	// has no simulated verdict (left out); NScenarios the base scenarios
	// compared.
	NHuman     int    `json:"n_human"`
	NUnpaired  int    `json:"n_unpaired"`
	NScenarios int    `json:"n_scenarios"`
	Method     string `json:"method"`
	// Rows: each track people played, then each metric.
	Rows    []HumanDiff `json:"rows"`
	Warning string      `json:"warning,omitempty"`
}

// HumanDiff is the comparison on one track (positive, negative) or metric.
// Simulated and Human are the means over the compared base scenarios of
// each scenario's pass rate, so Diff (human − simulated) is their
// difference; [CILow, CIHigh] and PValue come from one procedure (Test),
// so the interval excludes 0 exactly when p < 1 − conf. Both are null
// with one scenario. The p-value is not adjusted for the comparison's
// several rows: read it as a description, and the interval first.
type HumanDiff struct {
	Track      string   `json:"track"`
	MetricID   *string  `json:"metric_id"`
	Simulated  *float64 `json:"simulated_pass_rate"`
	Human      *float64 `json:"human_pass_rate"`
	Diff       *float64 `json:"diff"`
	CILow      *float64 `json:"ci_low"`
	CIHigh     *float64 `json:"ci_high"`
	PValue     *float64 `json:"p_value"`
	NScenarios int      `json:"n_scenarios"`
	NSimulated int      `json:"n_simulated"`
	NHuman     int      `json:"n_human"`
	Test       string   `json:"test"`
	Warning    string   `json:"warning,omitempty"`
}

// humanMethod says how HumanComparison is made.
const humanMethod = "paired by base scenario: per scenario, the pass rate of the human-played conversations minus that of the simulated conversations of the same variants; " +
	"rates and difference are means over the scenarios both have; interval and p-value: sign-flip test over scenarios (exact up to 16) with the binomial floor (stats.ClusterDiff)"

// CompareHuman compares target's simulated rows with its human-played rows
// (ScoreRows of runs/<target>/human/scores.json) on the metrics' tracks,
// as aggregate does for results.json; nil when no human-played row has a
// verdict. The viewer uses it to show the comparison before aggregate runs.
func CompareHuman(target string, sim, people []ScoreRow, metrics []config.Metric, opts Options) *HumanComparison {
	types := make(map[string]config.MetricType, len(metrics))
	for _, m := range metrics {
		types[m.ID] = m.Type
	}
	typed := func(rows []ScoreRow) []row {
		out := slices.Clone(rows)
		for i := range out {
			out[i].typ = types[out[i].MetricID]
		}
		return out
	}
	if opts.Conf == 0 {
		opts.Conf = DefaultConf
	}
	return compareHuman(target, typed(sim), typed(people), opts)
}

// humanCluster is one base scenario people played: the variants they
// played and both arms' tallies.
type humanCluster struct {
	typ        config.MetricType
	variants   map[string]bool
	human, sim tally
}

// compareHuman is CompareHuman over rows whose types are set.
func compareHuman(target string, sim, people []row, opts Options) *HumanComparison {
	clusters := map[clusterKey]*humanCluster{}
	hc := &HumanComparison{Method: humanMethod, Rows: []HumanDiff{}}
	for _, r := range people {
		if r.Passed == nil || (r.typ != config.Positive && r.typ != config.Negative) {
			continue
		}
		hc.NHuman++
		k := keyOf(r)
		c := clusters[k]
		if c == nil {
			c = &humanCluster{typ: r.typ, variants: map[string]bool{}}
			clusters[k] = c
		}
		c.variants[r.ID] = true
		c.human.add(r)
	}
	if hc.NHuman == 0 {
		return nil
	}
	for _, r := range sim {
		if c := clusters[keyOf(r)]; c != nil && c.variants[r.ID] {
			c.sim.add(r)
		}
	}
	keys := make([]clusterKey, 0, len(clusters))
	for k, c := range clusters {
		if c.sim.total == 0 {
			hc.NUnpaired += c.human.total
			continue
		}
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b clusterKey) int {
		return cmp.Or(strings.Compare(a.metric, b.metric), strings.Compare(a.base, b.base))
	})
	hc.NScenarios = len(keys)
	for _, tr := range tracks {
		hc.addRow(target, tr.name, "", clusters, keys, func(k clusterKey) bool { return clusters[k].typ == tr.typ }, opts)
	}
	var metrics []string
	for _, k := range keys {
		if len(metrics) == 0 || metrics[len(metrics)-1] != k.metric {
			metrics = append(metrics, k.metric)
		}
	}
	for _, m := range metrics {
		hc.addRow(target, trackName(clusters[clusterKey{metric: m, base: firstBase(keys, m)}].typ), m, clusters, keys,
			func(k clusterKey) bool { return k.metric == m }, opts)
	}
	hc.Warning = humanWarning(hc)
	return hc
}

func firstBase(keys []clusterKey, metric string) string {
	for _, k := range keys {
		if k.metric == metric {
			return k.base
		}
	}
	return ""
}

// addRow adds the comparison over the clusters keep selects (none: no row).
func (hc *HumanComparison) addRow(target, track, metric string, clusters map[clusterKey]*humanCluster, keys []clusterKey, keep func(clusterKey) bool, opts Options) {
	var pcs []stats.PairedCluster
	d := HumanDiff{Track: track}
	var simMean, humMean float64
	for _, k := range keys {
		if !keep(k) {
			continue
		}
		c := clusters[k]
		pcs = append(pcs, stats.PairedCluster{NA: c.human.total, SumA: float64(c.human.passed), NB: c.sim.total, SumB: float64(c.sim.passed)})
		d.NHuman += c.human.total
		d.NSimulated += c.sim.total
		humMean += float64(c.human.passed) / float64(c.human.total)
		simMean += float64(c.sim.passed) / float64(c.sim.total)
	}
	if len(pcs) == 0 {
		return
	}
	if metric != "" {
		d.MetricID = ptr(metric)
	}
	res := stats.ClusterDiff(pcs, opts.Conf, stats.DefaultSignFlipReps, testSeed(opts.Seed, "human", target, track, metric))
	n := float64(len(pcs))
	d.NScenarios, d.Test, d.Warning = res.Clusters, res.Method, stats.ClusterWarning(res.Clusters)
	d.Human, d.Simulated, d.Diff = finite(humMean/n), finite(simMean/n), finite(res.Mean)
	d.CILow, d.CIHigh = limit(res.Lo), limit(res.Hi)
	if res.Clusters >= 2 {
		d.PValue = ptr(artifacts.Round(res.P, 4))
	}
	hc.Rows = append(hc.Rows, d)
}

// humanWarning says what the comparison cannot tell: scenarios people
// played that have no simulated verdict, and thin data.
func humanWarning(hc *HumanComparison) string {
	var parts []string
	switch {
	case hc.NScenarios == 0:
		parts = append(parts, "no scenario people played has a simulated verdict for this target: nothing to compare")
	case hc.NScenarios < stats.FewClusters:
		parts = append(parts, fmt.Sprintf("only %d base scenario(s) compared: the gap between people and simulated users is known only roughly (%d+ recommended)", hc.NScenarios, stats.FewClusters))
	}
	if hc.NUnpaired > 0 {
		parts = append(parts, fmt.Sprintf("%d human-played conversation(s) left out: their scenario has no simulated verdict", hc.NUnpaired))
	}
	return strings.Join(parts, "; ")
}

// HumanLine is printed under a model's summary lines when people played
// against it (HumanText, indented; the warning on a line of its own); ""
// without a comparison.
func HumanLine(m ModelResult) string {
	if m.HumanComparison == nil {
		return ""
	}
	text, warning := HumanText(m.HumanComparison)
	line := "    people vs simulated users: " + text
	if warning != "" {
		line += "\n    ! " + warning
	}
	return line
}

// HumanText is the comparison in a line: each track's human vs simulated
// pass rate on the base scenarios both have and the difference with its
// interval; and the comparison's warning.
func HumanText(hc *HumanComparison) (text, warning string) {
	var parts []string
	for _, r := range hc.Rows {
		if r.MetricID != nil || r.Diff == nil {
			continue
		}
		iv := "no interval"
		if r.CILow != nil && r.CIHigh != nil {
			iv = "[" + points(*r.CILow) + ", " + points(*r.CIHigh) + "]"
		}
		parts = append(parts, fmt.Sprintf("%s %s vs %s (%s points %s, %d scenario(s))",
			r.Track, pct(*r.Human), pct(*r.Simulated), points(*r.Diff), iv, r.NScenarios))
	}
	text = fmt.Sprintf("%d human-played conversation(s); ", hc.NHuman)
	if len(parts) == 0 {
		text += "nothing to compare"
	} else {
		text += strings.Join(parts, " · ")
	}
	return text, hc.Warning
}

// points is a difference of rates in percentage points, signed.
func points(x float64) string {
	s := strconv.FormatFloat(100*x, 'f', 1, 64)
	if x >= 0 {
		s = "+" + s
	}
	return s
}
