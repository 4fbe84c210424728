package export

import (
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"slices"
	"strings"

	"github.com/impactbench/impactbench/internal/artifacts"
	"github.com/impactbench/impactbench/internal/config"
	"github.com/impactbench/impactbench/internal/human"
	"github.com/impactbench/impactbench/internal/layout"
)

// Judged is the judged table of one benchmark, ready to stream.
type Judged struct {
	src     Source
	axes    []string
	demos   map[string][]any // scenario id → value per axis (nil: axis absent)
	metrics map[string]config.Metric
	runs    []runDir
	cols    []Column
}

// OpenJudged reads what the judged table needs before its first row:
// scenarios.json's demographics (which fix the columns) and the list of
// scores files. Transcripts are read later, one row at a time.
func OpenJudged(src Source) (*Judged, error) {
	runs, err := listRuns(src)
	if err != nil {
		return nil, err
	}
	n := 0
	for _, r := range runs {
		n += len(r.scores)
	}
	if n == 0 {
		return nil, nothingYet("%s: no %s to export: run `impactbench evaluate %s` first", layout.Bench{Dir: src.Dir}.RunsDir(), layout.ScoresFile, src.name())
	}
	j := &Judged{src: src, runs: runs, metrics: map[string]config.Metric{}}
	for _, m := range src.Metrics {
		j.metrics[m.ID] = m
	}
	if err := j.readDemographics(); err != nil {
		return nil, err
	}
	j.cols = JudgedColumns(j.axes)
	return j, nil
}

// Columns returns the table's columns (the demographic ones included).
func (j *Judged) Columns() []Column { return j.cols }

// readDemographics collects the axes of scenarios.json in first-seen order
// and each scenario's value on each axis.
func (j *Judged) readDemographics() error {
	path := layout.Bench{Dir: j.src.Dir}.Scenarios()
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		return missing(path, "run `impactbench gen-scenarios "+j.src.name()+"` first")
	}
	type scen struct {
		id string
		d  artifacts.Demographic
	}
	var rows []scen
	index := map[string]int{}
	err := artifacts.EachScenarioDemographic(path, func(_ int, id string, d artifacts.Demographic) error {
		for _, p := range d {
			if _, ok := index[p.Key]; !ok {
				index[p.Key] = len(j.axes)
				j.axes = append(j.axes, p.Key)
			}
		}
		rows = append(rows, scen{id, d})
		return nil
	})
	if err != nil {
		return inputErr(err)
	}
	j.demos = make(map[string][]any, len(rows))
	for _, r := range rows {
		vals := make([]any, len(j.axes))
		for _, p := range r.d {
			vals[index[p.Key]] = demoValue(p.Value)
		}
		j.demos[r.id] = vals
	}
	return nil
}

// demoValue is an axis value as text; a JSON null is a null cell.
func demoValue(v any) any {
	if raw, ok := v.(json.RawMessage); ok && string(raw) == "null" {
		return nil
	}
	return artifacts.ValueString(v)
}

// convMeta is what the judged table takes from a conversations.json row.
type convMeta struct {
	convID string
	model  string
	status string
	reason string
	turns  int
	usage  artifacts.UsageRecord
	valid  *bool
	player string // a person who played the user ("" for simulated)
}

// metaOf is the metadata of a conversation.
func metaOf(c artifacts.Conversation) convMeta {
	m := convMeta{convID: c.ConvID, status: c.Status, reason: c.StatusReason, turns: userTurns(c.Transcript), usage: c.Usage}
	if c.Run != nil {
		m.model = c.Run.TargetModel
	}
	if c.Validity != nil {
		m.valid = c.Validity.Valid
	}
	return m
}

// readConversations streams a target's conversations.json, keeping each
// row's metadata and dropping its transcript.
func (j *Judged) readConversations(rd runDir) (map[string]convMeta, error) {
	if !isFile(rd.conversations) {
		return nil, missing(rd.conversations, "run `impactbench simulate "+j.src.name()+" "+rd.target+"` first")
	}
	out := map[string]convMeta{}
	err := artifacts.EachConversation(rd.conversations, func(_ int, c artifacts.Conversation) error {
		out[rowKey(c.ID, c.Sample)] = metaOf(c)
		return nil
	})
	return out, inputErr(err)
}

func userTurns(ts []artifacts.Turn) int {
	n := 0
	for _, t := range ts {
		if t.Role == "user" {
			n++
		}
	}
	return n
}

