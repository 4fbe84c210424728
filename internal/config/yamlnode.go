package config

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/lexer"
	"github.com/goccy/go-yaml/parser"
	"github.com/goccy/go-yaml/token"
)

// We walk goccy's AST ourselves instead of using its struct decoder because
// we need every problem (not the first), exact line:col for nested keys,
// per-field ${VAR} expansion and shapes the struct tags cannot express
// (evaluator_model as mapping or list, ordered demographics, durations).

// tree resolves anchors/aliases for one parsed document and records
// problems found while reading it.
type tree struct {
	ps      *problems
	anchors map[string]ast.Node
	bad     map[string]bool // fields that already have a type problem
	// reads counts node reads, aliases expanded (see spend).
	reads int
	// textProblem: a value was refused as not UTF-8 or too long.
	textProblem bool
	// fieldOnLine remembers which field each line's value belongs to, so a
	// problem found by line alone (bytes that are not UTF-8, which the
	// parser replaces) can still name its field.
	fieldOnLine map[int][]colField
}

type colField struct {
	col   int
	field string
}

// saw records that field's value starts at raw's position.
func (t *tree) saw(raw ast.Node, field string) {
	if t.fieldOnLine == nil {
		t.fieldOnLine = map[int][]colField{}
	}
	if line, col := nodePos(raw); line > 0 {
		t.fieldOnLine[line] = append(t.fieldOnLine[line], colField{col, field})
	}
}

// fieldAt is the field whose value starts last before line:col.
func (t *tree) fieldAt(line, col int) string {
	best, bestCol := "", -1
	for _, cf := range t.fieldOnLine[line] {
		if cf.col <= col && cf.col > bestCol {
			best, bestCol = cf.field, cf.col
		}
	}
	return best
}

// parseYAML parses src and returns the body of its single document (nil for
// an empty or comment-only file). A syntax error is recorded in ps.
func parseYAML(src []byte, ps *problems) (ast.Node, *tree, bool) {
	t := &tree{ps: ps, anchors: map[string]ast.Node{}, bad: map[string]bool{}}
	// goccy miscounts lines after a comment in CRLF files; YAML folds CRLF
	// to LF in values anyway, and the line count is unchanged, so positions
	// still match the original file.
	src = bytes.ReplaceAll(src, []byte("\r\n"), []byte("\n"))
	if line := countMarks(src); line > 0 {
		ps.add(line, 0, "", "the file has more than %d punctuation marks and lines: over the limit for one file", MaxYAMLMarks)
		return nil, t, false
	}
	tokens := lexer.Tokenize(string(src))
	if !checkShape(tokens, ps) {
		return nil, t, false
	}
	f, err := parser.Parse(tokens, 0)
	if err != nil {
		var ye yaml.Error
		if errors.As(err, &ye) {
			line, col := tokenPos(ye.GetToken())
			// GetMessage, not FormatError: the formatted version quotes source
			// lines, which may hold a literal API key.
			ps.add(line, col, "", "YAML syntax error: %s", ye.GetMessage())
		} else {
			ps.add(0, 0, "", "YAML syntax error: %v", err)
		}
		return nil, t, false
	}
	var body ast.Node
	for _, d := range f.Docs {
		if d == nil || isEmptyBody(d.Body) {
			continue
		}
		if body != nil {
			line, col := nodePos(d.Body)
			ps.add(line, col, "", "the file holds more than one YAML document (---); keep only one")
			return nil, t, false
		}
		body = d.Body
	}
	if body != nil {
		t.collectAnchors(body, 0)
	}
	return body, t, true
}

func isEmptyBody(n ast.Node) bool {
	if n == nil {
		return true
	}
	_, isComment := n.(*ast.CommentGroupNode)
	return isComment
}

const maxDepth = 100

