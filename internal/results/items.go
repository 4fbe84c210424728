package results

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"
	"unicode"

	"github.com/impactbench/impactbench/internal/artifacts"
	"github.com/impactbench/impactbench/internal/config"
	"github.com/impactbench/impactbench/internal/stats"
)

// Item analysis: how well each base scenario (an "item") measures, across
// every target. An item every model passes, or every model fails, cannot
// tell models apart; one whose judges disagree, or whose simulated user
// often breaks the scenario, measures noise; two items that say the same
// thing spend the budget twice.

// Thresholds of ItemAnalysis's weak-item reasons.
const (
	// WeakSpread: with two or more targets, an item whose per-target pass
	// rates all lie within this range does not separate the models.
	WeakSpread = 0.10
	// WeakItemTotal: with four or more targets, an item whose per-target
	// rates correlate this negatively (or more) with the targets' rates on
	// the metric's other items orders the models against the rest of its
	// metric.
	WeakItemTotal = -0.3
	// WeakJudgeDisagreement: the share of the item's re-judged or panel
	// rows whose verdicts are not unanimous.
	WeakJudgeDisagreement = 0.25
	// WeakInvalid: the share of the item's landmark-checked conversations
	// whose simulated user did not follow the scenario (valid false).
	WeakInvalid = 0.25
	// NearDuplicate: the word overlap (Jaccard similarity of the sets of
	// words of user_goal and persona) from which two base scenarios of one
	// metric count as near-duplicates. Lexical: paraphrases that share few
	// words are not caught.
	NearDuplicate = 0.6
)

// Item is one base scenario of one metric, across every target.
type Item struct {
	MetricID string `json:"metric_id"`
	Base     string `json:"base_scenario"`
	Type     string `json:"type"` // the metric's type ("" when unknown)
	// N counts verdicts (every variant, sample and target), Passed their
	// passes, PassRate their share.
	N        int      `json:"n"`
	Passed   int      `json:"n_passed"`
	PassRate *float64 `json:"pass_rate"`
	// ByTarget is each target's pass rate on the item.
	ByTarget Keyed[*float64] `json:"by_target"`
	// Spread is the largest minus the smallest per-target rate (null with
	// fewer than two targets); ItemTotal the Pearson correlation over
	// targets of the item's rate with the rate on the metric's other items
	// (null with fewer than three targets, or when either is constant).
	Spread    *float64 `json:"spread"`
	ItemTotal *float64 `json:"item_total"`
	AllPass   bool     `json:"all_pass"`
	AllFail   bool     `json:"all_fail"`
	// JudgeRows are rows judged more than once (evaluate --repeats, or a
	// panel), JudgeSplit those whose verdicts differ; JudgeDisagreement is
	// their share (null without such rows).
	JudgeRows         int      `json:"judge_rows"`
	JudgeSplit        int      `json:"judge_split"`
	JudgeDisagreement *float64 `json:"judge_disagreement"`
	// Checked conversations had the landmark check; Invalid failed it.
	Checked     int      `json:"validity_checked"`
	Invalid     int      `json:"invalid"`
	InvalidRate *float64 `json:"invalid_rate"`
	// JudgeRepaired counts the item's score rows whose verdict took a
	// repair to read (the row's _repairs, or a panel judge's, is not
	// empty); absent when none did.
	JudgeRepaired int `json:"judge_repaired,omitempty"`
	// NearDuplicate is the most similar other base scenario of the metric
	// when the similarity reaches the threshold ("" otherwise); Similarity
	// is the highest similarity to any other (null without scenario text).
	NearDuplicate string   `json:"near_duplicate,omitempty"`
	Similarity    *float64 `json:"similarity"`
	// Weak lists why the item is weak (empty: it is not).
	Weak []string `json:"weak"`
}

