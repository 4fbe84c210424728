package stages

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"

	"github.com/impactbench/impactbench/internal/artifacts"
)

// Model output is decoded by hand rather than into structs: unknown keys
// must survive in key order (upstream passes them through), and each
// malformed item needs a precise message to feed back to the model.

// field is one key of a JSON object, in source order.
type field struct {
	key string
	raw json.RawMessage
}

// objectFields splits a JSON object into its fields in source order (a
// repeated key keeps its first position and its last value, like a decoder).
func objectFields(raw []byte) ([]field, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return nil, errors.New("not a JSON object")
	}
	var out []field
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, err
		}
		key, _ := tok.(string)
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, err
		}
		replaced := false
		for i := range out {
			if out[i].key == key {
				out[i].raw, replaced = v, true
			}
		}
		if !replaced {
			out = append(out, field{key, v})
		}
	}
	if _, err := dec.Token(); err != nil {
		return nil, err
	}
	return out, nil
}

func lookup(fs []field, key string) (json.RawMessage, bool) {
	for _, f := range fs {
		if f.key == key {
			return f.raw, true
		}
	}
	return nil, false
}

// arrayItems returns the elements of the array stored under key in a JSON object.
func arrayItems(raw []byte, key string) ([]json.RawMessage, error) {
	fs, err := objectFields(raw)
	if err != nil {
		return nil, err
	}
	v, ok := lookup(fs, key)
	if !ok || isNull(v) {
		return nil, fmt.Errorf("no %q array", key)
	}
	var items []json.RawMessage
	if err := json.Unmarshal(v, &items); err != nil {
		return nil, fmt.Errorf("%q must be an array", key)
	}
	return items, nil
}

func isNull(raw json.RawMessage) bool { return string(bytes.TrimSpace(raw)) == "null" }

// problems collects what is wrong with one item.
type problems []string

func (p *problems) addf(format string, args ...any) { *p = append(*p, fmt.Sprintf(format, args...)) }

// requiredString reads a non-empty string field (trimmed).
func requiredString(fs []field, key string, p *problems) string {
	raw, ok := lookup(fs, key)
	if !ok || isNull(raw) {
		p.addf("%s is missing", key)
		return ""
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		p.addf("%s must be a string", key)
		return ""
	}
	s = strings.TrimSpace(s)
	if s == "" {
		p.addf("%s is empty", key)
	}
	return s
}

// parseLandmarks checks a landmarks array: 1..maxLandmarks items, each with
// an integer turn in 1..turns and a non-empty instruction.
func parseLandmarks(raw json.RawMessage, ok bool, turns int, p *problems) []artifacts.Landmark {
	if !ok || isNull(raw) {
		p.addf("landmarks is missing")
		return nil
	}
	var items []json.RawMessage
	if err := json.Unmarshal(raw, &items); err != nil {
		p.addf("landmarks must be an array")
		return nil
	}
	if len(items) < 1 || len(items) > maxLandmarks {
		p.addf("landmarks has %d items, want 1 to %d", len(items), maxLandmarks)
	}
	out := make([]artifacts.Landmark, 0, len(items))
	for i, it := range items {
		fs, err := objectFields(it)
		if err != nil {
			p.addf("landmarks[%d] must be an object", i)
			continue
		}
		var lp problems
		turn := 0
		if tr, ok := lookup(fs, "turn"); !ok || isNull(tr) {
			lp.addf("turn is missing")
		} else {
			var f float64
			if err := json.Unmarshal(tr, &f); err != nil || f != math.Trunc(f) {
				lp.addf("turn must be an integer, got %s", tr)
			} else if f < 1 || f > float64(turns) {
				lp.addf("turn %v is outside 1..%d", f, turns)
			} else {
				turn = int(f)
			}
		}
		instr := requiredString(fs, "instruction", &lp)
		for _, s := range lp {
			p.addf("landmarks[%d]: %s", i, s)
		}
		if len(lp) == 0 {
			out = append(out, artifacts.Landmark{Turn: turn, Instruction: instr})
		}
	}
	return out
}

// extraPairs keeps the fields not in known, in order, as compact raw JSON.
func extraPairs(fs []field, known map[string]bool) []artifacts.Pair {
	var out []artifacts.Pair
	for _, f := range fs {
		if known[f.key] {
			continue
		}
		var buf bytes.Buffer
		if err := json.Compact(&buf, f.raw); err != nil {
			continue
		}
		out = append(out, artifacts.Pair{Key: f.key, Value: json.RawMessage(buf.Bytes())})
	}
	return out
}

// jsonText renders a decoded value compactly for messages.
func jsonText(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

// Schemas sent to providers that support constrained output. They are
// written out (not derived from Go types) because the decoded values are
// checked by hand; they follow the strict-mode rules (every property
// required, no additional properties).
func objSchema(props map[string]any) map[string]any {
	// Sorted: a schema is part of a request, and requests must be byte-stable
	// for the response cache.
	req := make([]any, 0, len(props))
	for _, k := range slices.Sorted(maps.Keys(props)) {
		req = append(req, k)
	}
	return map[string]any{"type": "object", "properties": props, "required": req, "additionalProperties": false}
}

var (
	stringSchema    = map[string]any{"type": "string"}
	booleanSchema   = map[string]any{"type": "boolean"}
	landmarksSchema = map[string]any{"type": "array", "items": objSchema(map[string]any{
		"turn": map[string]any{"type": "integer"}, "instruction": stringSchema})}
	metricsSchema = objSchema(map[string]any{"metrics": map[string]any{"type": "array", "items": objSchema(map[string]any{
		"name":       stringSchema,
		"type":       map[string]any{"type": "string", "enum": []any{"positive", "negative"}},
		"definition": stringSchema,
		"examples":   map[string]any{"type": "array", "items": stringSchema},
	})}})
	scenariosSchema = objSchema(map[string]any{"scenarios": map[string]any{"type": "array", "items": objSchema(map[string]any{
		"persona": stringSchema, "user_goal": stringSchema, "latent_adversarial_goal": stringSchema, "landmarks": landmarksSchema,
	})}})
	expandSchema   = objSchema(map[string]any{"user_persona": stringSchema, "landmarks": landmarksSchema})
	judgeSchema    = objSchema(map[string]any{"justification": stringSchema, "evidence": map[string]any{"type": "array", "items": stringSchema}, "present": booleanSchema})
	landmarkSchema = objSchema(map[string]any{"followed_landmarks": booleanSchema, "revealed_test": booleanSchema, "reason": stringSchema})
)
