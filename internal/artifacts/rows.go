package artifacts

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path/filepath"
)

// convRow decodes a conversation row plus the legacy embedded target cfg.
// convFields is a distinct type so methods added to Conversation later
// cannot hijack decoding.
type convFields Conversation

type convRow struct {
	convFields
	Target json.RawMessage `json:"target"`
}

// DecodeConversation decodes one conversations.json row. Legacy layouts:
// `target: {id, …}` instead of target_model (TargetModel = target.id), no
// `_sample` (0), no `_usage` (zero), no conv_id (left empty for the caller
// to fill); embedded scenario fields and other extra keys are ignored.
func DecodeConversation(raw []byte) (Conversation, error) {
	var r convRow
	if err := strictUnmarshal(raw, &r); err != nil {
		return Conversation{}, err
	}
	c := Conversation(r.convFields)
	if c.TargetModel == "" && len(r.Target) > 0 {
		t := bytes.TrimSpace(r.Target)
		switch {
		case len(t) > 0 && t[0] == '{':
			var cfg struct {
				ID string `json:"id"`
			}
			if err := json.Unmarshal(t, &cfg); err != nil {
				return Conversation{}, fmt.Errorf("field \"target.id\": expected a string: %w", decodeErr(err))
			}
			c.TargetModel = cfg.ID
		case len(t) > 0 && t[0] == '"':
			_ = json.Unmarshal(t, &c.TargetModel) // a bare target name
		}
	}
	if err := checkConversation(&c); err != nil {
		return Conversation{}, err
	}
	return c, nil
}

// checkConversation holds the rules every conversation row must meet.
func checkConversation(c *Conversation) error {
	if err := requireID(c.ID); err != nil {
		return err
	}
	if c.MetricID == "" {
		return errMissingMetric
	}
	if err := checkMetricID(c.MetricID); err != nil {
		return err
	}
	if err := checkConvID(c.ConvID); err != nil {
		return err
	}
	// Upstream's rows never carry conv_id (it is a passthrough there); ours
	// always do, and carry status. One of ours without it was edited.
	if c.ConvID == "" && (c.Status != "" || c.Run != nil) {
		return fieldErrf("conv_id", "missing: every row impactbench writes has one (this row has status/run); restore it or re-run simulate")
	}
	if c.Sample < 0 {
		return fieldErrf("_sample", "must not be negative, got %d", c.Sample)
	}
	return nil
}

var errMissingMetric = fieldErrf("metric_id", `missing or empty: every row needs the id of its metric; fix or remove the row`)

// NewConversationChecker returns the checks EachConversation applies, for
// readers that decode rows themselves (the report): the row rules, and no
// conversation twice. target is the run directory's name.
func NewConversationChecker(target string) func(i int, c *Conversation) error {
	keys := newConvKeys(target)
	return func(i int, c *Conversation) error {
		if err := checkConversation(c); err != nil {
			return err
		}
		return keys.check(i, c)
	}
}

// NewScoreChecker returns the checks EachScore applies (see NewConversationChecker).
func NewScoreChecker() func(i int, s *Score) error {
	keys := newScoreKeys()
	return func(i int, s *Score) error {
		if err := checkScore(s); err != nil {
			return err
		}
		return keys.check(i, s)
	}
}

// NewScenarioChecker returns the id checks EachScenario applies.
func NewScenarioChecker() func(i int, id string) error {
	ids := newKeySet()
	return func(i int, id string) error {
		if err := requireID(id); err != nil {
			return err
		}
		return uniqueScenario(ids, i, id)
	}
}

// convKeys finds duplicated conversations in one file: the same conv_id,
// or the same scenario and sample twice.
type convKeys struct {
	target       string
	ids, samples *keySet
}

func newConvKeys(target string) convKeys { return convKeys{target, newKeySet(), newKeySet()} }

func (k convKeys) check(i int, c *Conversation) error {
	target := k.target
	cid := c.ConvID
	if cid == "" {
		cid = ConvID(c.ID, target, c.Sample)
	}
	if j := k.ids.add(cid, i); j >= 0 {
		return fieldErrf("conv_id", "duplicate conversation %q (first in row %d); remove one of the two rows", cid, j)
	}
	if j := k.samples.add(c.ID+"\x00"+itoa(c.Sample), i); j >= 0 {
		return fieldErrf("_sample", "scenario %q sample %d appears twice (first in row %d); remove one of the two rows", c.ID, c.Sample, j)
	}
	return nil
}

