package offline

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/impactbench/impactbench/internal/llm"
)

// Output shapes, in the field order of the formats documented in llm.go.

type metricOut struct {
	ID         string   `json:"id"`
	Name       string   `json:"name"`
	Type       string   `json:"type"`
	Definition string   `json:"definition"`
	Examples   []string `json:"examples"`
}

type landmarkOut struct {
	Turn        int    `json:"turn"`
	Instruction string `json:"instruction"`
}

type scenarioOut struct {
	Persona               string        `json:"persona"`
	UserGoal              string        `json:"user_goal"`
	LatentAdversarialGoal string        `json:"latent_adversarial_goal"`
	Landmarks             []landmarkOut `json:"landmarks,omitempty"` // omitted only by the flaky fault
}

// maxGenerated bounds Meta "n" so a typo cannot make one call allocate
// without limit.
const maxGenerated = 1000

// genMetrics writes n metrics (Meta "n", else 4–6) alternating positive and
// negative, each from a different behaviour family while families last,
// with the benchmark's own keywords woven into the definitions.
func (c *client) genMetrics(req llm.Request, key uint64) string {
	r := newRNG(key)
	n := metaInt(req.Meta, llm.MetaCount, 0)
	if n <= 0 {
		n = 4 + r.intn(3)
	}
	if n > maxGenerated {
		n = maxGenerated
	}
	kws := keywords(3,
		weighted{req.Meta[llm.MetaBenchmarkName], 2},
		weighted{req.Meta[llm.MetaBenchmarkDescription], 1})
	if len(kws) == 0 {
		kws = []string{"everyday"}
	}
	perm := make([]int, len(families))
	for i := range perm {
		perm[i] = i
	}
	for i := len(perm) - 1; i > 0; i-- {
		j := r.intn(i + 1)
		perm[i], perm[j] = perm[j], perm[i]
	}
	out := struct {
		Metrics []metricOut `json:"metrics"`
	}{Metrics: make([]metricOut, n)}
	for i := range n {
		f := families[perm[i%len(perm)]]
		kw := kws[i%len(kws)]
		topic := kw + "-related " + topicNouns[r.intn(len(topicNouns))]
		m := metricOut{ID: fmt.Sprintf("m%02d", i+1)}
		var ex [3]string
		if i%2 == 0 {
			m.Type, m.Name, m.Definition, ex = "positive", f.posName, f.posDef, f.posEx
		} else {
			m.Type, m.Name, m.Definition, ex = "negative", f.negName, f.negDef, f.negEx
		}
		if round := i / len(perm); round > 0 {
			// Families are reused past the bank's size: keep names unique.
			m.Name += " (" + kw + ", set " + strconv.Itoa(round+1) + ")"
		}
		m.Definition = fill(m.Definition, "topic", topic)
		m.Examples = ex[:]
		out.Metrics[i] = m
	}
	return marshalJSON(out)
}

// genScenarios writes exactly Meta "n" (default 3) scenarios for one metric.
func (c *client) genScenarios(req llm.Request, key uint64) string {
	meta := req.Meta
	n := metaInt(meta, llm.MetaCount, 3)
	if n < 0 {
		n = 0
	}
	if n > maxGenerated {
		n = maxGenerated
	}
	turns := metaInt(meta, llm.MetaTurns, 6)
	if turns < 1 {
		turns = 1
	}
	negative := strings.EqualFold(strings.TrimSpace(meta[llm.MetaMetricType]), "negative") ||
		meta[llm.MetaMetricType] == "" && strings.HasPrefix(strings.ToLower(strings.TrimSpace(meta[llm.MetaMetricName])), "avoid")
	kw, def := metricSubject(meta)
	latentTmpl := latentPositive
	if negative {
		latentTmpl = latentNegative
	}

	r := newRNG(key)
	// Each index gets a distinct (persona, detail, duration) combination:
	// stepping through all 800 combinations with a stride coprime to 800
	// visits each once, so scenarios of one metric never repeat.
	const combos = len(personas) * len(details) * len(durations)
	start, stride := r.intn(combos), 231
	goal0, tactic0 := r.intn(len(userGoals)), r.intn(len(tactics))

	out := struct {
		Scenarios []scenarioOut `json:"scenarios"`
	}{Scenarios: make([]scenarioOut, n)}
	for i := range n {
		ri := newRNG(key ^ mix64(uint64(i)+prime3))
		combo := (start + i*stride) % combos
		// One metric is about one thing: every scenario uses its best keyword.
		topic := kw + "-related " + topicNouns[ri.intn(len(topicNouns))]
		s := scenarioOut{
			Persona: fill(personas[combo%len(personas)],
				"topic", topic,
				"detail", details[(combo/len(personas))%len(details)],
				"dur", durations[combo/(len(personas)*len(details))]),
			UserGoal:              fill(userGoals[(goal0+i)%len(userGoals)], "topic", topic),
			LatentAdversarialGoal: fill(latentTmpl, "def", def, "tactic", tactics[(tactic0+i)%len(tactics)]),
			Landmarks:             writeLandmarks(&ri, turns, kw),
		}
		out.Scenarios[i] = s
	}

	if c.flaky != flakyOff && req.Seed == 0 && !hasAssistant(req.Messages) && n > 0 {
		mode := c.flaky
		if mode == flakyEither {
			mode = flakyCount
			if key&1 == 0 {
				mode = flakyLandmarks
			}
		}
		if mode == flakyCount {
			out.Scenarios = out.Scenarios[:n-1]
		} else {
			out.Scenarios[n-1].Landmarks = nil
		}
	}
	return marshalJSON(out)
}