func (t *tree) collectAnchors(n ast.Node, depth int) {
	if n == nil || depth > maxDepth {
		return
	}
	switch v := n.(type) {
	case *ast.AnchorNode:
		if v.Name != nil {
			t.anchors[v.Name.GetToken().Value] = v.Value
		}
		t.collectAnchors(v.Value, depth+1)
	case *ast.MappingNode:
		for _, mv := range v.Values {
			t.collectAnchors(mv.Value, depth+1)
		}
	case *ast.MappingValueNode:
		t.collectAnchors(v.Value, depth+1)
	case *ast.SequenceNode:
		for _, e := range v.Values {
			t.collectAnchors(e, depth+1)
		}
	case *ast.TagNode:
		t.collectAnchors(v.Value, depth+1)
	}
}

// deref follows anchors, aliases and tags to the node holding the value.
// Every read of a node goes through it, so it is where the reads are
// counted: past MaxYAMLExpanded (aliases of aliases of lists can stand for
// billions of values in a few lines) it records one problem, stops the
// file's problem list, and returns nil for every node, so that the rest of
// the walk ends at once.
func (t *tree) deref(n ast.Node) ast.Node {
	if !t.spend(n) {
		return nil
	}
	for range maxDepth {
		switch v := n.(type) {
		case *ast.AnchorNode:
			n = v.Value
		case *ast.AliasNode:
			if v.Value == nil {
				return nil
			}
			target, ok := t.anchors[v.Value.GetToken().Value]
			if !ok {
				return nil
			}
			n = target
		case *ast.TagNode:
			n = v.Value
		default:
			return n
		}
	}
	return nil
}

// spend counts one read of n against MaxYAMLExpanded.
func (t *tree) spend(n ast.Node) bool {
	if t.reads > MaxYAMLExpanded {
		return false
	}
	t.reads++
	if t.reads <= MaxYAMLExpanded {
		return true
	}
	line, col := nodePos(n)
	t.ps.add(line, col, "", "aliases make the file stand for more than %d values (an alias counts as every value it stands for): over the limit for one file", MaxYAMLExpanded)
	t.ps.closed = true // what the truncated walk would add is noise
	return false
}

func tokenPos(tk *token.Token) (int, int) {
	if tk == nil {
		return 0, 0
	}
	return tk.Position.Line, tk.Position.Column
}

// nodePos is where a node starts. For a block mapping goccy's token is the
// first ':', so we use the first key instead.
func nodePos(n ast.Node) (int, int) {
	switch v := n.(type) {
	case nil:
		return 0, 0
	case *ast.MappingNode:
		if !v.IsFlowStyle && len(v.Values) > 0 {
			return nodePos(v.Values[0].Key)
		}
	case *ast.MappingValueNode:
		return nodePos(v.Key)
	case *ast.LiteralNode:
		return tokenPos(v.Start)
	}
	return tokenPos(n.GetToken())
}

func isNull(n ast.Node) bool {
	if n == nil {
		return true
	}
	_, ok := n.(*ast.NullNode)
	return ok
}

// entry is one key of a mapping after merge keys are applied.
type entry struct {
	key   string
	kpos  [2]int   // key line, col
	value ast.Node // raw (not dereferenced) value
}

func (e entry) line() int { return e.kpos[0] }
func (e entry) col() int  { return e.kpos[1] }

// mapping returns the entries of a mapping node in document order, applying
// "<<" merge keys (explicit keys win). A null node is an empty mapping; any
// other non-mapping is a type problem and ok=false.
func (t *tree) mapping(raw ast.Node, field string) ([]entry, bool) {
	return t.mappingDepth(raw, field, 0)
}

