package config

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"time"

	"github.com/goccy/go-yaml/ast"
	"github.com/impactbench/impactbench/internal/fsx"
)

// SaveMetrics replaces the metrics list of benchmark.yaml (path may be the
// file or its directory) and leaves every other byte of the file alone:
// comments, key order, formatting and unknown keys survive. A missing
// metrics key is appended at the end.
//
// Each metric is written as id, name, type, definition, examples, then its
// Extra keys in order. The list is replaced as a whole: comments inside the
// old list, and unknown keys of an old metric that the new metric's Extra
// does not carry (e.g. mattersBecause), are gone — pass them in Extra to keep
// them. Comments at the key's own indentation after the list are kept (they
// introduce what follows).
//
// Metrics are validated first (see ValidateMetrics), the new text is
// re-parsed and must decode to exactly these metrics, and the file is
// replaced atomically with its mode kept.
func SaveMetrics(path string, metrics []Metric) error {
	file, err := benchmarkFile(path)
	if err != nil {
		return err
	}
	if real, err := filepath.EvalSymlinks(file); err == nil {
		file = real // rename would replace the link with a plain file
	}
	if err := ValidateMetrics(metrics); err != nil {
		var e *Error
		if errors.As(err, &e) {
			e.File = file
		}
		return err
	}
	src, err := readCapped(file, MaxBenchmarkBytes)
	if err != nil {
		return fmt.Errorf("save metrics: %w", err)
	}
	out, err := replaceMetrics(file, src, metrics)
	if err != nil {
		return err
	}
	if err := fsx.WriteFile(file, out, fsx.Shared); err != nil { // keeps the file's mode
		return fmt.Errorf("save metrics: %w", err)
	}
	return nil
}

// emptyWithComment matches the rest of a "metrics:" line whose value sits on
// that line and is empty, capturing a trailing comment to carry over.
var emptyWithComment = regexp.MustCompile(`^(?:null|Null|NULL|~|\[\s*\])?\s*(#.*)?$`)