// EachConversation streams conversations.json row by row (memory stays flat
// however many transcripts the file holds).
// Duplicated rows are refused: the same conv_id, or the same scenario and
// sample twice.
func EachConversation(path string, fn func(i int, c Conversation) error) error {
	keys := newConvKeys(filepath.Base(filepath.Dir(path)))
	return eachRow(path, hintConversations, func(i int, raw json.RawMessage) error {
		c, err := DecodeConversation(raw)
		if err == nil {
			err = keys.check(i, &c)
		}
		if err != nil {
			return err
		}
		return fn(i, c)
	})
}

// ReadConversations reads a whole conversations.json.
func ReadConversations(path string) ([]Conversation, error) {
	var out []Conversation
	err := EachConversation(path, func(_ int, c Conversation) error {
		out = append(out, c)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// WriteConversations writes conversations.json atomically, streaming.
func WriteConversations(path string, rows []Conversation) error {
	return writeArray(path, rows)
}

type scoreFields Score

// DecodeScore decodes one scores.json row. Legacy keys (score, metric_name,
// metric_type, embedded scenario fields) are ignored; a missing sample is 0;
// present/passed may be null.
func DecodeScore(raw []byte) (Score, error) {
	var r scoreFields
	if err := strictUnmarshal(raw, &r); err != nil {
		return Score{}, err
	}
	s := Score(r)
	if err := checkScore(&s); err != nil {
		return Score{}, err
	}
	return s, nil
}

// checkScore holds the rules every scores.json row must meet.
func checkScore(s *Score) error {
	if err := requireID(s.ID); err != nil {
		return err
	}
	if s.MetricID == "" {
		return errMissingMetric
	}
	if err := checkMetricID(s.MetricID); err != nil {
		return err
	}
	if err := checkConvID(s.ConvID); err != nil {
		return err
	}
	if s.ConvID == "" && (s.Usage != nil || s.NullReason != "" || s.Judges != nil) {
		return fieldErrf("conv_id", "missing: every row impactbench writes has one (this row has _usage/null_reason/judges); restore it or re-run evaluate")
	}
	if s.Sample < 0 {
		return fieldErrf("sample", "must not be negative, got %d", s.Sample)
	}
	return nil
}

// scoreKeys finds duplicated verdicts in one scores.json: the same
// scenario, sample and metric twice (upstream's oldest files judged every
// metric per conversation, so one scenario and sample may hold several).
type scoreKeys struct{ rows, convs *keySet }

func newScoreKeys() scoreKeys { return scoreKeys{newKeySet(), newKeySet()} }

func (k scoreKeys) check(i int, s *Score) error {
	if j := k.rows.add(s.ID+"\x00"+itoa(s.Sample)+"\x00"+s.MetricID, i); j >= 0 {
		return fieldErrf("sample", "scenario %q sample %d (metric %s) is scored twice (first in row %d); remove one of the two rows", s.ID, s.Sample, s.MetricID, j)
	}
	if s.ConvID != "" {
		if j := k.convs.add(s.ConvID+"\x00"+s.MetricID, i); j >= 0 {
			return fieldErrf("conv_id", "conversation %q is scored twice (first in row %d); remove one of the two rows", s.ConvID, j)
		}
	}
	return nil
}

// EachScore streams scores.json row by row.
// Duplicated verdicts are refused (they would be counted twice).
func EachScore(path string, fn func(i int, s Score) error) error {
	keys := newScoreKeys()
	return eachRow(path, hintScores, func(i int, raw json.RawMessage) error {
		s, err := DecodeScore(raw)
		if err == nil {
			err = keys.check(i, &s)
		}
		if err != nil {
			return err
		}
		return fn(i, s)
	})
}

// ReadScores reads a whole scores.json.
func ReadScores(path string) ([]Score, error) {
	var out []Score
	err := EachScore(path, func(_ int, s Score) error {
		out = append(out, s)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// WriteScores writes scores.json atomically, streaming.
func WriteScores(path string, rows []Score) error {
	return writeArray(path, rows)
}
