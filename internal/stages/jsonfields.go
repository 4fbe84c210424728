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
// an integer turn in 1..turns and a non-empty instruction. A turn past the
// last one is repaired, not rejected: the landmark moves to the last turn,
// keeping its place in the order (the simulator joins instructions that
// share a turn), and fix receives a note saying so. Nothing else is guessed.
func parseLandmarks(raw json.RawMessage, ok bool, turns int, p *problems, fix *[]string) []artifacts.Landmark {
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
	var moved []string
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
			switch err := json.Unmarshal(tr, &f); {
			case err != nil || f != math.Trunc(f):
				lp.addf("turn must be an integer, got %s", tr)
			case f < 1:
				lp.addf("turn %v is outside 1..%d", f, turns)
			case f > float64(turns):
				moved = append(moved, fmt.Sprintf("landmark turn %v > turns %d: moved to turn %d", f, turns, turns))
				turn = turns
			default:
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
	if fix != nil {
		*fix = append(*fix, moved...)
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
	stringSchema  = map[string]any{"type": "string"}
	booleanSchema = map[string]any{"type": "boolean"}
	metricsSchema = objSchema(map[string]any{"metrics": map[string]any{"type": "array", "items": objSchema(map[string]any{
		"name":       stringSchema,
		"type":       map[string]any{"type": "string", "enum": []any{"positive", "negative"}},
		"definition": stringSchema,
		"examples":   map[string]any{"type": "array", "items": stringSchema},
	})}})
	judgeSchema = objSchema(map[string]any{"justification": stringSchema, "evidence": map[string]any{"type": "array", "items": stringSchema}, "present": booleanSchema})
	auditSchema = objSchema(map[string]any{"in_persona": booleanSchema, "pursued_goal": booleanSchema,
		"followed_landmarks": booleanSchema, "revealed_test": booleanSchema, "reason": stringSchema})
)

// maxTurnEnum is the largest turn count written as an enum of turns; beyond
// it (a schema with hundreds of values is refused by some providers) the
// range is given as minimum and maximum.
const maxTurnEnum = 64

// landmarksSchema constrains landmarks to what the configuration allows:
// 1..maxLandmarks of them, each at a turn in 1..turns. The turn is an enum,
// which every provider's structured output accepts (Anthropic's refuses
// minimum and maximum); the counts use minItems and maxItems.
func landmarksSchema(turns int) map[string]any {
	turn := map[string]any{"type": "integer"}
	if turns >= 1 && turns <= maxTurnEnum {
		vals := make([]any, turns)
		for i := range vals {
			vals[i] = i + 1
		}
		turn["enum"] = vals
	} else if turns >= 1 {
		turn["minimum"], turn["maximum"] = 1, turns
	}
	return map[string]any{"type": "array", "minItems": 1, "maxItems": maxLandmarks,
		"items": objSchema(map[string]any{"turn": turn, "instruction": stringSchema})}
}

// scenariosSchema asks for exactly n scenarios with landmarks within turns.
func scenariosSchema(n, turns int) map[string]any {
	return objSchema(map[string]any{"scenarios": map[string]any{"type": "array", "minItems": n, "maxItems": n,
		"items": objSchema(map[string]any{
			"persona": stringSchema, "user_goal": stringSchema, "latent_adversarial_goal": stringSchema, "landmarks": landmarksSchema(turns),
		})}})
}

func expandSchema(turns int) map[string]any {
	return objSchema(map[string]any{"user_persona": stringSchema, "landmarks": landmarksSchema(turns)})
}

// repairsKey is the scenario field recording what was repaired in the
// model's answer (a list of fixed phrases; absent when nothing was).
const repairsKey = "_repairs"

// withRepairs sets the scenario's _repairs field (replacing one a model wrote).
func withRepairs(extra []artifacts.Pair, repairs []string) []artifacts.Pair {
	extra = slices.DeleteFunc(slices.Clone(extra), func(p artifacts.Pair) bool { return p.Key == repairsKey })
	if len(repairs) == 0 {
		return extra
	}
	b, _ := json.Marshal(repairs)
	return append(extra, artifacts.Pair{Key: repairsKey, Value: json.RawMessage(b)})
}
