package site

import (
	"slices"
	"strings"

	"github.com/impactbench/impactbench/internal/artifacts"
	"github.com/impactbench/impactbench/internal/layout"
	"github.com/impactbench/impactbench/internal/study"
)

// trChunk is site/data/tr/<benchmark>/<model>.js: the model's published
// conversations of the benchmark's metrics, by published scenario id.
type trChunk struct {
	Bench string            `json:"bench"`
	Model int               `json:"model"`
	Rows  map[string]*trRec `json:"rows"`
}

// trRec is one conversation as the scenario page shows it: the verdict
// the site's pill shows, the judge's justification and quoted evidence,
// the transcript with the evidence's spans, and the scenario.
type trRec struct {
	Sample        int          `json:"sample"`
	Present       bool         `json:"present"`
	Passed        bool         `json:"passed"`
	Justification string       `json:"just"`
	Evidence      []evidence   `json:"ev"`
	Turns         [][2]string  `json:"t"`
	Spans         [][3]int     `json:"hl"` // [message, start, end) in UTF-16 units (artifacts.EvidenceSpans)
	Scenario      scenarioText `json:"sc"`
}

// evidence is one quote a judge cited; Message is the assistant message
// it was found in (nil: in none of them — shown, not marked).
type evidence struct {
	Quote   string `json:"q"`
	Message *int   `json:"msg"`
}

type scenarioText struct {
	Persona     string      `json:"persona,omitempty"`
	UserPersona string      `json:"user_persona,omitempty"` // only when it differs from persona
	Goal        string      `json:"goal,omitempty"`
	Latent      string      `json:"latent,omitempty"`
	Landmarks   [][2]any    `json:"landmarks,omitempty"`
	Demographic [][2]string `json:"demographic,omitempty"`
}

// Add records one published conversation: model (an index in the study's
// models) got verdict v on row, and c is the conversation judged.
func (b *Builder) Add(model int, row *study.ScenarioRow, v study.Verdict, c artifacts.Conversation) {
	k := trKey{bench: row.Bench, model: model}
	if b.tr[k] == nil {
		b.tr[k] = map[string]*trRec{}
	}
	rec := &trRec{Sample: v.Sample, Present: v.Present, Passed: v.Passed, Justification: v.Justification,
		Evidence: []evidence{}, Turns: turns(c.Transcript)}
	f := artifacts.NewQuoteFinder(c.Transcript)
	located, _ := f.Locate(v.Evidence)
	for _, q := range located {
		rec.Evidence = append(rec.Evidence, evidence{Quote: q.Text, Message: q.Message})
	}
	rec.Spans = artifacts.EvidenceSpans(c.Transcript, v.Evidence)
	if rec.Spans == nil {
		rec.Spans = [][3]int{}
	}
	if sc := row.Scenario; sc != nil {
		rec.Scenario = scenarioText{Persona: sc.Persona, Goal: sc.UserGoal, Latent: sc.LatentAdversarialGoal}
		if sc.UserPersona != sc.Persona {
			rec.Scenario.UserPersona = sc.UserPersona
		}
		for _, lm := range sc.Landmarks {
			rec.Scenario.Landmarks = append(rec.Scenario.Landmarks, [2]any{lm.Turn, lm.Instruction})
		}
		for _, p := range sc.Demographic {
			rec.Scenario.Demographic = append(rec.Scenario.Demographic, [2]string{p.Key, artifacts.ValueString(p.Value)})
		}
	}
	b.tr[k][row.ID] = rec
}

// ModelFiles returns the transcript chunks of one model (every benchmark)
// and forgets them: call it once all of the model's runs are read.
func (b *Builder) ModelFiles(model int) ([]File, error) {
	var keys []trKey
	for k := range b.tr {
		if k.model == model {
			keys = append(keys, k)
		}
	}
	slices.SortFunc(keys, func(a, b trKey) int { return strings.Compare(a.bench, b.bench) })
	var out []File
	for _, k := range keys {
		f, err := b.dataFile(layout.SiteTranscriptChunk(k.bench, b.res.Models[model].ID), trChunk{Bench: k.bench, Model: model, Rows: b.tr[k]})
		if err != nil {
			return nil, err
		}
		delete(b.tr, k)
		out = append(out, f)
	}
	return out, nil
}