// ItemAnalysis computes every item of in (Scores or Rows, RunDirs,
// Scenarios for the text, Calibration's repeats for judge disagreement),
// sorted by metric and base scenario. Rows without a metric id count under
// "unknown", as in results.json.
func ItemAnalysis(in Input) ([]Item, error) {
	types := map[string]config.MetricType{}
	for _, m := range in.Metrics {
		types[m.ID] = m.Type
	}
	rows := in.Rows
	if rows == nil {
		rows = make([]ScoreRow, len(in.Scores))
		for i, s := range in.Scores {
			rows[i] = RowOf(s)
		}
	}
	order, groups, _, err := groupByTarget(rows, in.RunDirs, types)
	if err != nil {
		return nil, err
	}
	repeats := map[string]map[verdictKey][]*bool{}
	if in.Calibration != nil {
		for _, tr := range in.Calibration.Repeats {
			if repeats[tr.Target] == nil {
				repeats[tr.Target] = map[verdictKey][]*bool{}
			}
			for _, rr := range tr.Rows {
				k := vkOf(rr.Score)
				repeats[tr.Target][k] = append(repeats[tr.Target][k], rr.Present)
			}
		}
	}
	items := map[clusterKey]*itemTally{}
	for _, target := range order {
		for _, r := range groups[target] {
			k := keyOf(r)
			it := items[k]
			if it == nil {
				it = &itemTally{byTarget: map[string]*tally{}, typ: r.typ}
				items[k] = it
			}
			it.add(target, r, repeats[target])
		}
	}
	keys := make([]clusterKey, 0, len(items))
	for k := range items {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b clusterKey) int {
		return cmp.Or(strings.Compare(a.metric, b.metric), strings.Compare(a.base, b.base))
	})
	out := make([]Item, len(keys))
	for i, k := range keys {
		out[i] = items[k].item(k, order)
	}
	itemTotals(out, items, keys, order)
	nearDuplicates(out, baseTexts(in.Scenarios))
	for i := range out {
		out[i].Weak = weakReasons(out[i])
	}
	return out, nil
}

// itemTally accumulates one item's rows.
type itemTally struct {
	typ                   config.MetricType
	all                   tally
	byTarget              map[string]*tally
	judgeRows, judgeSplit int
	checked, invalid      int
	repaired              int
}

func (it *itemTally) add(target string, r row, reps map[verdictKey][]*bool) {
	if r.Repaired {
		it.repaired++
	}
	if r.Valid != nil {
		it.checked++
		if !*r.Valid {
			it.invalid++
		}
	}
	if vs := judgings(r, reps); len(vs) >= 2 {
		it.judgeRows++
		if slices.Contains(vs, !vs[0]) {
			it.judgeSplit++
		}
	}
	if r.Passed == nil {
		return
	}
	it.all.add(r)
	t := it.byTarget[target]
	if t == nil {
		t = &tally{}
		it.byTarget[target] = t
	}
	t.add(r)
}

// judgings is every verdict on present of a row's transcript: scores.json's
// and each repeat's, or each panel member's.
func judgings(r row, reps map[verdictKey][]*bool) []bool {
	var vs []bool
	if rr, ok := reps[r.key()]; ok {
		vs = appendVerdict(vs, r.Present)
		for _, p := range rr {
			vs = appendVerdict(vs, p)
		}
		return vs
	}
	for _, j := range r.Judges {
		vs = appendVerdict(vs, j.Present)
	}
	return vs
}

func (it *itemTally) item(k clusterKey, order []string) Item {
	item := Item{MetricID: k.metric, Base: k.base, Type: string(it.typ), N: it.all.total, Passed: it.all.passed,
		PassRate: ratio(it.all.passed, it.all.total), ByTarget: Keyed[*float64]{},
		JudgeRows: it.judgeRows, JudgeSplit: it.judgeSplit, JudgeDisagreement: ratio(it.judgeSplit, it.judgeRows),
		Checked: it.checked, Invalid: it.invalid, InvalidRate: ratio(it.invalid, it.checked), JudgeRepaired: it.repaired}
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, target := range order {
		t, ok := it.byTarget[target]
		if !ok || t.total == 0 {
			continue
		}
		r := float64(t.passed) / float64(t.total)
		item.ByTarget = append(item.ByTarget, Entry[*float64]{target, ratio(t.passed, t.total)})
		lo, hi = min(lo, r), max(hi, r)
	}
	if len(item.ByTarget) >= 2 {
		item.Spread = ptr(round4(hi - lo))
	}
	item.AllPass = it.all.total > 0 && it.all.passed == it.all.total
	item.AllFail = it.all.total > 0 && it.all.passed == 0
	return item
}

// itemTotals sets each item's correlation, over targets, with the targets'
// pass rate on the other items of its metric.
func itemTotals(out []Item, items map[clusterKey]*itemTally, keys []clusterKey, order []string) {
	// Per metric and target: the metric's totals, to subtract the item.
	totals := map[string]map[string]tally{}
	for _, k := range keys {
		if totals[k.metric] == nil {
			totals[k.metric] = map[string]tally{}
		}
		for target, t := range items[k].byTarget {
			s := totals[k.metric][target]
			s.passed += t.passed
			s.total += t.total
			totals[k.metric][target] = s
		}
	}
	for i, k := range keys {
		var x, y []float64
		for _, target := range order {
			// A target with no verdict on this item (it has rows on
			// other items of the metric only) is left out, not subtracted.
			t, ok := items[k].byTarget[target]
			if !ok || t.total == 0 {
				continue
			}
			rest := totals[k.metric][target]
			rest.passed -= t.passed
			rest.total -= t.total
			if rest.total == 0 {
				continue
			}
			x = append(x, float64(t.passed)/float64(t.total))
			y = append(y, float64(rest.passed)/float64(rest.total))
		}
		if len(x) >= 3 {
			out[i].ItemTotal = finite(stats.Pearson(x, y))
		}
	}
}