func replaceMetrics(file string, src []byte, metrics []Metric) ([]byte, error) {
	ps := &problems{file: file}
	body, t, ok := parseYAML(src, ps)
	if !ok {
		return nil, ps.err()
	}
	nl := "\n"
	if bytes.Contains(src, []byte("\r\n")) {
		nl = "\r\n"
	}
	lines := strings.SplitAfter(string(src), "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}

	var out string
	switch top := body.(type) {
	case nil:
		out = appendMetrics(string(src), "", nl, metrics)
	case *ast.MappingNode:
		if top.IsFlowStyle {
			return nil, fmt.Errorf("%s: cannot rewrite metrics in a flow-style ({…}) file; write it in block style", file)
		}
		idx := -1
		for i, mv := range top.Values {
			if k, ok := t.deref(mv.Key).(*ast.StringNode); ok && k.Value == "metrics" {
				idx = i
			}
		}
		_, firstCol := nodePos(top)
		indent := strings.Repeat(" ", max(firstCol-1, 0))
		if idx < 0 {
			out = appendMetrics(string(src), indent, nl, metrics)
			break
		}
		var next int
		if idx+1 < len(top.Values) {
			next, _ = nodePos(top.Values[idx+1].Key)
		} else {
			next = len(lines) + 1
		}
		var err error
		out, err = spliceMetrics(file, lines, top.Values[idx], next, nl, metrics)
		if err != nil {
			return nil, err
		}
	default:
		return nil, fmt.Errorf("%s: the top level is not a mapping; cannot add metrics", file)
	}

	// Never write a file that would not read back as what we meant, or that
	// lost anything besides the old metrics.
	before, _ := decodeBenchmark(file, src)
	after, _ := decodeBenchmark(file, []byte(out))
	if !reflect.DeepEqual(canonMetrics(after.Metrics), canonMetrics(metrics)) ||
		!reflect.DeepEqual(withoutMetrics(before), withoutMetrics(after)) {
		return nil, fmt.Errorf("%s: internal error: the rewritten file would not read back as intended; file left untouched", file)
	}
	return []byte(out), nil
}

// withoutMetrics is the part of a benchmark SaveMetrics must not change.
func withoutMetrics(b *Benchmark) Benchmark {
	return Benchmark{Name: b.Name, Description: b.Description, Scenario: b.Scenario, Extra: b.Extra}
}

func appendMetrics(src, indent, nl string, metrics []Metric) string {
	var b strings.Builder
	b.WriteString(src)
	if src != "" && !strings.HasSuffix(src, "\n") {
		b.WriteString(nl)
	}
	b.WriteString(indent + "metrics:")
	if len(metrics) == 0 {
		b.WriteString(" []")
	}
	b.WriteString(nl)
	b.WriteString(renderMetrics(metrics, indent, nl))
	return b.String()
}

// spliceMetrics replaces the lines of the metrics entry. next is the line of
// the following top-level key (or one past the end).
func spliceMetrics(file string, lines []string, mv *ast.MappingValueNode, next int, nl string, metrics []Metric) (string, error) {
	keyLine, keyCol := nodePos(mv.Key)
	_, colonCol := tokenPos(mv.Start)
	if keyLine < 1 || keyLine > len(lines) || colonCol < keyCol {
		return "", fmt.Errorf("%s: cannot locate the metrics key; file left untouched", file)
	}
	runes := []rune(strings.TrimRight(lines[keyLine-1], "\r\n"))
	if colonCol > len(runes) || strings.TrimLeft(string(runes[:keyCol-1]), " ") != "" {
		return "", fmt.Errorf("%s:%d: metrics key is not at the start of its line; file left untouched", file, keyLine)
	}
	indent := string(runes[:keyCol-1])
	keyText := string(runes[:colonCol])
	rest := strings.TrimSpace(string(runes[colonCol:]))

	// The old value ends at the last line before the next key that is not
	// blank and not a comment at (or left of) the key's indentation: such
	// comments introduce what follows and stay.
	end := keyLine
	for ln := min(next, len(lines)+1) - 1; ln > keyLine; ln-- {
		text := strings.TrimRight(lines[ln-1], "\r\n")
		trimmed := strings.TrimLeft(text, " ")
		if strings.TrimSpace(text) == "" {
			continue
		}
		if strings.HasPrefix(trimmed, "#") && len(text)-len(trimmed) <= keyCol-1 {
			continue
		}
		if text == "..." || text == "---" || strings.HasPrefix(text, "... ") || strings.HasPrefix(text, "--- ") {
			continue
		}
		end = ln
		break
	}

	var b strings.Builder
	for _, l := range lines[:keyLine-1] {
		b.WriteString(l)
	}
	keepKeyLine := len(metrics) > 0 && (rest == "" || strings.HasPrefix(rest, "#"))
	if keepKeyLine {
		b.WriteString(strings.TrimRight(lines[keyLine-1], "\r\n") + nl)
	} else {
		b.WriteString(keyText)
		if len(metrics) == 0 {
			b.WriteString(" []")
		}
		if m := emptyWithComment.FindStringSubmatch(rest); m != nil && m[1] != "" {
			b.WriteString("  " + m[1])
		}
		b.WriteString(nl)
	}
	rendered := renderMetrics(metrics, indent, nl)
	if end == len(lines) && !strings.HasSuffix(lines[end-1], "\n") {
		// The list was the end of a file without a final newline; keep it so.
		rendered = strings.TrimSuffix(rendered, nl)
	}
	b.WriteString(rendered)
	for _, l := range lines[end:] {
		b.WriteString(l)
	}
	return b.String(), nil
}

// renderMetrics writes the list items (no "metrics:" line), each line
// prefixed with indent and ended with nl.
func renderMetrics(metrics []Metric, indent, nl string) string {
	w := &yamlLines{}
	for _, m := range metrics {
		examples := make([]any, len(m.Examples))
		for i, e := range m.Examples {
			examples[i] = e
		}
		kvs := []KV{
			{"id", m.ID}, {"name", m.Name}, {"type", string(m.Type)},
			{"definition", m.Definition}, {"examples", examples},
		}
		for _, kv := range m.Extra {
			v, err := normalizeValue(kv.Value)
			if err != nil {
				v = fmt.Sprint(kv.Value) // unreachable after ValidateMetrics
			}
			kvs = append(kvs, KV{kv.Key, v})
		}
		w.item(0, kvs)
	}
	var b strings.Builder
	for _, l := range w.lines {
		if l != "" {
			b.WriteString(indent)
			b.WriteString(l)
		}
		b.WriteString(nl)
	}
	return b.String()
}

// canonMetrics reduces metrics to comparable plain values: numbers as
// float64, maps as sorted KV lists, nil and empty lists alike.
func canonMetrics(ms []Metric) []any {
	out := make([]any, 0, len(ms))
	for _, m := range ms {
		var ex []any
		for _, e := range m.Examples {
			ex = append(ex, e)
		}
		var extra []any
		for _, kv := range m.Extra {
			v, err := normalizeValue(kv.Value)
			if err != nil {
				v = err.Error()
			}
			extra = append(extra, kv.Key, canonValue(v))
		}
		out = append(out, []any{m.ID, m.Name, string(m.Type), m.Definition, ex, extra})
	}
	return out
}

// BackupFile copies benchmark.yaml (path may be the file or its directory)
// to <file>.bak-<UTC time>, e.g. benchmark.yaml.bak-20260102T150405Z, before
// its metrics are replaced, and returns the backup's path. A backup never
// overwrites an older one: a second backup in the same second gets -2, -3, ….
func BackupFile(path string, now time.Time) (string, error) {
	file, err := benchmarkFile(path)
	if err != nil {
		return "", err
	}
	if real, err := filepath.EvalSymlinks(file); err == nil {
		file = real
	}
	st, err := os.Stat(file)
	if err != nil {
		return "", err
	}
	src, err := readCapped(file, MaxBenchmarkBytes)
	if err != nil {
		return "", err
	}
	base := file + ".bak-" + now.UTC().Format("20060102T150405Z")
	for i := 1; i < 1000; i++ {
		name := base
		if i > 1 {
			name = fmt.Sprintf("%s-%d", base, i)
		}
		err := writeNew(name, src, st.Mode().Perm())
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		return name, err
	}
	return "", fmt.Errorf("back up %s: too many backups named %s-*", file, base)
}

// writeNew creates path (failing if it exists), writes data and syncs it.
func writeNew(path string, data []byte, perm fs.FileMode) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		os.Remove(path)
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		os.Remove(path)
		return err
	}
	return f.Close()
}
