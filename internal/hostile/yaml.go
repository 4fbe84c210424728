package hostile

import (
	"fmt"
	"strings"
)

// YAMLShapes are hostile YAML files of at most MaxInput bytes, each head
// (the start of a valid file of the kind read, ending in a line break)
// followed by the hostile part. Keys the hostile part adds start with
// free (config.yaml ignores keys starting with "x-"); refs is a key whose
// value the reader walks as a mapping (merge keys in it are followed), and
// list one it walks as any value (benchmark.yaml's unknown keys), "" when
// the reader has none.
//
// The files are made only when a generator is called: a child process
// measuring one of them never holds the others.
func YAMLShapes(head, free, mapKey, anyKey string) map[string]func() []byte {
	fill := func(prefix, unit, suffix string) func() []byte {
		return func() []byte {
			n := (MaxInput - len(head) - len(prefix) - len(suffix)) / len(unit)
			return []byte(head + prefix + strings.Repeat(unit, n) + suffix)
		}
	}
	lazy := func(f func() []byte) func() []byte { return f }
	out := map[string]func() []byte{
		"deep flow lists":      lazy(func() []byte { return nested(head+free+"deep: ", "[", "]", "", MaxInput-len(head)-20) }),
		"deep flow mappings":   lazy(func() []byte { return nested(head+free+"deep: ", "{a: ", "}", "1", MaxInput-len(head)-20) }),
		"compact nested lists": fill(free+"deep:\n", "- ", "x\n"),
		"deep block mappings":  lazy(func() []byte { return deepBlock(head + free + "deep:\n") }),
		"many keys":            lazy(func() []byte { return manyLines(head, free+"k%d: 1\n") }),
		"many nested keys":     lazy(func() []byte { return manyLines(head+free+"m:\n", "  k%d: 1\n") }),
		"many documents":       fill("", "--- # c\n", ""),
		"long keys, deep":      lazy(func() []byte { return longKeys(head, free) }),
		"flat flow list":       fill(free+"l: [", "1,", "1]\n"),
		"flat block list":      fill(free+"l:\n", "- 1\n", ""),
		"long line":            fill(free+"s: ", "x", "\n"),
		"long escaped string":  fill(free+"s: \"", `\u00e9`, "\"\n"),
		"comments":             fill("", "# c\n", ""),
		"many aliases":         fill(free+"a: &a 1\n"+free+"l: [", "*a,", "*a]\n"),
		"many anchors":         lazy(func() []byte { return manyLines(head+free+"l:\n", "  - &a%d 1\n") }),
		"self alias":           lazy(func() []byte { return []byte(head + free + "a: &a [*a, *a]\n") }),
	}
	if anyKey != "" {
		out["alias bomb (lists)"] = func() []byte { return listBomb(head, free, anyKey) }
	}
	if mapKey != "" {
		out["alias bomb (merge keys)"] = func() []byte { return mergeBomb(head, free, mapKey) }
	}
	return out
}

// nested is open×n + leaf + close×n after prefix, within size bytes.
func nested(prefix, open, close, leaf string, size int) []byte {
	n := (size - len(prefix) - len(leaf) - 1) / (len(open) + len(close))
	return []byte(prefix + strings.Repeat(open, n) + leaf + strings.Repeat(close, n) + "\n")
}

// deepBlock nests block mappings one indentation step per level.
func deepBlock(prefix string) []byte {
	var b strings.Builder
	b.WriteString(prefix)
	for i := 1; b.Len()+i+3 <= MaxInput; i++ {
		b.WriteString(strings.Repeat(" ", i) + "a:\n")
	}
	return []byte(b.String())
}

// manyLines repeats a line format with a counter.
func manyLines(prefix, format string) []byte {
	var b strings.Builder
	b.WriteString(prefix)
	for i := 0; ; i++ {
		line := fmt.Sprintf(format, i)
		if b.Len()+len(line) > MaxInput {
			return []byte(b.String())
		}
		b.WriteString(line)
	}
}

// longKeys nests 8 keys of 60 KB each, then fills with short keys under
// them: every node's path holds all 8 keys.
func longKeys(head, free string) []byte {
	var b strings.Builder
	b.WriteString(head)
	indent := ""
	for i := range 8 {
		key := free
		if i > 0 {
			key = ""
		}
		b.WriteString(indent + key + strings.Repeat(string(rune('a'+i)), 60_000) + ":\n")
		indent += " "
	}
	for i := 0; b.Len()+len(indent)+12 <= MaxInput; i++ {
		fmt.Fprintf(&b, "%sk%d: 1\n", indent, i)
	}
	return []byte(b.String())
}

// listBomb is "billion laughs": each anchor a list of ten aliases of the
// one before, the last one's value read as anyKey.
func listBomb(head, free, anyKey string) []byte {
	var b strings.Builder
	b.WriteString(head)
	b.WriteString(free + "l0: &l0 [lol, lol, lol, lol, lol, lol, lol, lol, lol, lol]\n")
	for i := 1; i <= 9; i++ {
		fmt.Fprintf(&b, "%sl%d: &l%d [%s]\n", free, i, i, strings.TrimSuffix(strings.Repeat(fmt.Sprintf("*l%d, ", i-1), 10), ", "))
	}
	fmt.Fprintf(&b, "%s: *l9\n", anyKey)
	return []byte(b.String())
}

// mergeBomb nests merge keys: each mapping merges the one before ten
// times, the last merged into mapKey.
func mergeBomb(head, free, mapKey string) []byte {
	var b strings.Builder
	b.WriteString(head)
	b.WriteString(free + "m0: &m0 {a: 1, b: 2, c: 3, d: 4, e: 5, f: 6, g: 7, h: 8, i: 9, j: 10}\n")
	for i := 1; i <= 9; i++ {
		fmt.Fprintf(&b, "%sm%d: &m%d {<<: [%s]}\n", free, i, i, strings.TrimSuffix(strings.Repeat(fmt.Sprintf("*m%d, ", i-1), 10), ", "))
	}
	fmt.Fprintf(&b, "%s: {<<: *m9}\n", mapKey)
	return []byte(b.String())
}
