package report

import (
	"slices"
)

// safetyStop is one model's conversations in which its provider stopped a
// reply for safety: such a reply is the model's answer, judged and counted
// in the rates the leaderboard shows, so the leaderboard says how many of
// them rest on one. The page template renders these (html/template: the
// model's name is text). The viewer's summary API serves them as JSON
// (SummaryJSON); report.html's embedded data never holds them.
type safetyStop struct {
	Model string `json:"model"`
	// Conversations had a stopped reply, of Of (every conversation of the
	// model: results.json's rows, invalid and null ones too); Replies is
	// how many replies were stopped.
	Conversations int `json:"n_conversations"`
	Replies       int `json:"n_replies"`
	Of            int `json:"of"`
	// Provisional: counted from scores.json, as the leaderboard row is
	// (no results.json entry yet).
	Provisional bool `json:"provisional,omitempty"`
}

// buildSafetyStops lists, in models' order (the leaderboard's), the models
// with a stopped reply: from results.json's refused block, else (a
// provisional row) from the score rows' refused. Nil when none has one, so
// the page is what it was without.
func buildSafetyStops(in *Input, models []string) []safetyStop {
	var out []safetyStop
	for _, m := range models {
		if r := resultFor(in, m); r != nil {
			if convs, replies, of := r.SafetyStops(); replies > 0 {
				out = append(out, safetyStop{Model: m, Conversations: convs, Replies: replies, Of: of})
			}
			continue
		}
		st := safetyStop{Model: m, Provisional: true}
		for _, run := range in.Runs {
			if run.Target != m {
				continue
			}
			st.Of += len(run.Scores)
			for _, s := range run.Scores {
				if n := len(slices.Compact(slices.Sorted(slices.Values(s.Refused)))); n > 0 {
					st.Conversations++
					st.Replies += n
				}
			}
		}
		if st.Replies > 0 {
			out = append(out, st)
		}
	}
	return out
}