func (t *tree) mappingDepth(raw ast.Node, field string, depth int) ([]entry, bool) {
	n := t.deref(raw)
	if isNull(n) {
		return nil, true
	}
	m, ok := n.(*ast.MappingNode)
	if !ok {
		t.typeProblem(raw, field, "a mapping (key: value lines)")
		return nil, false
	}
	if depth > maxDepth {
		return nil, false
	}
	var explicit, merged []entry
	seen := map[string]bool{}
	for _, mv := range m.Values {
		if mv.Key != nil && mv.Key.IsMergeKey() {
			merged = append(merged, t.mergeEntries(mv.Value, field, depth)...)
			continue
		}
		k, ok := t.keyString(mv.Key, field)
		if !ok {
			continue
		}
		line, col := nodePos(mv.Key)
		t.saw(mv.Key, joinField(field, k))
		explicit = append(explicit, entry{key: k, kpos: [2]int{line, col}, value: mv.Value})
		seen[k] = true
	}
	out := explicit
	for _, e := range merged {
		if !seen[e.key] {
			seen[e.key] = true
			out = append(out, e)
		}
	}
	return out, true
}

func (t *tree) mergeEntries(raw ast.Node, field string, depth int) []entry {
	n := t.deref(raw)
	if seq, ok := n.(*ast.SequenceNode); ok {
		var out []entry
		for _, v := range seq.Values {
			out = append(out, t.mergeEntries(v, field, depth+1)...)
		}
		return out
	}
	es, _ := t.mappingDepth(raw, field+".<<", depth+1)
	return es
}

func (t *tree) keyString(k ast.MapKeyNode, field string) (string, bool) {
	var n ast.Node = k
	if mk, ok := k.(*ast.MappingKeyNode); ok {
		n = mk.Value
	}
	n = t.deref(n)
	switch v := n.(type) {
	case *ast.StringNode:
		return v.Value, t.checkText(k, joinField(field, "(key)"), v.Value)
	case ast.ScalarNode:
		if tk := v.GetToken(); tk != nil {
			return tk.Value, t.checkText(k, joinField(field, "(key)"), tk.Value)
		}
	}
	line, col := nodePos(k)
	t.ps.add(line, col, field, "mapping keys must be plain words, not %s", describe(n))
	return "", false
}

// sequence returns the items of a list; null is an empty list.
func (t *tree) sequence(raw ast.Node, field string) ([]ast.Node, bool) {
	n := t.deref(raw)
	if isNull(n) {
		return nil, true
	}
	s, ok := n.(*ast.SequenceNode)
	if !ok {
		return nil, false
	}
	return s.Values, true
}

// describe names a node's kind for type-mismatch messages. Values are never
// quoted here: the node may be an API key.
func describe(n ast.Node) string {
	switch n.(type) {
	case nil, *ast.NullNode:
		return "null"
	case *ast.MappingNode:
		return "a mapping"
	case *ast.SequenceNode:
		return "a list"
	case *ast.StringNode, *ast.LiteralNode:
		return "a string"
	case *ast.IntegerNode:
		return "an integer"
	case *ast.FloatNode:
		return "a number"
	case *ast.InfinityNode:
		return "infinity" // "expected a number, got a number" said nothing
	case *ast.NanNode:
		return "NaN"
	case *ast.BoolNode:
		return "a boolean"
	}
	return "a " + n.Type().YAMLName()
}

// describeValue is describe plus the literal text for short scalars, for
// fields that cannot hold secrets.
func describeValue(n ast.Node) string {
	d := describe(n)
	switch v := n.(type) {
	case *ast.StringNode:
		s := v.Value
		if utf8.RuneCountInString(s) > 40 {
			s = string([]rune(s)[:40]) + "…"
		}
		return fmt.Sprintf("%s %q", d, s)
	case *ast.IntegerNode, *ast.FloatNode, *ast.BoolNode, *ast.InfinityNode, *ast.NanNode:
		return d + " (" + v.GetToken().Value + ")"
	}
	return d
}

func (t *tree) typeProblem(raw ast.Node, field, want string) {
	n := t.deref(raw)
	line, col := nodePos(raw)
	got := describe(n)
	// The whole file (field "") is never quoted: a file that is not a
	// mapping is not the file expected at all (a link to .env, say).
	if field != "" && !isSecretField(field) {
		got = describeValue(n)
	}
	t.ps.add(line, col, field, "expected %s, got %s", want, got)
	t.bad[field] = true
}