// Each streams the table's rows to sink. An error reading an input is an
// *InputError; an error from sink is returned as it is.
func (j *Judged) Each(sink Sink) error {
	row := make(Row, len(j.cols))
	for _, rd := range j.runs {
		if len(rd.scores) > 0 {
			convs, err := j.readConversations(rd)
			if err != nil {
				return err
			}
			for _, sf := range rd.scores {
				err := artifacts.EachScore(sf.path, func(_ int, s artifacts.Score) error {
					return j.emit(sink, row, rd.target, sf, s, convs)
				})
				if err != nil {
					return inputErr(err)
				}
			}
		}
		if err := j.eachHuman(sink, row, rd.target); err != nil {
			return err
		}
	}
	return nil
}

// eachHuman emits the conversations people played against target: judged
// ones with their verdicts, the others (ended, or still being played: a
// draft) with null ones.
func (j *Judged) eachHuman(sink Sink, row Row, target string) error {
	convs, scores, err := human.Open(j.src.Dir).List(target)
	if err != nil {
		return inputErr(err)
	}
	run := layout.Bench{Dir: j.src.Dir}.Run(target)
	sf := scoresFile{rel: run.Rel(run.HumanScores()), panel: j.src.Judges}
	byConv := map[string]artifacts.Score{}
	for _, s := range scores {
		byConv[s.ConvID] = s.Score
	}
	for _, c := range convs {
		meta := metaOf(c.Conversation)
		meta.player = c.Player
		if meta.status == "" {
			meta.status = c.State // playing: a draft
		}
		m := map[string]convMeta{rowKey(c.ID, c.Sample): meta}
		s, judged := byConv[c.ConvID]
		if !judged {
			why := "not judged yet: the conversation ended, and its verdict was not made"
			if c.State == human.Playing {
				why = "not judged yet: still being played (a draft)"
			}
			s = artifacts.Score{ID: c.ID, MetricID: c.MetricID, TargetModel: target, Sample: c.Sample, ConvID: c.ConvID, NullReason: why}
			sf.panel = nil // no judge saw it
		} else {
			sf.panel = j.src.Judges
		}
		if err := j.emit(sink, row, target, sf, s, m); err != nil {
			return err
		}
	}
	return nil
}

// verdict is one judge's part of a score row.
type verdict struct {
	judge      any // string or nil
	present    *bool
	passed     *bool
	nullReason string
	repairs    []string // what it took to read this judge's verdict
}

// Positions in the judged table's tail (the columns after the
// demographic ones); judgedTail lists them in this order.
const (
	tSample = iota
	tConvID
	tSource
	tPlayer
	tStatus
	tReason
	tTurns
	tScoresFile
	tJudge
	tPresent
	tPassed
	tNullReason
	tValid
	tConvUsage             // conv_cost, conv_input/output/cached_input_tokens
	tJudgeUsage = iota + 3 // judge_cost, judge_input/output/cached_input_tokens
	tRepairs    = iota + 6 // after the judge_* columns
	tRefused               // target replies its provider stopped for safety
)

// emit writes one row per judge of score row s.
func (j *Judged) emit(sink Sink, row Row, target string, sf scoresFile, s artifacts.Score, convs map[string]convMeta) error {
	c, haveConv := convs[rowKey(s.ID, s.Sample)]
	m, haveMetric := j.metrics[s.MetricID]
	j.fillHead(row, target, s, c, m, haveMetric)
	tail := row[len(judgedHead)+len(j.axes):]
	fillTail(tail, target, sf, s, c, haveConv)
	for _, v := range verdicts(s, sf.panel, m, haveMetric) {
		tail[tJudge] = v.judge
		tail[tPresent] = boolOrNil(v.present)
		tail[tPassed] = boolOrNil(v.passed)
		tail[tNullReason] = strOrNil(v.nullReason)
		tail[tRepairs] = strOrNil(strings.Join(v.repairs, "; "))
		if err := sink.write(row); err != nil {
			return err
		}
	}
	return nil
}

// fillHead sets the columns up to and including the demographic ones.
func (j *Judged) fillHead(row Row, target string, s artifacts.Score, c convMeta, m config.Metric, haveMetric bool) {
	model := j.src.Models[target]
	if c.model != "" {
		model = c.model
	}
	row[0], row[1], row[2] = j.src.name(), target, strOrNil(model)
	row[3], row[4], row[5] = s.MetricID, nil, nil
	if haveMetric {
		row[4], row[5] = m.Name, string(m.Type)
	}
	row[6], row[7] = artifacts.BaseIDOf(s.ID), s.ID
	demo := j.demos[s.ID] // nil for a scenario not in scenarios.json
	for i := range j.axes {
		row[len(judgedHead)+i] = nil
		if demo != nil {
			row[len(judgedHead)+i] = demo[i]
		}
	}
}

