package results

import (
	"cmp"
	"fmt"
	"math/bits"
	"slices"
	"strconv"
	"strings"

	"github.com/impactbench/impactbench/internal/artifacts"
	"github.com/impactbench/impactbench/internal/config"
	"github.com/impactbench/impactbench/internal/stats"
)

// ---- the simulated user: valid rollouts ----

// unknownKind is the bit of a failure kind artifacts.FailureKinds lacks.
const unknownKind = 1 << 15

// kindBits packs failure kinds into one bit each (a row holds two bytes,
// not a slice: 100,000 rows are read at once).
func kindBits(kinds []string) uint16 {
	var b uint16
	for _, k := range kinds {
		if i := slices.Index(artifacts.FailureKinds, k); i >= 0 && i < 15 {
			b |= 1 << i
		} else {
			b |= unknownKind
		}
	}
	return b
}

// transcriptNumber is a TranscriptHash ("sha256:<16 hex>") as a number, 0
// when there is none or it is not one.
func transcriptNumber(h string) uint64 {
	hex, ok := strings.CutPrefix(h, "sha256:")
	if !ok || len(hex) != 16 {
		return 0
	}
	n, err := strconv.ParseUint(hex, 16, 64)
	if err != nil {
		return 0
	}
	return n
}

// BreakTurnOf is the first assistant turn (1-based) any quote of a
// verdict's evidence was found in, 0 for none: for a failed row whose
// failure is the behaviour, the turn it first appeared.
func BreakTurnOf(ev []artifacts.Quote) int { return int(breakTurn(ev)) }

// breakTurn is the first assistant turn any quote of the evidence was
// found in (transcript index 2k-1 is assistant turn k), 0 for none.
func breakTurn(ev []artifacts.Quote) uint16 {
	first := 0
	for _, q := range ev {
		if q.Message == nil || *q.Message < 1 || *q.Message%2 != 1 {
			continue
		}
		if t := *q.Message/2 + 1; first == 0 || t < first {
			first = t
		}
	}
	return uint16(min(first, 1<<16-1))
}

// validityTally counts validity verdicts.
type validityTally struct{ n, checked, valid, invalid int }

func (t *validityTally) add(r row) {
	t.n++
	if r.Valid == nil {
		return
	}
	t.checked++
	if *r.Valid {
		t.valid++
	} else {
		t.invalid++
	}
}

func (t validityTally) count() ValidityCount {
	return ValidityCount{N: t.n, Checked: t.checked, Valid: t.valid, Invalid: t.invalid, Share: ratio(t.valid, t.checked)}
}

// validity is the valid-rollout rate of a model's rows (every row, also
// with valid_only), with the failure kinds and the rate per metric and per
// user model; nil when no row was checked.
func validity(rows []row) *ValidityStats {
	var all validityTally
	kinds := make([]int, 16)
	byMetric, byUser := map[string]*validityTally{}, map[string]*validityTally{}
	judged := 0
	for _, r := range rows {
		all.add(r)
		tallyOf(byMetric, r.metricKey()).add(r)
		tallyOf(byUser, cmp.Or(r.UserModel, unknownKey)).add(r)
		if r.Valid != nil && !*r.Valid {
			for b := r.Invalid; b != 0; b &= b - 1 {
				kinds[bits.TrailingZeros16(b)]++
			}
			if r.Passed != nil {
				judged++
			}
		}
	}
	if all.checked == 0 {
		return nil
	}
	c := all.count()
	v := &ValidityStats{Checked: c.Checked, Valid: c.Valid, Share: c.Share, N: c.N, Invalid: c.Invalid, Unchecked: c.N - c.Checked}
	for i, k := range artifacts.FailureKinds {
		if i < 15 && kinds[i] > 0 {
			v.Kinds = append(v.Kinds, Entry[int]{k, kinds[i]})
		}
	}
	if kinds[15] > 0 {
		v.Kinds = append(v.Kinds, Entry[int]{"other", kinds[15]})
	}
	v.ByMetric = sortedCounts(byMetric)
	if _, onlyUnknown := byUser[unknownKey]; !onlyUnknown || len(byUser) > 1 {
		v.ByUserModel = sortedCounts(byUser)
	}
	v.Estimated = sampledValidity(rows)
	if judged > 0 {
		v.Warning = strconv.Itoa(judged) + " invalid conversation(s) carry a verdict (judged before invalid conversations were left unjudged) and count in the pass rates; set validity.valid_only to leave them out"
	}
	return v
}

// auditStrata are the audit strata a row's byte indexes (from 1; 0 is none,
// or one this build does not know).
var auditStrata = []string{artifacts.AuditFlagged, artifacts.AuditSampled, artifacts.AuditSampledInvalid, artifacts.AuditSkipped, artifacts.AuditSuspect}

const (
	stratumNone uint8 = iota
	stratumFlagged
	stratumSampled
	stratumSampledInvalid
	stratumSkipped
	stratumSuspect
)

// auditStratum is a score row's audit stratum as a byte.
func auditStratum(s string) uint8 {
	if i := slices.Index(auditStrata, s); i >= 0 {
		return uint8(i + 1)
	}
	return stratumNone
}

// sampledWarnBelow is the sample size under which the estimate is marked
// thin.
const sampledWarnBelow = 30

