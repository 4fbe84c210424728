package report

import (
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
// evidence and each panel judge's) in the transcript's assistant messages
// and returns the spans to mark (artifacts.EvidenceSpans: [message index,
// start, end) in UTF-16 code units, overlapping spans merged). Quotes found
// nowhere are shown beside the verdict only.
func highlights(tr []artifacts.Turn, sc *scoreRec) [][3]int {
	return artifacts.EvidenceSpans(tr, artifacts.EvidenceQuotes(artifacts.Score{Evidence: sc.Evidence, Judges: sc.Judges}))
}