// metricSubject is what a metric's scenarios are about: the best keyword of
// the metric's name and definition (else of the benchmark's, else
// "everyday"), and its definition (else its name) as a short lower-case
// clause.
func metricSubject(meta map[string]string) (kw, def string) {
	kws := keywords(1,
		weighted{meta[llm.MetaMetricName], 2},
		weighted{meta[llm.MetaMetricDefinition], 1})
	if len(kws) == 0 {
		kws = keywords(1,
			weighted{meta[llm.MetaBenchmarkName], 2},
			weighted{meta[llm.MetaBenchmarkDescription], 1})
	}
	if len(kws) == 0 {
		kws = []string{"everyday"}
	}
	def = meta[llm.MetaMetricDefinition]
	if strings.TrimSpace(def) == "" {
		def = meta[llm.MetaMetricName]
	}
	return kws[0], truncateWords(lowerFirst(trimSentence(def)), 180)
}

// writeLandmarks writes 1–5 landmarks (never more than turns) on strictly
// increasing turns from 1 to turns, escalating from an opening line to a
// final demand.
func writeLandmarks(r *rng, turns int, kw string) []landmarkOut {
	k := 2 + r.intn(3)
	k = min(k, turns, 5)
	lms := make([]landmarkOut, k)
	for j := range k {
		turn, stage := 1, 0
		if k > 1 {
			// floor(j·(turns−1)/(k−1)) grows by at least 1 per step because k ≤ turns.
			turn = 1 + j*(turns-1)/(k-1)
			stage = j * (len(landmarkStages) - 1) / (k - 1)
		}
		opts := landmarkStages[stage]
		lms[j] = landmarkOut{Turn: turn, Instruction: fill(opts[r.intn(len(opts))], "t", kw)}
	}
	return lms
}

func hasAssistant(msgs []llm.Message) bool {
	for _, m := range msgs {
		if m.Role == llm.RoleAssistant {
			return true
		}
	}
	return false
}

// Demographic rewriting (expand).

const (
	ageUnknown = iota
	ageTeen
	ageAdult
	ageOlder
)

const (
	genderUnknown = iota
	genderWoman
	genderMan
	genderNonbinary
)

type pronouns struct {
	subj, obj, poss string
	plural          bool // "they write", not "they writes"
}

var pronounSets = [4]pronouns{
	genderUnknown:   {"they", "them", "their", true},
	genderWoman:     {"she", "her", "her", false},
	genderMan:       {"he", "him", "his", false},
	genderNonbinary: {"they", "them", "their", true},
}

// fillPronouns fills {P} {p} {obj} {poss} and the verb slots {s} {has}.
func fillPronouns(tmpl string, p pronouns, extra ...string) string {
	s, has := "s", "has"
	if p.plural {
		s, has = "", "have"
	}
	pairs := append([]string{"P", upperFirst(p.subj), "p", p.subj, "obj", p.obj, "poss", p.poss, "s", s, "has", has}, extra...)
	return fill(tmpl, pairs...)
}

type demographic struct {
	age, gender int
	others      [][2]string // axis, value pairs that are neither age nor gender
}

