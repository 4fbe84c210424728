package artifacts

import (
	"bytes"
	"encoding"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode/utf16"
	"unicode/utf8"
)

// This file writes JSON byte-for-byte like upstream's Python writer,
// json.dumps(obj, indent=2, ensure_ascii=True), so files we rewrite diff
// cleanly against files upstream wrote and upstream tooling can read ours.
//
// Mapping of Go values to Python ones:
//
//   - every float32/float64 is a Python float: printed with repr() rules
//     (shortest round-trip digits, "1.0" not "1", exponent form when the
//     decimal exponent is < -4 or >= 16: 1e-05, 1e+16). NaN and ±Inf are
//     rejected (Python would write the non-JSON tokens NaN/Infinity);
//   - every integer kind is a Python int;
//   - structs are dicts in field order, honouring json tags ("-", names,
//     omitempty, omitzero, string) and inlining embedded structs;
//   - Object, and any type implementing PyValuer, is a dict in the given order;
//   - maps are dicts with keys sorted (Go maps have no insertion order, so
//     sorted is the only reproducible choice);
//   - nil slices and nil maps print as [] and {} (Python has no nil list; a
//     value that must print null should be a pointer or interface);
//   - json.RawMessage, json.Number and json.Marshaler output are re-printed as
//     Python would after json.loads: "1" stays an int, "1.50" becomes 1.5,
//     duplicate keys keep the first position and the last value.

// PyValuer is implemented by types whose JSON shape is not their Go struct
// shape (ordered objects, conditional keys). MarshalPy encodes the returned
// value instead of the receiver; it takes precedence over json.Marshaler.
type PyValuer interface {
	PyValue() (any, error)
}

// Object is an ordered JSON object (Python dict with insertion order).
type Object []Pair

// Get returns the value of the first pair with that key.
func (o Object) Get(key string) (any, bool) {
	for _, p := range o {
		if p.Key == key {
			return p.Value, true
		}
	}
	return nil, false
}

// Set replaces the value of key in place, or appends it (Python dict semantics).
func (o *Object) Set(key string, v any) {
	for i := range *o {
		if (*o)[i].Key == key {
			(*o)[i].Value = v
			return
		}
	}
	*o = append(*o, Pair{Key: key, Value: v})
}

// MarshalJSON makes Object usable with encoding/json too (order preserved).
func (o Object) MarshalJSON() ([]byte, error) { return MarshalPy(o) }

// UnmarshalJSON decodes a JSON object keeping key order; values are kept as
// json.RawMessage so that re-encoding does not change ints into floats.
func (o *Object) UnmarshalJSON(data []byte) error {
	obj, err := decodeObjectRaw(data)
	if err != nil {
		return err
	}
	*o = obj
	return nil
}

// MarshalPy encodes v exactly as Python's json.dumps(v, indent=2,
// ensure_ascii=True) encodes the equivalent Python value (see the mapping
// above). There is no trailing newline.
func MarshalPy(v any) ([]byte, error) {
	e := &pyEncoder{}
	if err := e.encode(reflect.ValueOf(v), 0); err != nil {
		return nil, err
	}
	return e.buf, nil
}

// marshalPyAt encodes v as if it were nested depth levels deep (used by the
// streaming array writer for elements at depth 1).
func marshalPyAt(dst []byte, v any, depth int) ([]byte, error) {
	e := &pyEncoder{buf: dst}
	if err := e.encode(reflect.ValueOf(v), depth); err != nil {
		return dst, err
	}
	return e.buf, nil
}

type pyEncoder struct {
	buf []byte
	// w, when set, receives buf whenever it passes flushAt, so a large
	// document is never held whole (results.json at 100,000 scenarios).
	w   io.Writer
	err error
}

const flushAt = 64 << 10

// EncodePyTo is MarshalPy written to w in chunks.
func EncodePyTo(w io.Writer, v any) error {
	e := &pyEncoder{w: w, buf: make([]byte, 0, 2*flushAt)}
	if err := e.encode(reflect.ValueOf(v), 0); err != nil {
		return err
	}
	e.flush()
	return e.err
}

func (e *pyEncoder) flush() {
	if e.err == nil {
		_, e.err = e.w.Write(e.buf)
	}
	e.buf = e.buf[:0]
}

// maxDepth stops runaway recursion on cyclic pointer graphs.
const maxDepth = 1000

