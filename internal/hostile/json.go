package hostile

import (
	"fmt"
	"strings"
)

// JSONShapes are hostile JSON values, each between prefix and suffix (the
// part of a valid file around the value a reader decodes) and at most
// MaxInput bytes in all. Like YAMLShapes, a file is made only when its
// generator is called.
func JSONShapes(prefix, suffix string) map[string]func() []byte {
	room := MaxInput - len(prefix) - len(suffix)
	wrap := func(s string) []byte { return []byte(prefix + s + suffix) }
	rep := func(open, unit, close string) func() []byte {
		return func() []byte {
			return wrap(open + strings.Repeat(unit, (room-len(open)-len(close))/len(unit)) + close)
		}
	}
	return map[string]func() []byte{
		"deep nesting": func() []byte {
			n := (room - 1) / 2
			return wrap(strings.Repeat("[", n) + strings.Repeat("]", n))
		},
		"deep objects": func() []byte {
			n := (room - 1) / 6
			return wrap(strings.Repeat(`{"a":`, n) + "1" + strings.Repeat("}", n))
		},
		"flat list":                 rep("[", "1,", "1]"),
		"flat list, a value a line": rep("[\n", "1,\n", "1\n]"),
		"small objects":             rep("[", "{},", "{}]"),
		"many keys":                 func() []byte { return wrap(numbered(`{"k%d":0,`, `"z":0}`, room)) },
		"duplicate keys":            rep("{", `"a":0,`, `"a":0}`),
		"long string":               rep(`"`, "x", `"`),
		"long escaped string":       rep(`"`, `\u00e9`, `"`),
		"not UTF-8":                 rep(`"`, "\xff", `"`),
		"long keys, deep": func() []byte {
			var b strings.Builder
			for i := range 8 {
				fmt.Fprintf(&b, `{"%s":`, strings.Repeat(string(rune('a'+i)), 60_000))
			}
			b.WriteString("[")
			tail := "1]" + strings.Repeat("}", 8)
			b.WriteString(strings.Repeat("1,", (room-b.Len()-len(tail))/2))
			b.WriteString(tail)
			return wrap(b.String())
		},
	}
}

// numbered is format(0) format(1) … within room, then last; format holds
// one %d and opens with what starts the value.
func numbered(format, last string, room int) string {
	var b strings.Builder
	b.WriteString(format[:1])
	format = format[1:]
	for i := 0; ; i++ {
		s := fmt.Sprintf(format, i)
		if b.Len()+len(s)+len(last) > room {
			break
		}
		b.WriteString(s)
	}
	b.WriteString(last)
	return b.String()
}
