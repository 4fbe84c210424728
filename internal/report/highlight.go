package report

import (
	"cmp"
	"slices"
	"unicode/utf16"

	"github.com/impactbench/impactbench/internal/artifacts"
)

// Highlights is highlights for a score row: the viewer marks the same
// spans as the report, found the same way.
func Highlights(tr []artifacts.Turn, s *artifacts.Score) [][3]int {
	if s == nil {
		return nil
	}
	return highlights(tr, &scoreRec{Evidence: s.Evidence, Judges: s.Judges})
}

// highlights locates every quote the row's judges cited (the row's own
// evidence and each panel judge's) in the transcript's assistant messages,
// the same way the judge stage checked them (artifacts.QuoteFinder), and
// returns the spans to mark as [message index, start, end): offsets in
// UTF-16 code units, as JavaScript strings count them, overlapping spans
// merged. Quotes found nowhere are shown beside the verdict only.
func highlights(tr []artifacts.Turn, sc *scoreRec) [][3]int {
	var quotes []string
	add := func(ev []artifacts.Quote) {
		for _, q := range ev {
			if !slices.Contains(quotes, q.Text) {
				quotes = append(quotes, q.Text)
			}
		}
	}
	add(sc.Evidence)
	for _, j := range sc.Judges {
		add(j.Evidence)
	}
	if len(quotes) == 0 {
		return nil
	}
	f := artifacts.NewQuoteFinder(tr)
	var spans [][3]int // byte offsets until converted
	for _, q := range quotes {
		if m, s, e, ok := f.Find(q); ok {
			spans = append(spans, [3]int{m, s, e})
		}
	}
	slices.SortFunc(spans, func(a, b [3]int) int { return cmp.Or(cmp.Compare(a[0], b[0]), cmp.Compare(a[1], b[1])) })
	var out [][3]int
	for _, sp := range spans {
		if n := len(out); n > 0 && out[n-1][0] == sp[0] && sp[1] <= out[n-1][2] {
			out[n-1][2] = max(out[n-1][2], sp[2])
			continue
		}
		out = append(out, sp)
	}
	for i, sp := range out {
		text := tr[sp[0]].Content
		out[i][1], out[i][2] = utf16Len(text[:sp[1]]), utf16Len(text[:sp[2]])
	}
	return out
}

// utf16Len counts s in UTF-16 code units; an invalid byte counts as the
// one U+FFFD that encoding/json writes for it.
func utf16Len(s string) int {
	n := 0
	for _, r := range s {
		n += utf16.RuneLen(r)
	}
	return n
}
