package config

import (
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/parser"
	"github.com/goccy/go-yaml/token"
)

// A small block-style YAML emitter for SaveMetrics. goccy's encoder is not
// used because we need control over quoting (every scalar is checked to
// read back identically, including under PyYAML's YAML 1.1 rules, which
// upstream tools apply to the same file) and over layout (indentless lists,
// like upstream's writer).

// yamlLines collects output lines at relative indentation 0.
type yamlLines struct{ lines []string }

func (w *yamlLines) add(s string) { w.lines = append(w.lines, s) }

func sp(n int) string { return strings.Repeat(" ", n) }

// keyed writes "key: value" at indentation ind.
func (w *yamlLines) keyed(ind int, key string, v any) {
	head := sp(ind) + formatKey(key) + ":"
	switch x := v.(type) {
	case []KV:
		if len(x) == 0 {
			w.add(head + " {}")
			return
		}
		w.add(head)
		for _, kv := range x {
			w.keyed(ind+2, kv.Key, kv.Value)
		}
	case []any:
		if len(x) == 0 {
			w.add(head + " []")
			return
		}
		w.add(head)
		for _, it := range x {
			w.seqItem(ind, it) // indentless, as upstream writes lists
		}
	default:
		w.scalar(head, ind, x)
	}
}

// seqItem writes one "- value" at indentation ind.
func (w *yamlLines) seqItem(ind int, v any) {
	switch x := v.(type) {
	case []KV:
		if len(x) == 0 {
			w.add(sp(ind) + "- {}")
			return
		}
		w.item(ind, x)
	case []any:
		if len(x) == 0 {
			w.add(sp(ind) + "- []")
			return
		}
		w.add(sp(ind) + "-")
		for _, it := range x {
			w.seqItem(ind+2, it)
		}
	default:
		w.scalar(sp(ind)+"-", ind, x)
	}
}

// item writes a mapping as a list item: the first key shares the dash's line.
func (w *yamlLines) item(ind int, kvs []KV) {
	start := len(w.lines)
	for _, kv := range kvs {
		w.keyed(ind+2, kv.Key, kv.Value)
	}
	w.lines[start] = sp(ind) + "- " + w.lines[start][ind+2:]
}

// scalar appends a scalar after head ("key:" or "-"); block scalars put
// their content at ind+2.
func (w *yamlLines) scalar(head string, ind int, v any) {
	switch x := v.(type) {
	case nil:
		w.add(head + " null")
	case bool:
		w.add(head + " " + strconv.FormatBool(x))
	case int64:
		w.add(head + " " + strconv.FormatInt(x, 10))
	case uint64:
		w.add(head + " " + strconv.FormatUint(x, 10))
	case float64:
		w.add(head + " " + formatFloat(x))
	case string:
		inline, header, block := formatString(x)
		if header == "" {
			if inline[0] == '"' {
				w.add(head + " " + inline)
				return
			}
			// Plain and single-quoted text folds like upstream's writer.
			lines := fold(inline, x, utf8.RuneCountInString(head)+2, ind+2)
			w.add(head + " " + lines[0])
			for _, l := range lines[1:] {
				w.add(sp(ind+2) + l)
			}
			return
		}
		w.add(head + " " + header)
		for _, l := range block {
			if l == "" {
				w.add("")
			} else {
				w.add(sp(ind+2) + l)
			}
		}
	default:
		w.add(head + " " + doubleQuote(fmt.Sprint(x)))
	}
}

func formatFloat(f float64) string {
	switch {
	case math.IsNaN(f):
		return ".nan"
	case math.IsInf(f, 1):
		return ".inf"
	case math.IsInf(f, -1):
		return "-.inf"
	case f == math.Trunc(f) && math.Abs(f) < 1<<53:
		// JSON-born numbers (gen_metrics output) are float64; 3 reads better than 3.0.
		return strconv.FormatFloat(f, 'f', -1, 64)
	}
	s := strconv.FormatFloat(f, 'g', -1, 64)
	if i := strings.IndexByte(s, 'e'); i >= 0 && !strings.Contains(s[:i], ".") {
		s = s[:i] + ".0" + s[i:] // YAML 1.1 needs the dot to see a float
	}
	return s
}

// foldWidth is where upstream's YAML writer (PyYAML) starts looking for a
// space to fold at.
const foldWidth = 80

