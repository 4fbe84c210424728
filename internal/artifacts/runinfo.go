package artifacts

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Temperature is a configured sampling temperature with three states, kept
// comparable so RunInfo is: unknown (the zero value, written as no key),
// provider default (null) and a value.
type Temperature struct {
	value float64
	state uint8 // 0 unknown, 1 provider default, 2 set
}

// TemperatureOf records t as configured: nil is the provider default.
func TemperatureOf(t *float64) Temperature {
	if t == nil {
		return Temperature{state: 1}
	}
	return Temperature{value: *t, state: 2}
}

// Get returns the value and whether one was set (false for the provider
// default and for unknown).
func (t Temperature) Get() (float64, bool) { return t.value, t.state == 2 }

// IsZero reports the unknown state, which omitzero leaves out.
func (t Temperature) IsZero() bool { return t.state == 0 }

// Equal lets go-cmp compare records (it cannot see unexported fields).
func (t Temperature) Equal(o Temperature) bool { return t == o }

// PyValue prints a Python float (1.0, not 1) or null.
func (t Temperature) PyValue() (any, error) {
	if t.state == 2 {
		return t.value, nil
	}
	return nil, nil
}

func (t Temperature) MarshalJSON() ([]byte, error) { return MarshalPy(t) }

func (t *Temperature) UnmarshalJSON(b []byte) error {
	if bytes.Equal(bytes.TrimSpace(b), []byte("null")) {
		*t = Temperature{state: 1}
		return nil
	}
	var f float64
	if err := json.Unmarshal(b, &f); err != nil {
		return fmt.Errorf("temperature must be a number or null, got %s", b)
	}
	*t = Temperature{value: f, state: 2}
	return nil
}

// SeedsNotSent prefixes the record of a role none of whose calls carried a
// seed.
const SeedsNotSent = "not sent: "

// Seeds records the sampling seeds one model's calls in a conversation
// carried, one entry per answered call in call order: a JSON array of
// integers (null for a call that carried none), or, when no call carried
// one, the string "not sent: <why>". Held as text so RunInfo stays
// comparable; the zero value is "not recorded" (no key).
type Seeds struct {
	list string // compact JSON array; "" when note is set or unknown
	note string // why no call carried a seed
}

// SeedsOf builds the record from the calls' seeds (nil: none sent) and, for
// each call without one, why (empty: the client did not say).
func SeedsOf(sent []*int64, why []string) Seeds {
	carried := false
	for _, s := range sent {
		carried = carried || s != nil
	}
	if len(sent) > 0 && !carried {
		return Seeds{note: reasons(why)}
	}
	var b strings.Builder
	b.WriteByte('[')
	for i, s := range sent {
		if i > 0 {
			b.WriteByte(',')
		}
		if s == nil {
			b.WriteString("null")
		} else {
			b.WriteString(strconv.FormatInt(*s, 10))
		}
	}
	b.WriteByte(']')
	return Seeds{list: b.String()}
}

// reasons joins the distinct reasons, in first-seen order.
func reasons(why []string) string {
	var out []string
	for _, w := range why {
		if w == "" {
			w = "the model client did not report one"
		}
		if !slices.Contains(out, w) {
			out = append(out, w)
		}
	}
	return strings.Join(out, "; ")
}

// Sent returns the seeds in call order (nil entries: that call carried
// none) and, when no call carried one, why.
func (s Seeds) Sent() ([]*int64, string) {
	if s.list == "" {
		return nil, s.note
	}
	var out []*int64
	_ = json.Unmarshal([]byte(s.list), &out) // list is only ever valid JSON of this shape
	return out, ""
}

// IsZero reports "not recorded", which omitzero leaves out.
func (s Seeds) IsZero() bool { return s.list == "" && s.note == "" }

// Equal lets go-cmp compare records (it cannot see unexported fields).
func (s Seeds) Equal(o Seeds) bool { return s == o }

func (s Seeds) PyValue() (any, error) {
	if s.list != "" {
		return json.RawMessage(s.list), nil
	}
	return SeedsNotSent + s.note, nil
}

func (s Seeds) MarshalJSON() ([]byte, error) { return MarshalPy(s) }

func (s *Seeds) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if len(b) > 0 && b[0] == '"' {
		var note string
		if err := json.Unmarshal(b, &note); err != nil {
			return err
		}
		note = strings.TrimPrefix(note, SeedsNotSent)
		if note == "" {
			return errors.New(`seeds: want an array of integers or "not sent: <why>", got ""`)
		}
		*s = Seeds{note: note}
		return nil
	}
	var list []*int64
	if err := json.Unmarshal(b, &list); err != nil || list == nil {
		return fmt.Errorf(`seeds: want an array of integers or "not sent: <why>", got %.40s`, b)
	}
	c := SeedsOf(list, nil)
	if c.list == "" { // every entry null: keep the nulls as written
		c = Seeds{list: "[" + strings.TrimSuffix(strings.Repeat("null,", len(list)), ",") + "]"}
	}
	*s = c
	return nil
}