var (
	pyValuerType   = reflect.TypeFor[PyValuer]()
	marshalerType  = reflect.TypeFor[json.Marshaler]()
	textMarshType  = reflect.TypeFor[encoding.TextMarshaler]()
	rawMessageType = reflect.TypeFor[json.RawMessage]()
	numberType     = reflect.TypeFor[json.Number]()
	objectType     = reflect.TypeFor[Object]()
)

func (e *pyEncoder) newline(depth int) {
	if e.w != nil && len(e.buf) >= flushAt {
		e.flush()
	}
	e.buf = append(e.buf, '\n')
	for range depth {
		e.buf = append(e.buf, ' ', ' ')
	}
}

// implements reports whether v (or its address, when addressable) implements t,
// returning the value to call the method on.
func implements(v reflect.Value, t reflect.Type) (reflect.Value, bool) {
	if v.Type().Implements(t) {
		if v.Kind() == reflect.Pointer && v.IsNil() {
			return v, false
		}
		if v.Kind() == reflect.Interface && v.IsNil() {
			return v, false
		}
		return v, true
	}
	if v.Kind() != reflect.Pointer && v.CanAddr() && reflect.PointerTo(v.Type()).Implements(t) {
		return v.Addr(), true
	}
	return v, false
}

func (e *pyEncoder) encode(v reflect.Value, depth int) error {
	if depth > maxDepth {
		return errors.New("pyjson: value nested too deeply (cycle?)")
	}
	if !v.IsValid() {
		e.buf = append(e.buf, "null"...)
		return nil
	}
	t := v.Type()
	// Special types first, by exact type, before interface checks: Object
	// and json.RawMessage have MarshalJSON methods we must not loop through.
	switch t {
	case objectType:
		return e.encodeObject(v.Interface().(Object), depth)
	case rawMessageType:
		return e.encodeRaw(v.Bytes(), depth)
	case numberType:
		return e.encodeNumberLiteral(v.String())
	}
	if done, err := e.encodeMarshaler(v, depth); done {
		return err
	}
	switch v.Kind() {
	case reflect.Bool:
		if v.Bool() {
			e.buf = append(e.buf, "true"...)
		} else {
			e.buf = append(e.buf, "false"...)
		}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		e.buf = strconv.AppendInt(e.buf, v.Int(), 10)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		e.buf = strconv.AppendUint(e.buf, v.Uint(), 10)
	case reflect.Float32:
		return e.encodeFloat(v.Float(), 32)
	case reflect.Float64:
		return e.encodeFloat(v.Float(), 64)
	case reflect.String:
		e.buf = appendPyString(e.buf, v.String())
	case reflect.Interface, reflect.Pointer:
		if v.IsNil() {
			e.buf = append(e.buf, "null"...)
			return nil
		}
		return e.encode(v.Elem(), depth)
	case reflect.Slice:
		if t.Elem().Kind() == reflect.Uint8 && !t.Elem().Implements(marshalerType) && !t.Elem().Implements(pyValuerType) {
			// Like encoding/json: []byte is base64 text.
			e.buf = appendPyString(e.buf, base64.StdEncoding.EncodeToString(v.Bytes()))
			return nil
		}
		return e.encodeList(v, depth)
	case reflect.Array:
		return e.encodeList(v, depth)
	case reflect.Map:
		return e.encodeMap(v, depth)
	case reflect.Struct:
		return e.encodeStruct(v, depth)
	default:
		return fmt.Errorf("pyjson: unsupported type %s", t)
	}
	return nil
}

// encodeMarshaler encodes v through its own encoding when it has one (a
// PyValue, a MarshalJSON, a MarshalText, in that order of preference);
// done says whether it did.
func (e *pyEncoder) encodeMarshaler(v reflect.Value, depth int) (done bool, err error) {
	t := v.Type()
	if m, ok := implements(v, pyValuerType); ok {
		pv, err := m.Interface().(PyValuer).PyValue()
		if err != nil {
			return true, fmt.Errorf("pyjson: %s: %w", t, err)
		}
		return true, e.encode(reflect.ValueOf(pv), depth)
	}
	if m, ok := implements(v, marshalerType); ok {
		raw, err := m.Interface().(json.Marshaler).MarshalJSON()
		if err != nil {
			return true, fmt.Errorf("pyjson: %s: %w", t, err)
		}
		return true, e.encodeRaw(raw, depth)
	}
	if m, ok := implements(v, textMarshType); ok {
		txt, err := m.Interface().(encoding.TextMarshaler).MarshalText()
		if err != nil {
			return true, fmt.Errorf("pyjson: %s: %w", t, err)
		}
		e.buf = appendPyString(e.buf, string(txt))
		return true, nil
	}
	return false, nil
}