// isSecretField reports fields whose values must never be echoed.
func isSecretField(field string) bool {
	return strings.HasSuffix(field, "apikey") || strings.Contains(field, "extra_headers")
}

// scalarText returns the text of any scalar ("" for null). Numbers and
// booleans keep their source spelling, so "id: 007" stays "007".
func (t *tree) scalarText(raw ast.Node, field string) (string, bool) {
	t.saw(raw, field)
	n := t.deref(raw)
	switch v := n.(type) {
	case nil, *ast.NullNode:
		return "", true
	case *ast.StringNode:
		return v.Value, t.checkText(raw, field, v.Value)
	case *ast.LiteralNode:
		return v.Value.Value, t.checkText(raw, field, v.Value.Value)
	case *ast.IntegerNode, *ast.FloatNode, *ast.BoolNode, *ast.InfinityNode, *ast.NanNode:
		return v.GetToken().Value, true
	}
	t.typeProblem(raw, field, "a string")
	return "", false
}

func (t *tree) integer(raw ast.Node, field string) (int, bool) {
	n := t.deref(raw)
	if v, ok := n.(*ast.IntegerNode); ok {
		switch x := v.Value.(type) {
		case int64:
			if x >= math.MinInt && x <= math.MaxInt {
				return int(x), true
			}
		case uint64:
			if x <= math.MaxInt {
				return int(x), true
			}
		}
		line, col := nodePos(raw)
		t.ps.add(line, col, field, "integer %s is out of range", v.GetToken().Value)
		return 0, false
	}
	t.typeProblem(raw, field, "an integer")
	return 0, false
}

func (t *tree) uinteger(raw ast.Node, field string) (uint64, bool) {
	n := t.deref(raw)
	if v, ok := n.(*ast.IntegerNode); ok {
		switch x := v.Value.(type) {
		case int64:
			if x >= 0 {
				return uint64(x), true
			}
		case uint64:
			return x, true
		}
		line, col := nodePos(raw)
		t.ps.add(line, col, field, "must be a non-negative integer, got %s", v.GetToken().Value)
		return 0, false
	}
	t.typeProblem(raw, field, "a non-negative integer")
	return 0, false
}

func (t *tree) number(raw ast.Node, field string) (float64, bool) {
	n := t.deref(raw)
	switch v := n.(type) {
	case *ast.IntegerNode:
		switch x := v.Value.(type) {
		case int64:
			return float64(x), true
		case uint64:
			return float64(x), true
		}
	case *ast.FloatNode:
		return v.Value, true
	}
	t.typeProblem(raw, field, "a number")
	return 0, false
}

// yaml11Bool reads the extra spellings PyYAML (YAML 1.1) treats as
// booleans; upstream configs may use them.
func yaml11Bool(s string) (value, ok bool) {
	switch s {
	case "yes", "Yes", "YES", "on", "On", "ON":
		return true, true
	case "no", "No", "NO", "off", "Off", "OFF":
		return false, true
	}
	return false, false
}

func (t *tree) boolean(raw ast.Node, field string) (bool, bool) {
	n := t.deref(raw)
	switch v := n.(type) {
	case *ast.BoolNode:
		return v.Value, true
	case *ast.StringNode:
		if v.GetToken().Type == token.StringType {
			if b, ok := yaml11Bool(v.Value); ok {
				return b, true
			}
		}
	}
	t.typeProblem(raw, field, "true or false")
	return false, false
}

