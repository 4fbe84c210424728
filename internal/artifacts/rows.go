package artifacts

import (
	"bytes"
	"encoding/json"
	"fmt"
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
	if err := requireID(c.ID); err != nil {
		return Conversation{}, err
	}
	return c, nil
}

// EachConversation streams conversations.json row by row (memory stays flat
// however many transcripts the file holds).
func EachConversation(path string, fn func(i int, c Conversation) error) error {
	return eachRow(path, hintConversations, func(i int, raw json.RawMessage) error {
		c, err := DecodeConversation(raw)
		if err != nil {
			return fmt.Errorf("%w%s", err, hintConversations)
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
	if err := requireID(r.ID); err != nil {
		return Score{}, err
	}
	return Score(r), nil
}

// EachScore streams scores.json row by row.
func EachScore(path string, fn func(i int, s Score) error) error {
	return eachRow(path, hintScores, func(i int, raw json.RawMessage) error {
		s, err := DecodeScore(raw)
		if err != nil {
			return fmt.Errorf("%w%s", err, hintScores)
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