func (e *pyEncoder) encodeFloat(f float64, bits int) error {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return fmt.Errorf("pyjson: unsupported float value %v (not valid JSON)", f)
	}
	e.buf = AppendPyFloat(e.buf, f, bits)
	return nil
}

func (e *pyEncoder) encodeList(v reflect.Value, depth int) error {
	n := v.Len()
	if n == 0 {
		e.buf = append(e.buf, "[]"...)
		return nil
	}
	e.buf = append(e.buf, '[')
	for i := range n {
		if i > 0 {
			e.buf = append(e.buf, ',')
		}
		e.newline(depth + 1)
		if err := e.encode(v.Index(i), depth+1); err != nil {
			return err
		}
	}
	e.newline(depth)
	e.buf = append(e.buf, ']')
	return nil
}

// beginKey writes the separator, newline, indent and `"key": `.
func (e *pyEncoder) beginKey(i int, key string, depth int) {
	if i > 0 {
		e.buf = append(e.buf, ',')
	}
	e.newline(depth + 1)
	e.buf = appendPyString(e.buf, key)
	e.buf = append(e.buf, ':', ' ')
}

func (e *pyEncoder) encodeObject(o Object, depth int) error {
	if len(o) == 0 {
		e.buf = append(e.buf, "{}"...)
		return nil
	}
	e.buf = append(e.buf, '{')
	for i, p := range o {
		e.beginKey(i, p.Key, depth)
		if err := e.encode(reflect.ValueOf(p.Value), depth+1); err != nil {
			return err
		}
	}
	e.newline(depth)
	e.buf = append(e.buf, '}')
	return nil
}

func (e *pyEncoder) encodeMap(v reflect.Value, depth int) error {
	if v.Len() == 0 {
		e.buf = append(e.buf, "{}"...)
		return nil
	}
	type kv struct {
		key string
		val reflect.Value
	}
	kvs := make([]kv, 0, v.Len())
	it := v.MapRange()
	for it.Next() {
		k, err := mapKeyString(it.Key())
		if err != nil {
			return err
		}
		kvs = append(kvs, kv{k, it.Value()})
	}
	slices.SortFunc(kvs, func(a, b kv) int { return strings.Compare(a.key, b.key) })
	e.buf = append(e.buf, '{')
	for i, p := range kvs {
		e.beginKey(i, p.key, depth)
		if err := e.encode(p.val, depth+1); err != nil {
			return err
		}
	}
	e.newline(depth)
	e.buf = append(e.buf, '}')
	return nil
}

func mapKeyString(k reflect.Value) (string, error) {
	if k.Kind() == reflect.String {
		return k.String(), nil
	}
	if tm, ok := k.Interface().(encoding.TextMarshaler); ok {
		b, err := tm.MarshalText()
		return string(b), err
	}
	switch k.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return strconv.FormatInt(k.Int(), 10), nil
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return strconv.FormatUint(k.Uint(), 10), nil
	}
	return "", fmt.Errorf("pyjson: unsupported map key type %s", k.Type())
}

func (e *pyEncoder) encodeStruct(v reflect.Value, depth int) error {
	fields := cachedFields(v.Type())
	n := 0
	for _, f := range fields {
		fv, ok := fieldByIndex(v, f.index)
		if !ok {
			continue // nil embedded pointer: its fields are absent
		}
		if f.omitEmpty && isEmptyValue(fv) {
			continue
		}
		if f.omitZero && isZeroValue(fv) {
			continue
		}
		if n == 0 {
			e.buf = append(e.buf, '{')
		}
		e.beginKey(n, f.name, depth)
		n++
		if f.quoted {
			if err := e.encodeQuoted(fv, depth+1); err != nil {
				return err
			}
			continue
		}
		if err := e.encode(fv, depth+1); err != nil {
			return err
		}
	}
	if n == 0 {
		e.buf = append(e.buf, "{}"...)
		return nil
	}
	e.newline(depth)
	e.buf = append(e.buf, '}')
	return nil
}

