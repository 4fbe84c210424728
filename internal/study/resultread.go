package study

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// decodeResult decodes study.json element by element, checking each cell,
// pair, node and model as it is read and stopping at the first bad one. A
// study.json may come with a shared project; json.Unmarshal would first
// build every element of a list — a 1 MiB file of [1,1,1,…] under
// "cells" is half a million 200-byte cells — and only then report the
// first mismatch.
func decodeResult(in io.Reader, r *Result) error {
	dec := json.NewDecoder(in)
	if err := openDelim(dec, '{', "an object"); err != nil {
		return err
	}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return err
		}
		key, _ := tok.(string)
		if err := r.decodeField(dec, key); err != nil {
			return fmt.Errorf("%s: %w", key, err)
		}
	}
	if _, err := dec.Token(); err != nil {
		return err
	}
	// Data after the object (a second file appended, padding) is refused,
	// as json.Unmarshal refuses it.
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return fmt.Errorf("unexpected data after the JSON object at byte %d", dec.InputOffset())
	}
	return nil
}

func (r *Result) decodeField(dec *json.Decoder, key string) error {
	switch key {
	case "nodes":
		return decodeList(dec, &r.Nodes, func(n *Node) bool { return n != nil && n.ID != "" && n.Kind != "" })
	case "cells":
		return decodeList(dec, &r.Cells, func(c Cell) bool { return c.Node != "" && c.Age != "" && c.Model != "" })
	case "pairs":
		return decodeList(dec, &r.Pairs, func(p Pair) bool { return p.Node != "" && p.Age != "" && p.A != "" && p.B != "" })
	case "models":
		return decodeList(dec, &r.Models, func(m ModelInfo) bool { return m.ID != "" })
	case "version":
		return dec.Decode(&r.Version)
	case "conf":
		return dec.Decode(&r.Conf)
	case "methods":
		return dec.Decode(&r.Methods)
	case "ages":
		return dec.Decode(&r.Ages)
	case "judge_error":
		return dec.Decode(&r.JudgeError)
	case "warnings":
		return dec.Decode(&r.Warnings)
	}
	var skip json.RawMessage // unknown keys are ignored, as json.Unmarshal does
	return dec.Decode(&skip)
}

// decodeList decodes a JSON list (or null) element by element, refusing
// the first element ok rejects.
func decodeList[T any](dec *json.Decoder, out *[]T, ok func(T) bool) error {
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	if tok == nil {
		*out = nil
		return nil
	}
	if d, isDelim := tok.(json.Delim); !isDelim || d != '[' {
		return errors.New("expected a list")
	}
	for i := 0; dec.More(); i++ {
		var v T
		if err := dec.Decode(&v); err != nil {
			return fmt.Errorf("[%d]: %w", i, err)
		}
		if !ok(v) {
			return fmt.Errorf("[%d]: an entry without its required fields", i)
		}
		*out = append(*out, v)
	}
	_, err = dec.Token()
	return err
}

func openDelim(dec *json.Decoder, want json.Delim, what string) error {
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	if d, ok := tok.(json.Delim); !ok || d != want {
		return fmt.Errorf("expected %s", what)
	}
	return nil
}