// fillTail sets the columns after the demographic ones, but for the
// per-judge ones.
func fillTail(t Row, target string, sf scoresFile, s artifacts.Score, c convMeta, haveConv bool) {
	convID := s.ConvID
	if convID == "" {
		convID = c.convID
	}
	t[tSample], t[tConvID] = int64(s.Sample), convIDOf(convID, s.ID, target, s.Sample)
	t[tSource], t[tPlayer] = SourceSimulated, nil
	if c.player != "" {
		t[tSource], t[tPlayer] = SourceHuman, c.player
	}
	t[tStatus], t[tReason], t[tTurns] = nil, nil, nil
	t[tScoresFile] = sf.rel
	valid := s.Valid
	if valid == nil {
		valid = c.valid
	}
	t[tValid] = boolOrNil(valid)
	setUsage(t[tConvUsage:tConvUsage+4], nil)
	if haveConv {
		t[tStatus], t[tReason], t[tTurns] = strOrNil(c.status), strOrNil(c.reason), int64(c.turns)
		setUsage(t[tConvUsage:tConvUsage+4], &c.usage)
	}
	setUsage(t[tJudgeUsage:tJudgeUsage+4], s.Usage)
	t[tRefused] = int64(refusedReplies(s.Refused))
}

// refusedReplies counts the distinct transcript indices of a score row's
// refused (a hand-edited row may repeat one), as results.json does.
func refusedReplies(refused []int) int {
	if len(refused) == 0 {
		return 0
	}
	return len(slices.Compact(slices.Sorted(slices.Values(refused))))
}

// setUsage fills cost, input, output and cached input tokens (all null
// without a record; cost null when its price was unknown).
func setUsage(dst []any, u *artifacts.UsageRecord) {
	if u == nil {
		dst[0], dst[1], dst[2], dst[3] = nil, nil, nil, nil
		return
	}
	dst[0] = u.Cost
	if u.CostKnown != nil && !*u.CostKnown {
		dst[0] = nil
	}
	dst[1], dst[2], dst[3] = int64(u.InputTokens), int64(u.OutputTokens), int64(u.CachedInputTokens)
}

// verdicts splits a score row into one verdict per judge:
//   - a panel row carries each judge's verdict in `judges`;
//   - a row without them, from a single judge, is that judge's verdict;
//   - a row without them and without a verdict, from a panel, is a
//     conversation no judge saw (failed, budget-stopped, judge error): each
//     panel member gets a null verdict with the row's reason, so every judge
//     has a row for every conversation;
//   - a row with a verdict but no per-judge verdicts from what config says
//     is a panel was judged by someone config no longer names: judge null.
func verdicts(s artifacts.Score, panel []string, m config.Metric, haveMetric bool) []verdict {
	switch {
	case len(s.Judges) > 0:
		out := make([]verdict, len(s.Judges))
		for i, v := range s.Judges {
			out[i] = verdict{judge: strOrNil(v.Judge), present: v.Present, nullReason: v.NullReason, repairs: v.Repairs}
			if haveMetric {
				out[i].passed = passedOf(v.Present, m)
			}
		}
		return out
	case len(panel) == 1:
		return []verdict{{judge: strOrNil(panel[0]), present: s.Present, passed: s.Passed, nullReason: s.NullReason, repairs: s.Repairs}}
	case len(panel) > 1 && s.Present == nil:
		out := make([]verdict, len(panel))
		for i, p := range panel {
			out[i] = verdict{judge: strOrNil(p), nullReason: s.NullReason}
		}
		return out
	}
	return []verdict{{judge: nil, present: s.Present, passed: s.Passed, nullReason: s.NullReason, repairs: s.Repairs}}
}

// passedOf is a judge's verdict as a pass: the evaluate stage's rule
// (present passes a positive metric; anything else is negative).
func passedOf(present *bool, m config.Metric) *bool {
	if present == nil {
		return nil
	}
	p := *present
	if !strings.EqualFold(string(m.Type), string(config.Positive)) {
		p = !p
	}
	return &p
}

func boolOrNil(b *bool) any {
	if b == nil {
		return nil
	}
	return *b
}

func strOrNil(s string) any {
	if s == "" {
		return nil
	}
	return s
}