// encodeQuoted implements the `,string` tag option like encoding/json does.
func (e *pyEncoder) encodeQuoted(v reflect.Value, depth int) error {
	for v.Kind() == reflect.Pointer {
		if v.IsNil() {
			e.buf = append(e.buf, "null"...)
			return nil
		}
		v = v.Elem()
	}
	switch v.Kind() {
	case reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr,
		reflect.Float32, reflect.Float64, reflect.String:
		sub := &pyEncoder{}
		if err := sub.encode(v, depth); err != nil {
			return err
		}
		e.buf = appendPyString(e.buf, string(sub.buf))
		return nil
	}
	return e.encode(v, depth)
}

func fieldByIndex(v reflect.Value, index []int) (reflect.Value, bool) {
	for i, x := range index {
		if i > 0 && v.Kind() == reflect.Pointer {
			if v.IsNil() {
				return reflect.Value{}, false
			}
			v = v.Elem()
		}
		v = v.Field(x)
	}
	return v, true
}

func isEmptyValue(v reflect.Value) bool {
	switch v.Kind() {
	case reflect.Array, reflect.Map, reflect.Slice, reflect.String:
		return v.Len() == 0
	case reflect.Bool:
		return !v.Bool()
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return v.Int() == 0
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return v.Uint() == 0
	case reflect.Float32, reflect.Float64:
		return v.Float() == 0
	case reflect.Interface, reflect.Pointer:
		return v.IsNil()
	}
	return false
}

type isZeroer interface{ IsZero() bool }

func isZeroValue(v reflect.Value) bool {
	if z, ok := v.Interface().(isZeroer); ok {
		if (v.Kind() == reflect.Pointer || v.Kind() == reflect.Interface) && v.IsNil() {
			return true
		}
		return z.IsZero()
	}
	return v.IsZero()
}

type structField struct {
	name      string
	index     []int
	omitEmpty bool
	omitZero  bool
	quoted    bool
	tagged    bool
	depth     int
}

var fieldCache sync.Map // reflect.Type → []structField

func cachedFields(t reflect.Type) []structField {
	if f, ok := fieldCache.Load(t); ok {
		return f.([]structField)
	}
	f := typeFields(t)
	fieldCache.Store(t, f)
	return f
}

// typeFields lists the JSON fields of a struct in encoding order, inlining
// untagged embedded structs. On a name clash the shallower field wins, and
// at equal depth a tagged field beats an untagged one (encoding/json's rule
// minus its "drop both when ambiguous" case, which never arises in our types).
func typeFields(t reflect.Type) []structField {
	var out []structField
	var walk func(t reflect.Type, index []int, depth int, seen map[reflect.Type]bool)
	walk = func(t reflect.Type, index []int, depth int, seen map[reflect.Type]bool) {
		if seen[t] {
			return
		}
		seen[t] = true
		defer delete(seen, t)
		for i := range t.NumField() {
			sf := t.Field(i)
			tag := sf.Tag.Get("json")
			if tag == "-" {
				continue
			}
			name, opts, _ := strings.Cut(tag, ",")
			idx := append(slices.Clone(index), i)
			if sf.Anonymous && name == "" {
				ft := sf.Type
				if ft.Kind() == reflect.Pointer {
					ft = ft.Elem()
				}
				if ft.Kind() == reflect.Struct {
					walk(ft, idx, depth+1, seen)
					continue
				}
			}
			if !sf.IsExported() {
				continue
			}
			f := structField{name: name, index: idx, depth: depth, tagged: name != ""}
			if f.name == "" {
				f.name = sf.Name
			}
			for o := range strings.SplitSeq(opts, ",") {
				switch o {
				case "omitempty":
					f.omitEmpty = true
				case "omitzero":
					f.omitZero = true
				case "string":
					f.quoted = true
				}
			}
			out = append(out, f)
		}
	}
	walk(t, nil, 0, map[reflect.Type]bool{})
	// Resolve clashes keeping the first position of the winning field.
	best := map[string]int{}
	keep := make([]bool, len(out))
	for i, f := range out {
		j, ok := best[f.name]
		if !ok {
			best[f.name] = i
			keep[i] = true
			continue
		}
		g := out[j]
		if f.depth < g.depth || (f.depth == g.depth && f.tagged && !g.tagged) {
			keep[j] = false
			keep[i] = true
			best[f.name] = i
		}
	}
	var res []structField
	for i, f := range out {
		if keep[i] {
			res = append(res, f)
		}
	}
	// Order by struct position (index path), like encoding/json.
	slices.SortStableFunc(res, func(a, b structField) int { return slices.Compare(a.index, b.index) })
	return res
}