// fold splits the rendered text of a plain or single-quoted scalar into
// lines the way PyYAML does: at a single space once more than foldWidth
// characters are on the line. The result is re-parsed; on any doubt the
// scalar stays on one line.
func fold(text, want string, startCol, contIndent int) []string {
	runes := []rune(text)
	if len(runes)+startCol <= foldWidth+1 {
		return []string{text}
	}
	var lines []string
	col, lineStart, byteAt := startCol, 0, 0 // col: 1-based column of runes[i]
	for i, r := range runes {
		if r == ' ' && col-1 > foldWidth && i > 0 && i+1 < len(runes) &&
			runes[i-1] != ' ' && runes[i+1] != ' ' {
			lines = append(lines, text[lineStart:byteAt])
			lineStart = byteAt + 1
			col = contIndent
		}
		byteAt += utf8.RuneLen(r)
		col++
	}
	lines = append(lines, text[lineStart:])
	if len(lines) == 1 {
		return lines
	}
	v, ok := probe("k: " + strings.Join(lines, "\n  ") + "\n")
	if n, isStr := v.(*ast.StringNode); !ok || !isStr || n.Value != want {
		return []string{text}
	}
	return lines
}

func formatKey(k string) string {
	if plainSafe(k) && readsBackPlain(k) {
		return k
	}
	return doubleQuote(k)
}

// formatString picks a style in upstream's order of preference — plain,
// single-quoted, then (for text with line breaks) a literal block, else
// double-quoted — so unchanged metrics are written as upstream wrote them.
// Every choice but double quotes is re-parsed to prove it round-trips.
func formatString(s string) (inline, header string, block []string) {
	if plainSafe(s) && readsBackPlain(s) {
		return s, "", nil
	}
	if q, ok := singleQuote(s); ok {
		return q, "", nil
	}
	if h, b, ok := literalBlock(s); ok {
		return "", h, b
	}
	return doubleQuote(s), "", nil
}

// singleQuote renders one-line printable text as 'text' with ' doubled.
func singleQuote(s string) (string, bool) {
	if !utf8.ValidString(s) {
		return "", false
	}
	for _, r := range s {
		if !unicode.IsGraphic(r) || r == '\uFEFF' {
			return "", false
		}
	}
	q := "'" + strings.ReplaceAll(s, "'", "''") + "'"
	v, ok := probe("k: " + q + "\n")
	if n, isStr := v.(*ast.StringNode); !ok || !isStr || n.Value != s {
		return "", false
	}
	return q, true
}

// plainSafe is deliberately conservative: anything a YAML 1.1 or 1.2 reader
// could take for another type, or that needs context to parse, is quoted.
func plainSafe(s string) bool {
	if s == "" || !utf8.ValidString(s) || strings.TrimSpace(s) != s {
		return false
	}
	for _, r := range s {
		if !unicode.IsGraphic(r) || r == '\uFEFF' {
			return false
		}
	}
	first, _ := utf8.DecodeRuneInString(s)
	if strings.ContainsRune("-?:,[]{}#&*!|>'\"%@`.+~=<", first) || unicode.IsDigit(first) {
		return false
	}
	if strings.Contains(s, ": ") || strings.Contains(s, " #") || strings.HasSuffix(s, ":") {
		return false
	}
	switch strings.ToLower(s) {
	case "null", "true", "false", "yes", "no", "on", "off", "y", "n":
		return false
	}
	return true
}

func readsBackPlain(s string) bool {
	v, ok := probe("k: " + s + "\n")
	if !ok {
		return false
	}
	n, ok := v.(*ast.StringNode)
	return ok && n.GetToken().Type == token.StringType && n.Value == s
}

// literalBlock renders s as "|" or "|-". Strings ending in several newlines
// would need "|+", which swallows blank lines that follow in the file, so
// they are double-quoted instead.
func literalBlock(s string) (string, []string, bool) {
	if !strings.Contains(s, "\n") || strings.HasSuffix(s, "\n\n") || !utf8.ValidString(s) {
		return "", nil, false
	}
	header := "|-"
	body := s
	if strings.HasSuffix(s, "\n") {
		header, body = "|", strings.TrimSuffix(s, "\n")
	}
	if strings.TrimSpace(body) == "" {
		return "", nil, false
	}
	lines := strings.Split(body, "\n")
	for _, l := range lines {
		if strings.HasPrefix(l, " ") || strings.TrimSpace(l) != l && strings.TrimSpace(l) == "" {
			return "", nil, false
		}
		for _, r := range l {
			if !unicode.IsGraphic(r) || r == '\uFEFF' {
				return "", nil, false
			}
		}
	}
	var doc strings.Builder
	doc.WriteString("k: " + header + "\n")
	for _, l := range lines {
		if l != "" {
			doc.WriteString("  " + l)
		}
		doc.WriteString("\n")
	}
	v, ok := probe(doc.String())
	if n, isLit := v.(*ast.LiteralNode); !ok || !isLit || n.Value.Value != s {
		return "", nil, false
	}
	return header, lines, true
}

// probe parses a one-key document and returns the value node.
func probe(doc string) (ast.Node, bool) {
	f, err := parser.ParseBytes([]byte(doc), 0)
	if err != nil || len(f.Docs) != 1 {
		return nil, false
	}
	m, ok := f.Docs[0].Body.(*ast.MappingNode)
	if !ok || len(m.Values) != 1 {
		return nil, false
	}
	return m.Values[0].Value, true
}