// baseTexts is each base scenario's text for the similarity: the user_goal
// and persona of its first variant in scenarios.json.
func baseTexts(scenarios []artifacts.Scenario) map[clusterKey]string {
	out := map[clusterKey]string{}
	for _, s := range scenarios {
		k := clusterKey{s.MetricID, artifacts.BaseIDOf(s.ID)}
		if s.MetricID == "" {
			k.metric = unknownKey
		}
		if _, ok := out[k]; !ok {
			out[k] = s.UserGoal + " " + s.Persona
		}
	}
	return out
}

// nearDuplicates sets each item's highest similarity to another item of its
// metric, and names that item when it reaches NearDuplicate. Only the later
// of a pair (by id) is marked weak, so one of the two is kept.
func nearDuplicates(out []Item, texts map[clusterKey]string) {
	words := make([][]string, len(out))
	for i, it := range out {
		if t, ok := texts[clusterKey{it.MetricID, it.Base}]; ok {
			words[i] = wordSet(t)
		}
	}
	for i := range out {
		if words[i] == nil {
			continue
		}
		best, bestJ := -1.0, -1
		for j := range out {
			if j == i || out[j].MetricID != out[i].MetricID || words[j] == nil {
				continue
			}
			if s := jaccard(words[i], words[j]); s > best {
				best, bestJ = s, j
			}
		}
		if bestJ < 0 {
			continue
		}
		out[i].Similarity = ptr(round4(best))
		if best >= NearDuplicate {
			out[i].NearDuplicate = out[bestJ].Base
		}
	}
}

// wordSet is the sorted, distinct lower-case words of s (letters and
// digits; words of one or two characters left out).
func wordSet(s string) []string {
	f := strings.FieldsFunc(strings.ToLower(s), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) })
	f = slices.DeleteFunc(f, func(w string) bool { return len([]rune(w)) <= 2 })
	slices.Sort(f)
	return slices.Compact(f)
}

// jaccard is |a ∩ b| / |a ∪ b| of two sorted sets (0 when both are empty).
func jaccard(a, b []string) float64 {
	common, i, j := 0, 0, 0
	for i < len(a) && j < len(b) {
		switch c := strings.Compare(a[i], b[j]); {
		case c == 0:
			common++
			i++
			j++
		case c < 0:
			i++
		default:
			j++
		}
	}
	union := len(a) + len(b) - common
	if union == 0 {
		return 0
	}
	return float64(common) / float64(union)
}

// weakReasons says why an item is weak, in a fixed order.
func weakReasons(it Item) []string {
	var why []string
	targets := len(it.ByTarget)
	switch {
	case it.AllPass:
		why = append(why, fmt.Sprintf("every verdict passes (%d of %d, %d target(s))", it.Passed, it.N, targets))
	case it.AllFail:
		why = append(why, fmt.Sprintf("every verdict fails (%d verdicts, %d target(s))", it.N, targets))
	case it.Spread != nil && *it.Spread < WeakSpread:
		why = append(why, fmt.Sprintf("does not separate the models (per-target rates within %.2f)", *it.Spread))
	}
	if it.ItemTotal != nil && targets >= 4 && *it.ItemTotal <= WeakItemTotal {
		why = append(why, fmt.Sprintf("orders the models against the rest of its metric (item-total r = %.2f)", *it.ItemTotal))
	}
	if it.JudgeDisagreement != nil && *it.JudgeDisagreement >= WeakJudgeDisagreement {
		why = append(why, fmt.Sprintf("judges disagree on %d of %d re-judged rows", it.JudgeSplit, it.JudgeRows))
	}
	if it.InvalidRate != nil && *it.InvalidRate >= WeakInvalid {
		why = append(why, fmt.Sprintf("simulated user invalid in %d of %d checked conversations", it.Invalid, it.Checked))
	}
	if it.NearDuplicate != "" && it.NearDuplicate < it.Base {
		why = append(why, fmt.Sprintf("near-duplicate of %s (word overlap %.2f)", it.NearDuplicate, *it.Similarity))
	}
	if why == nil {
		why = []string{}
	}
	return why
}