// encodeRaw re-prints arbitrary JSON text the way Python's
// json.dumps(json.loads(raw), indent=2) would.
func (e *pyEncoder) encodeRaw(raw []byte, depth int) error {
	v, err := parseOrdered(raw)
	if err != nil {
		return fmt.Errorf("pyjson: invalid raw JSON: %w", err)
	}
	return e.encode(reflect.ValueOf(v), depth)
}

// encodeNumberLiteral prints a JSON number as Python would after parsing it:
// literals with a fraction or exponent are floats, others ints.
func (e *pyEncoder) encodeNumberLiteral(s string) error {
	if s == "" {
		return errors.New("pyjson: empty json.Number")
	}
	if strings.ContainsAny(s, ".eE") {
		f, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return fmt.Errorf("pyjson: number %q: %w", s, err)
		}
		return e.encodeFloat(f, 64)
	}
	if !validIntLiteral(s) {
		return fmt.Errorf("pyjson: invalid number %q", s)
	}
	// Python ints are arbitrary precision: keep the digits, normalise -0.
	if strings.TrimLeft(s, "-0") == "" {
		s = "0"
	}
	e.buf = append(e.buf, s...)
	return nil
}

func validIntLiteral(s string) bool {
	s = strings.TrimPrefix(s, "-")
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// parseOrdered decodes JSON into Object / []any / json.Number / string /
// bool / nil, keeping key order (duplicate keys: first position, last value,
// as a Python dict built from the pairs).
func parseOrdered(data []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	v, err := parseValue(dec)
	if err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err == nil {
		return nil, errors.New("trailing data after JSON value")
	}
	return v, nil
}

func parseValue(dec *json.Decoder) (any, error) {
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	switch t := tok.(type) {
	case json.Delim:
		switch t {
		case '{':
			obj := Object{}
			var idx keyIndex
			for dec.More() {
				kt, err := dec.Token()
				if err != nil {
					return nil, err
				}
				val, err := parseValue(dec)
				if err != nil {
					return nil, err
				}
				idx.set(&obj, kt.(string), val)
			}
			if _, err := dec.Token(); err != nil {
				return nil, err
			}
			return obj, nil
		case '[':
			list := []any{}
			for dec.More() {
				val, err := parseValue(dec)
				if err != nil {
					return nil, err
				}
				list = append(list, val)
			}
			if _, err := dec.Token(); err != nil {
				return nil, err
			}
			return list, nil
		}
		return nil, fmt.Errorf("unexpected %v", t)
	default:
		return t, nil // json.Number, string, bool, nil
	}
}

// keyIndex makes building a large Object from decoded pairs linear:
// duplicate keys replace the value in place (Python dict semantics).
type keyIndex map[string]int

func (k *keyIndex) set(o *Object, key string, v any) {
	if *k == nil {
		*k = keyIndex{}
	}
	if i, ok := (*k)[key]; ok {
		(*o)[i].Value = v
		return
	}
	(*k)[key] = len(*o)
	*o = append(*o, Pair{Key: key, Value: v})
}

// decodeObjectRaw decodes a JSON object into ordered pairs whose values are
// json.RawMessage (so ints stay ints on re-encoding).
func decodeObjectRaw(data []byte) (Object, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return nil, fmt.Errorf("expected a JSON object, got %s", describeToken(tok))
	}
	obj := Object{}
	var idx keyIndex
	for dec.More() {
		kt, err := dec.Token()
		if err != nil {
			return nil, err
		}
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return nil, err
		}
		idx.set(&obj, kt.(string), raw)
	}
	if _, err := dec.Token(); err != nil {
		return nil, err
	}
	// Like Python's json.loads ("Extra data"), a second value after the
	// object is an error, not ignored: a file padded or concatenated after
	// its object would otherwise read as the object alone.
	end := dec.InputOffset()
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		// A syntax error's offset here would count from the object's end.
		rest := data[end:]
		return nil, &TrailingDataError{Offset: end + int64(len(rest)-len(bytes.TrimLeft(rest, " \t\r\n")))}
	}
	return obj, nil
}