// doubleQuote escapes s as a YAML double-quoted scalar; it can express any
// valid UTF-8 string.
func doubleQuote(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch r {
		case '\\':
			b.WriteString(`\\`)
		case '"':
			b.WriteString(`\"`)
		case '\n':
			b.WriteString(`\n`)
		case '\t':
			b.WriteString(`\t`)
		case '\r':
			b.WriteString(`\r`)
		default:
			switch {
			case r == utf8.RuneError:
				b.WriteString(`\uFFFD`)
			case r == ' ' || unicode.IsGraphic(r) && r != '\uFEFF':
				b.WriteRune(r)
			case r <= 0xFFFF:
				fmt.Fprintf(&b, `\u%04X`, r)
			default:
				fmt.Fprintf(&b, `\U%08X`, r)
			}
		}
	}
	b.WriteByte('"')
	return b.String()
}

// normalizeValue turns a metric extra into what the emitter understands:
// nil, bool, int64, uint64, float64, string, []any, []KV (maps, keys sorted).
// Anything else goes through JSON, the shape gen_metrics values come in.
func normalizeValue(v any) (any, error) {
	return normalizeDepth(v, 0)
}

// normalizeDepth is normalizeValue of v found depth levels down.
func normalizeDepth(v any, depth int) (any, error) {
	if depth > maxDepth {
		return nil, fmt.Errorf("value nested too deeply")
	}
	switch x := v.(type) {
	case nil, bool, string, int64, uint64, float64:
		return x, nil
	case int, int8, int16, int32, uint, uint8, uint16, uint32, float32, json.Number:
		return widenNumber(x)
	case []KV:
		out := make([]KV, len(x))
		for i, kv := range x {
			nv, err := normalizeDepth(kv.Value, depth+1)
			if err != nil {
				return nil, err
			}
			out[i] = KV{kv.Key, nv}
		}
		return out, nil
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			nv, err := normalizeDepth(e, depth+1)
			if err != nil {
				return nil, err
			}
			out[i] = nv
		}
		return out, nil
	case []string:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = e
		}
		return out, nil
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		out := make([]KV, len(keys))
		for i, k := range keys {
			nv, err := normalizeDepth(x[k], depth+1)
			if err != nil {
				return nil, err
			}
			out[i] = KV{k, nv}
		}
		return out, nil
	}
	return normalizeOther(v, depth)
}

// widenNumber is number v as an int64, uint64 or float64: signed integers
// widen to int64, unsigned ones to uint64, float32 to float64, and a
// json.Number to an int64 when it is one, else a float64.
func widenNumber(v any) (any, error) {
	switch x := v.(type) {
	case int:
		return int64(x), nil
	case int8:
		return int64(x), nil
	case int16:
		return int64(x), nil
	case int32:
		return int64(x), nil
	case uint:
		return uint64(x), nil
	case uint8:
		return uint64(x), nil
	case uint16:
		return uint64(x), nil
	case uint32:
		return uint64(x), nil
	case float32:
		return float64(x), nil
	case json.Number:
		if i, err := x.Int64(); err == nil {
			return i, nil
		}
		f, err := x.Float64()
		if err != nil {
			return nil, err
		}
		return f, nil
	}
	return v, nil // not called with other types
}

// normalizeOther normalizes v of a type the emitter does not know: a
// pointer by what it points to (nil: null), anything else through JSON.
func normalizeOther(v any, depth int) (any, error) {
	rv := reflect.ValueOf(v)
	if rv.Kind() == reflect.Pointer {
		if rv.IsNil() {
			return nil, nil
		}
		return normalizeDepth(rv.Elem().Interface(), depth+1)
	}
	data, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("cannot write a %T as YAML: %w", v, err)
	}
	dec := json.NewDecoder(strings.NewReader(string(data)))
	dec.UseNumber()
	var generic any
	if err := dec.Decode(&generic); err != nil {
		return nil, err
	}
	return normalizeDepth(generic, depth+1)
}

// canonValue maps numbers to float64 (and NaN to a marker) so values read
// back from YAML compare equal to the ones written.
func canonValue(v any) any {
	switch x := v.(type) {
	case int64:
		return float64(x)
	case uint64:
		return float64(x)
	case float64:
		if math.IsNaN(x) {
			return "NaN"
		}
		return x
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = canonValue(e)
		}
		return out
	case []KV:
		// Sorted: a map read back from YAML has no order to compare.
		sorted := slices.Clone(x)
		slices.SortStableFunc(sorted, func(a, b KV) int { return strings.Compare(a.Key, b.Key) })
		out := make([]any, 0, 2*len(x))
		for _, kv := range sorted {
			out = append(out, kv.Key, canonValue(kv.Value))
		}
		return out
	}
	return v
}