// parseDemographic reads "age: Adult (18+), gender: female". Values may
// contain commas, so a segment without a colon continues the previous value.
func parseDemographic(s string) demographic {
	var d demographic
	var pairs [][2]string
	for _, seg := range strings.Split(s, ",") {
		if k, v, ok := strings.Cut(seg, ":"); ok {
			pairs = append(pairs, [2]string{strings.TrimSpace(k), strings.TrimSpace(v)})
		} else if len(pairs) > 0 {
			pairs[len(pairs)-1][1] += "," + seg
		}
	}
	for _, p := range pairs {
		k, v := strings.ToLower(p[0]), strings.ToLower(p[1])
		switch {
		case strings.Contains(k, "age"):
			switch {
			case strings.Contains(v, "child"), strings.Contains(v, "teen"), strings.Contains(v, "minor"),
				strings.Contains(v, "-17"), strings.Contains(v, "under 18"):
				d.age = ageTeen
			case strings.Contains(v, "older"), strings.Contains(v, "senior"), strings.Contains(v, "elder"),
				strings.Contains(v, "65"), strings.Contains(v, "retire"):
				d.age = ageOlder
			case strings.Contains(v, "adult"), strings.Contains(v, "18"):
				d.age = ageAdult
			default:
				d.others = append(d.others, p)
			}
		case strings.Contains(k, "gender") || k == "sex":
			switch {
			case strings.Contains(v, "non"), strings.Contains(v, "enby"), strings.Contains(v, "genderqueer"):
				d.gender = genderNonbinary
			case strings.Contains(v, "female"), strings.Contains(v, "woman"), strings.Contains(v, "girl"):
				d.gender = genderWoman
			case strings.Contains(v, "male"), strings.Contains(v, "man"), strings.Contains(v, "boy"):
				d.gender = genderMan
			default:
				d.others = append(d.others, p)
			}
		default:
			d.others = append(d.others, p)
		}
	}
	return d
}

// expand rewrites a base scenario for one demographic: an identity sentence,
// the unchanged situation, and a voice sentence that replaces the base
// persona's closing style sentence (see situation); each landmark keeps its turn
// and gets a lead-in that sets the persona's tone (its quoted line, if any,
// is kept word for word).
func (c *client) expand(req llm.Request, key uint64) string {
	meta := req.Meta
	d := parseDemographic(meta[llm.MetaDemographic])
	p := pronounSets[d.gender]
	r := newRNG(key)
	age := ""
	switch d.age {
	case ageTeen:
		age = strconv.Itoa(13 + r.intn(5))
	case ageAdult:
		age = strconv.Itoa(22 + r.intn(40))
	case ageOlder:
		age = strconv.Itoa(66 + r.intn(14))
	}

	var b strings.Builder
	if d.age != ageUnknown || d.gender != genderUnknown {
		b.WriteString(fillPronouns(ageIntro[d.age], p, "age", age, "gnoun", genderNoun[d.age][d.gender]))
		b.WriteByte(' ')
	}
	b.WriteString(situation(meta[llm.MetaPersona]))
	for _, o := range d.others {
		b.WriteString(" Also relevant: " + o[0] + " is " + trimSentence(o[1]) + ".")
	}
	b.WriteByte(' ')
	b.WriteString(fillPronouns(ageVoice[d.age], p))

	var in []landmarkOut
	// A missing or malformed list leaves no landmarks to rewrite; the stage
	// compares turns with the base scenario and will notice.
	_ = json.Unmarshal([]byte(meta[llm.MetaLandmarksJSON]), &in)
	lms := make([]landmarkOut, 0, len(in))
	for _, l := range in {
		lms = append(lms, landmarkOut{Turn: l.Turn, Instruction: ageLandmarkLead[d.age] + lowerFirst(strings.TrimSpace(l.Instruction))})
	}
	return marshalJSON(struct {
		UserPersona string        `json:"user_persona"`
		Landmarks   []landmarkOut `json:"landmarks"`
	}{strings.TrimSpace(b.String()), lms})
}

// situation returns the base persona without its closing sentence when that
// sentence only describes how "they" write or come across (as the offline
// generator's personas end) and at least two sentences remain: the
// demographic voice sentence takes its place, keeping the rewrite within
// four sentences and its voice consistent.
func situation(persona string) string {
	p := strings.TrimSpace(persona)
	i := strings.LastIndex(p, ". ")
	if i < 0 || strings.Count(p[:i+1], ". ")+1 < 2 {
		return p
	}
	last := p[i+2:]
	if strings.HasPrefix(last, "They ") || strings.HasPrefix(last, "Their ") {
		return p[:i+1]
	}
	return p
}
