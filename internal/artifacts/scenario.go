package artifacts

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// BaseIDOf returns the base scenario id of a variant id: the id without a
// trailing "_v…" segment (m01_s002_v01 → m01_s002). Ids without one are
// their own base.
func BaseIDOf(id string) string {
	for i := len(id) - 1; i > 0; i-- {
		if id[i] == '_' {
			if len(id) > i+1 && id[i+1] == 'v' {
				return id[:i]
			}
			break
		}
	}
	return id
}

// Get returns the value of an axis (string values as string, others as
// json.RawMessage or whatever was stored).
func (d Demographic) Get(axis string) (any, bool) {
	for _, p := range d {
		if p.Key == axis {
			return p.Value, true
		}
	}
	return nil, false
}

// ValueString renders an axis value as text: strings as-is, anything else
// as its compact JSON.
func ValueString(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case json.RawMessage:
		var buf bytes.Buffer
		if err := json.Compact(&buf, x); err == nil {
			return buf.String()
		}
		return string(x)
	case nil:
		return "null"
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

// PyValue writes the axes in order ({} when none).
func (d Demographic) PyValue() (any, error) {
	o := make(Object, len(d))
	copy(o, d)
	return o, nil
}

// MarshalJSON keeps axis order for encoding/json users too.
func (d Demographic) MarshalJSON() ([]byte, error) { return MarshalPy(d) }

// UnmarshalJSON reads an axis→value object in file order. String values
// become string; any other value is kept as json.RawMessage. null → nil.
func (d *Demographic) UnmarshalJSON(data []byte) error {
	if string(bytes.TrimSpace(data)) == "null" {
		*d = nil
		return nil
	}
	obj, err := decodeObjectRaw(data)
	if err != nil {
		return err
	}
	out := make(Demographic, 0, len(obj))
	for _, p := range obj {
		raw := p.Value.(json.RawMessage)
		var s string
		if len(raw) > 0 && raw[0] == '"' && json.Unmarshal(raw, &s) == nil {
			out = append(out, Pair{Key: p.Key, Value: s})
			continue
		}
		out = append(out, Pair{Key: p.Key, Value: raw})
	}
	*d = out
	return nil
}

// UnmarshalJSON accepts `turn` as an integer, an integral float (1.0) or a
// numeric string ("1"): LLM-written landmarks are passed through upstream
// unvalidated, so real files contain all three.
func (l *Landmark) UnmarshalJSON(data []byte) error {
	var raw struct {
		Turn        json.RawMessage `json:"turn"`
		Instruction string          `json:"instruction"`
	}
	if err := strictUnmarshal(data, &raw); err != nil {
		return err
	}
	turn, err := parseTurn(raw.Turn)
	if err != nil {
		return fmt.Errorf("field \"turn\": %w", err)
	}
	*l = Landmark{Turn: turn, Instruction: raw.Instruction}
	return nil
}

func parseTurn(raw json.RawMessage) (int, error) {
	t := bytes.TrimSpace(raw)
	if len(t) == 0 || string(t) == "null" {
		return 0, nil
	}
	if t[0] == '"' {
		var s string
		if err := json.Unmarshal(t, &s); err != nil {
			return 0, err
		}
		t = []byte(strings.TrimSpace(s))
	}
	f, err := strconv.ParseFloat(string(t), 64)
	if err != nil || f != math.Trunc(f) || math.Abs(f) > 1e9 {
		return 0, fmt.Errorf("expected an integer turn number, got %s", raw)
	}
	return int(f), nil
}

// scenarioKeys are the typed keys of a scenario row.
var scenarioKeys = map[string]bool{
	"id": true, "metric_id": true, "persona": true, "user_persona": true, "user_goal": true,
	"latent_adversarial_goal": true, "landmarks": true, "demographic": true, "target_system_prompt": true,
}

// PyValue writes upstream HEAD's key order: persona, user_goal,
// latent_adversarial_goal, landmarks, id, metric_id, user_persona (when
// set), demographic, target_system_prompt (when set), then Extra in order.
// persona is written when the key was read or the value is set. Extra keys
// that name a typed field are skipped: the typed field wins.
func (s Scenario) PyValue() (any, error) {
	o := make(Object, 0, 9+len(s.Extra))
	if s.HasPersona || s.Persona != "" {
		o = append(o, Pair{"persona", s.Persona})
	}
	landmarks := s.Landmarks
	if landmarks == nil {
		landmarks = []Landmark{}
	}
	o = append(o,
		Pair{"user_goal", s.UserGoal},
		Pair{"latent_adversarial_goal", s.LatentAdversarialGoal},
		Pair{"landmarks", landmarks},
		Pair{"id", s.ID},
		Pair{"metric_id", s.MetricID},
	)
	if s.UserPersona != "" {
		o = append(o, Pair{"user_persona", s.UserPersona})
	}
	o = append(o, Pair{"demographic", s.Demographic})
	if s.TargetSystemPrompt != "" {
		o = append(o, Pair{"target_system_prompt", s.TargetSystemPrompt})
	}
	for _, p := range s.Extra {
		if scenarioKeys[p.Key] {
			continue
		}
		if _, dup := o.Get(p.Key); dup {
			continue
		}
		o = append(o, p)
	}
	return o, nil
}

// MarshalJSON uses the same key order as PyValue.
func (s Scenario) MarshalJSON() ([]byte, error) { return MarshalPy(s) }

// UnmarshalJSON reads a scenario row: typed keys into fields (HasPersona
// records that "persona" was present), every other key into Extra in file
// order, values kept as json.RawMessage. Legacy keys (metric_name,
// metric_type, bench-pilot title/description/base_scenario_id/metric…)
// therefore survive a rewrite.
func (s *Scenario) UnmarshalJSON(data []byte) error {
	obj, err := decodeObjectRaw(data)
	if err != nil {
		return err
	}
	var out Scenario
	str := func(key string, raw json.RawMessage, dst *string) error {
		if err := json.Unmarshal(raw, dst); err != nil {
			return fieldErrf(key, "expected a string, got %s", describeRaw(bytes.TrimSpace(raw)))
		}
		return nil
	}
	for _, p := range obj {
		raw := p.Value.(json.RawMessage)
		var err error
		switch p.Key {
		case "id":
			err = str(p.Key, raw, &out.ID)
		case "metric_id":
			err = str(p.Key, raw, &out.MetricID)
		case "persona":
			out.HasPersona = true
			err = str(p.Key, raw, &out.Persona)
		case "user_persona":
			err = str(p.Key, raw, &out.UserPersona)
		case "user_goal":
			err = str(p.Key, raw, &out.UserGoal)
		case "latent_adversarial_goal":
			err = str(p.Key, raw, &out.LatentAdversarialGoal)
		case "target_system_prompt":
			err = str(p.Key, raw, &out.TargetSystemPrompt)
		case "landmarks":
			out.Landmarks, err = decodeLandmarks(raw)
		case "demographic":
			if err = out.Demographic.UnmarshalJSON(raw); err != nil {
				err = fmt.Errorf("field \"demographic\": %w", err)
			}
		default:
			out.Extra = append(out.Extra, Pair{Key: p.Key, Value: raw})
		}
		if err != nil {
			return err
		}
	}
	*s = out
	return nil
}

func decodeLandmarks(raw json.RawMessage) ([]Landmark, error) {
	t := bytes.TrimSpace(raw)
	if string(t) == "null" {
		return nil, nil
	}
	var items []json.RawMessage
	if err := json.Unmarshal(t, &items); err != nil {
		return nil, fmt.Errorf("field \"landmarks\": expected an array, got %s", describeRaw(t))
	}
	out := make([]Landmark, len(items))
	for i, it := range items {
		if err := out[i].UnmarshalJSON(it); err != nil {
			return nil, fmt.Errorf("field \"landmarks[%d]\": %w", i, err)
		}
	}
	return out, nil
}

// ReadScenarios reads scenarios.json (current and legacy layouts).
func ReadScenarios(path string) ([]Scenario, error) {
	var out []Scenario
	err := EachScenario(path, func(_ int, s Scenario) error {
		out = append(out, s)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// EachScenarioDemographic streams each scenario's id and demographic only,
// leaving the rest of the row undecoded: what aggregate needs, at a small
// fraction of EachScenario's allocations.
func EachScenarioDemographic(path string, fn func(i int, id string, d Demographic) error) error {
	ids := newKeySet()
	return eachRow(path, hintScenarios, func(i int, raw json.RawMessage) error {
		var row struct {
			ID          json.RawMessage `json:"id"`
			Demographic Demographic     `json:"demographic"`
		}
		if err := json.Unmarshal(raw, &row); err != nil {
			return decodeErr(err)
		}
		var id string
		if len(row.ID) > 0 && json.Unmarshal(row.ID, &id) != nil {
			return fieldErrf("id", "expected a string, got %s", describeRaw(bytes.TrimSpace(row.ID)))
		}
		if err := requireID(id); err != nil {
			return err
		}
		if err := uniqueScenario(ids, i, id); err != nil {
			return err
		}
		return fn(i, id, row.Demographic)
	})
}

// EachScenario streams scenarios.json row by row, so a phase that needs one
// scenario at a time never holds the whole file.
// Two rows with one id are refused: conversations and verdicts are keyed
// by scenario id.
func EachScenario(path string, fn func(i int, s Scenario) error) error {
	ids := newKeySet()
	return eachRow(path, hintScenarios, func(i int, raw json.RawMessage) error {
		var s Scenario
		err := s.UnmarshalJSON(raw)
		if err == nil {
			err = requireID(s.ID)
		}
		if err == nil {
			err = checkMetricID(s.MetricID)
		}
		if err == nil {
			err = uniqueScenario(ids, i, s.ID)
		}
		if err != nil {
			return err
		}
		return fn(i, s)
	})
}

func uniqueScenario(ids *keySet, i int, id string) error {
	if j := ids.add(id, i); j >= 0 {
		return fieldErrf("id", "duplicate scenario id %q (first in row %d); ids must be unique", id, j)
	}
	return nil
}

// WriteScenarios writes scenarios.json atomically in upstream's format.
func WriteScenarios(path string, rows []Scenario) error {
	return writeArray(path, rows)
}