// duration reads a Go duration string ("90s", "1m30s") or a number of seconds.
func (t *tree) duration(raw ast.Node, field string) (time.Duration, bool) {
	n := t.deref(raw)
	line, col := nodePos(raw)
	switch v := n.(type) {
	case *ast.IntegerNode, *ast.FloatNode:
		secs, _ := t.number(raw, field)
		if math.Abs(secs) > math.MaxInt64/float64(time.Second) {
			t.ps.add(line, col, field, "duration %v s is out of range", secs)
			return 0, false
		}
		return time.Duration(secs * float64(time.Second)), true
	case *ast.StringNode:
		d, err := time.ParseDuration(strings.TrimSpace(v.Value))
		if err != nil {
			t.ps.add(line, col, field, "invalid duration %q: use a Go duration such as 90s, 1m30s or 500ms, or a number of seconds", v.Value)
			return 0, false
		}
		return d, true
	}
	t.typeProblem(raw, field, "a duration such as 90s, or a number of seconds")
	return 0, false
}

// value converts a node to plain Go values for metric extras: string, int,
// float64, bool, nil, map[string]any, []any.
func (t *tree) value(raw ast.Node, field string, depth int) (any, bool) {
	n := t.deref(raw)
	if depth > maxDepth {
		line, col := nodePos(raw)
		t.ps.add(line, col, field, "value nested too deeply")
		return nil, false
	}
	switch v := n.(type) {
	case nil, *ast.NullNode:
		return nil, true
	case *ast.StringNode:
		return v.Value, t.checkText(raw, field, v.Value)
	case *ast.LiteralNode:
		return v.Value.Value, t.checkText(raw, field, v.Value.Value)
	case *ast.BoolNode:
		return v.Value, true
	case *ast.IntegerNode:
		switch x := v.Value.(type) {
		case int64:
			if x >= math.MinInt && x <= math.MaxInt {
				return int(x), true
			}
			return x, true
		case uint64:
			if x <= math.MaxInt {
				return int(x), true
			}
			return x, true
		}
		return v.GetToken().Value, true
	case *ast.FloatNode:
		return v.Value, true
	case *ast.InfinityNode:
		return v.Value, true
	case *ast.NanNode:
		return math.NaN(), true
	case *ast.SequenceNode:
		out := make([]any, 0, len(v.Values))
		for i, e := range v.Values {
			x, ok := t.value(e, fmt.Sprintf("%s[%d]", field, i), depth+1)
			if !ok {
				return nil, false
			}
			out = append(out, x)
		}
		return out, true
	case *ast.MappingNode:
		es, ok := t.mappingDepth(raw, field, depth+1)
		if !ok {
			return nil, false
		}
		out := make(map[string]any, len(es))
		for _, e := range es {
			x, ok := t.value(e.value, field+"."+e.key, depth+1)
			if !ok {
				return nil, false
			}
			out[e.key] = x
		}
		return out, true
	}
	t.typeProblem(raw, field, "a YAML value")
	return nil, false
}

// foreign reports whether a file's top-level keys show it is not the kind
// of file expected (what, e.g. "models.yaml") — none of them is a known key
// or a near miss of one — and then records one problem that quotes none
// of them: such a file may be anything, such as a .env full of keys that a
// link put in the place of models.yaml. Keys starting with "x-" count as
// known (config.yaml's anchor holders).
func (t *tree) foreign(entries []entry, known []string, what string) bool {
	if len(entries) == 0 {
		return false
	}
	for _, e := range entries {
		if slices.Contains(known, e.key) || strings.HasPrefix(e.key, "x-") || suggest(e.key, known) != "" {
			return false
		}
	}
	line, col := entries[0].line(), entries[0].col()
	t.ps.add(line, col, "", "this is not a %s: none of its %d top-level keys is one of %s (the file's content is not shown)",
		what, len(entries), strings.Join(known, ", "))
	return true
}

// joinField builds key paths: joinField("run", "force") = "run.force".
func joinField(parent, key string) string {
	if parent == "" {
		return key
	}
	return parent + "." + key
}

func indexField(parent string, i int) string {
	return parent + "[" + strconv.Itoa(i) + "]"
}