// TrailingDataError is a JSON value followed by more than white space.
type TrailingDataError struct {
	Offset int64 // where the data after the value starts
}

func (e *TrailingDataError) Error() string {
	return fmt.Sprintf("unexpected data after the JSON object at byte %d", e.Offset)
}

// describeToken names a JSON token's kind for error messages.
func describeToken(tok json.Token) string {
	switch t := tok.(type) {
	case json.Delim:
		switch t {
		case '{':
			return "an object"
		case '[':
			return "an array"
		}
		return strconv.Quote(t.String())
	case string:
		return "a string"
	case float64, json.Number:
		return "a number"
	case bool:
		return "a boolean"
	case nil:
		return "null"
	}
	return fmt.Sprintf("%T", tok)
}

// AppendPyFloat appends Python's repr(float(f)) (f must be finite).
func AppendPyFloat(dst []byte, f float64, bits int) []byte {
	var tmp [32]byte
	s := strconv.AppendFloat(tmp[:0], f, 'e', -1, bits) // [-]d[.ddd]e±XX
	neg := s[0] == '-'
	if neg {
		s = s[1:]
		dst = append(dst, '-')
	}
	epos := bytes.IndexByte(s, 'e')
	mant, expPart := s[:epos], s[epos+1:]
	exp, _ := strconv.Atoi(string(expPart))
	digits := make([]byte, 0, len(mant))
	for _, c := range mant {
		if c != '.' {
			digits = append(digits, c)
		}
	}
	decpt := exp + 1 // value = 0.DIGITS × 10^decpt
	nd := len(digits)
	switch {
	case decpt <= -4 || decpt > 16:
		// Exponent form, as repr: 1e-05, 1.5e+16 (no ".0", ≥2 exponent digits).
		dst = append(dst, digits[0])
		if nd > 1 {
			dst = append(dst, '.')
			dst = append(dst, digits[1:]...)
		}
		dst = append(dst, 'e')
		if exp < 0 {
			dst = append(dst, '-')
			exp = -exp
		} else {
			dst = append(dst, '+')
		}
		if exp < 10 {
			dst = append(dst, '0')
		}
		dst = strconv.AppendInt(dst, int64(exp), 10)
	case decpt <= 0:
		dst = append(dst, '0', '.')
		for range -decpt {
			dst = append(dst, '0')
		}
		dst = append(dst, digits...)
	case decpt >= nd:
		dst = append(dst, digits...)
		for range decpt - nd {
			dst = append(dst, '0')
		}
		dst = append(dst, '.', '0')
	default:
		dst = append(dst, digits[:decpt]...)
		dst = append(dst, '.')
		dst = append(dst, digits[decpt:]...)
	}
	return dst
}

// FormatPyFloat returns Python's repr of f.
func FormatPyFloat(f float64) string { return string(AppendPyFloat(nil, f, 64)) }

const hexDigits = "0123456789abcdef"

// appendPyString appends s as a JSON string escaped like Python's
// ensure_ascii=True: only printable ASCII (space..~) is literal; \" \\ \b \f
// \n \r \t use short escapes; everything else is \uXXXX in lower-case hex,
// with surrogate pairs above U+FFFF. Invalid UTF-8 becomes \ufffd.
func appendPyString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			i++
			switch c {
			case '"':
				dst = append(dst, '\\', '"')
			case '\\':
				dst = append(dst, '\\', '\\')
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			default:
				if c < 0x20 || c == 0x7f {
					dst = appendU4(dst, rune(c))
				} else {
					dst = append(dst, c)
				}
			}
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		i += size
		if r > 0xFFFF {
			r1, r2 := utf16.EncodeRune(r)
			dst = appendU4(dst, r1)
			dst = appendU4(dst, r2)
			continue
		}
		dst = appendU4(dst, r) // includes RuneError for invalid bytes
	}
	return append(dst, '"')
}

func appendU4(dst []byte, r rune) []byte {
	return append(dst, '\\', 'u', hexDigits[r>>12&0xf], hexDigits[r>>8&0xf], hexDigits[r>>4&0xf], hexDigits[r&0xf])
}