// sampledValidity estimates the valid-rollout rate of rows from a sampled
// audit (nil when no row carries a stratum: every conversation audited).
func sampledValidity(rows []row) *SampledValidity {
	var known, knownValid, flagged, suspect, sampled, pass, unsampled int
	for _, r := range rows {
		switch r.AuditSample {
		case stratumNone:
			continue
		case stratumSkipped:
			unsampled++
			continue
		case stratumFlagged:
			flagged++
		case stratumSuspect:
			// Audited in full like the flagged ones: its verdicts are known.
			suspect++
		case stratumSampled:
			sampled++
			pass++
		case stratumSampledInvalid:
			sampled++
		}
		known++
		if r.Valid != nil && *r.Valid {
			knownValid++
		}
	}
	if known+unsampled == 0 {
		return nil
	}
	e := stats.SampledValidRate(known, knownValid, sampled, pass, unsampled, 0.95)
	out := &SampledValidity{Share: round4(e.Estimate), Lo: round4(e.Lo), Hi: round4(e.Hi), Conf: e.Conf, N: e.N,
		Flagged: flagged, Suspect: suspect, Sampled: sampled, SampledPass: pass, Unsampled: unsampled, Method: e.Method}
	if sampled+unsampled > 0 {
		out.AuditShare = round4(float64(sampled) / float64(sampled+unsampled))
	}
	if unsampled > 0 && sampled < sampledWarnBelow {
		out.Warning = fmt.Sprintf("the audit sampled %d unflagged conversation(s): the estimate rests on few", sampled)
	}
	return out
}

func tallyOf(m map[string]*validityTally, k string) *validityTally {
	t := m[k]
	if t == nil {
		t = &validityTally{}
		m[k] = t
	}
	return t
}

func sortedCounts(m map[string]*validityTally) Keyed[ValidityCount] {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	out := make(Keyed[ValidityCount], len(keys))
	for i, k := range keys {
		out[i] = Entry[ValidityCount]{k, m[k].count()}
	}
	return out
}

// ---- when does it break ----

// breakTurns is the turn-by-turn failure curve of a model's negative
// metrics (nil when no failure there cites a turn).
func breakTurns(rows []row) *BreakTurns {
	all := &BreakTurns{}
	per := map[string]*BreakTurns{}
	for _, r := range rows {
		if r.typ != config.Negative || r.Passed == nil {
			continue
		}
		m := per[r.metricKey()]
		if m == nil {
			m = &BreakTurns{}
			per[r.metricKey()] = m
		}
		for _, b := range []*BreakTurns{all, m} {
			b.add(*r.Passed, int(r.BreakTurn))
		}
	}
	if all.NLocated == 0 {
		return nil
	}
	turns := len(all.ByTurn)
	all.finish(turns)
	keys := make([]string, 0, len(per))
	for k := range per {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		per[k].finish(turns)
		all.ByMetric = append(all.ByMetric, Entry[BreakTurns]{k, *per[k]})
	}
	return all
}

func (b *BreakTurns) add(passed bool, turn int) {
	b.N++
	if passed {
		return
	}
	b.NFailed++
	if turn < 1 {
		return
	}
	b.NLocated++
	for len(b.ByTurn) < turn {
		b.ByTurn = append(b.ByTurn, 0)
	}
	b.ByTurn[turn-1]++
}

// finish pads the counts to turns and computes the cumulative shares.
func (b *BreakTurns) finish(turns int) {
	for len(b.ByTurn) < turns {
		b.ByTurn = append(b.ByTurn, 0)
	}
	b.ShareByTurn = make([]float64, turns)
	sum := 0
	for k, c := range b.ByTurn {
		sum += c
		if b.N > 0 {
			b.ShareByTurn[k] = round4(float64(sum) / float64(b.N))
		}
	}
}

// ---- identical samples ----

// IdenticalWarning says why identical samples are left out of agreement.
const IdenticalWarning = "these scenarios' samples are byte-identical conversations: a provider ignored the seed, so their agreement says nothing about stability; every agreement figure leaves them out"

// agreementOfSamples is sampleAgreement over the scenarios whose samples
// differ, naming those whose samples are byte-identical conversations
// (every sample's transcript hash recorded and equal).
func agreementOfSamples(rows []row) *Agreement {
	same := identicalGroups(rows)
	if len(same) == 0 {
		return sampleAgreement(rows)
	}
	kept := make([]row, 0, len(rows))
	for _, r := range rows {
		if !same[groupKey{r.scenarioKey(), r.metricKey()}] {
			kept = append(kept, r)
		}
	}
	ag := sampleAgreement(kept)
	if ag == nil {
		ag = &Agreement{ByScenario: Keyed[ScenarioAgreement]{}, PassK: PassK{ByMetric: Keyed[*float64]{}}, ByMetric: Keyed[PresentAgreement]{}}
	}
	id := &IdenticalSamples{NGroups: len(same), Warning: IdenticalWarning}
	for k := range same {
		id.Scenarios = append(id.Scenarios, k.id)
	}
	slices.Sort(id.Scenarios)
	ag.Identical = id
	return ag
}

// identicalGroups are the scenarios sampled twice or more whose samples
// all carry the same transcript hash.
func identicalGroups(rows []row) map[groupKey]bool {
	type seen struct {
		hash    uint64
		samples int
		differ  bool
	}
	groups := map[groupKey]*seen{}
	for _, r := range rows {
		k := groupKey{r.scenarioKey(), r.metricKey()}
		g := groups[k]
		if g == nil {
			groups[k] = &seen{hash: r.Transcript, samples: 1, differ: r.Transcript == 0}
			continue
		}
		g.samples++
		g.differ = g.differ || r.Transcript == 0 || r.Transcript != g.hash
	}
	out := map[groupKey]bool{}
	for k, g := range groups {
		if g.samples >= 2 && !g.differ {
			out[k] = true
		}
	}
	return out
}
