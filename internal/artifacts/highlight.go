package artifacts

import (
	"cmp"
	"slices"
	"unicode/utf16"
)

// EvidenceQuotes lists the quote texts a score row's judges cited — the
// row's own evidence, then each panel judge's — each once, in that order.
func EvidenceQuotes(sc Score) []string {
	var quotes []string
	add := func(ev []Quote) {
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
	return quotes
}

// EvidenceSpans locates quotes in the transcript's assistant messages, the
// same way the judge stage checked them (QuoteFinder), and returns the
// spans to mark as [message index, start, end): offsets in UTF-16 code
// units, as JavaScript strings count them, sorted, overlapping spans
// merged. Quotes found nowhere give no span (a page shows them beside the
// verdict only). The report and the study site both mark evidence with it.
func EvidenceSpans(tr []Turn, quotes []string) [][3]int {
	if len(quotes) == 0 {
		return nil
	}
	f := NewQuoteFinder(tr)
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
		out[i][1], out[i][2] = UTF16Len(text[:sp[1]]), UTF16Len(text[:sp[2]])
	}
	return out
}

// UTF16Len counts s in UTF-16 code units; an invalid byte counts as the
// one U+FFFD that encoding/json writes for it.
func UTF16Len(s string) int {
	n := 0
	for _, r := range s {
		n += utf16.RuneLen(r)
	}
	return n
}
