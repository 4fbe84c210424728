package compare

import (
	"path/filepath"
	"sort"

	"github.com/impactbench/impactbench/internal/artifacts"
	"github.com/impactbench/impactbench/internal/config"
	"github.com/impactbench/impactbench/internal/human"
	"github.com/impactbench/impactbench/internal/stats"
)

// People's conversations (the viewer's Play page, runs/<target>/human/)
// are not rows of a run's rates — a person is not the simulated user the
// runs are compared on — but they are conversations of the run, so the
// comparison lists them beside the rates: per model and track, the pass
// rate of what people played in each run, with the same cluster interval,
// and how many of their conversations are not judged yet (drafts and
// ended ones).

// played is one run's people-played conversations of one target.
type played struct {
	scores           []artifacts.Score
	drafts, unjudged int
	conversations    int
}

// loadPlayed reads the people-played files of every run directory of the
// benchmark in benchDir (layout.ListRunDirs).
func loadPlayed(benchDir string, dirs []string) (map[string]*played, error) {
	out := map[string]*played{}
	for _, d := range dirs {
		target := filepath.Base(d)
		convs, scores, err := human.Open(benchDir).List(target)
		if err != nil {
			return nil, err
		}
		if len(convs) == 0 {
			continue
		}
		p := &played{conversations: len(convs)}
		judged := map[string]bool{}
		for _, s := range scores {
			p.scores = append(p.scores, s.Score)
			judged[s.ConvID] = true
		}
		for _, c := range convs {
			switch {
			case c.State == human.Playing:
				p.drafts++
			case !judged[c.ConvID]:
				p.unjudged++
			}
		}
		out[target] = p
	}
	return out, nil
}

// PeopleRow is one model's pass rate on one track over the conversations
// people played, in both runs (a side without any has no rate), with the
// counts of what is not judged yet.
type PeopleRow struct {
	Model string `json:"model"`
	Track string `json:"track"`
	A     *Rate  `json:"a"`
	B     *Rate  `json:"b"`
	// Conversations, Drafts (still being played) and Unjudged (ended, no
	// verdict yet) per side.
	ConversationsA int `json:"conversations_a"`
	ConversationsB int `json:"conversations_b"`
	DraftsA        int `json:"drafts_a"`
	DraftsB        int `json:"drafts_b"`
	UnjudgedA      int `json:"unjudged_a"`
	UnjudgedB      int `json:"unjudged_b"`
}

// peopleRows lists every model people played in either run.
func peopleRows(a, b Run, conf float64) []PeopleRow {
	var models []string
	for _, m := range []map[string]*played{a.played, b.played} {
		for t := range m {
			if !contains(models, t) {
				models = append(models, t)
			}
		}
	}
	sort.Strings(models)
	var out []PeopleRow
	for _, m := range models {
		for _, tr := range []struct {
			name string
			typ  config.MetricType
		}{{"positive", config.Positive}, {"negative", config.Negative}} {
			row := PeopleRow{Model: m, Track: tr.name}
			row.A, row.ConversationsA, row.DraftsA, row.UnjudgedA = playedRate(a, m, tr.typ, conf)
			row.B, row.ConversationsB, row.DraftsB, row.UnjudgedB = playedRate(b, m, tr.typ, conf)
			out = append(out, row)
		}
	}
	return out
}

// playedRate is the pass rate of run's people-played conversations of
// model on one track, clustered by base scenario; nil without verdicts.
func playedRate(run Run, model string, typ config.MetricType, conf float64) (*Rate, int, int, int) {
	p := run.played[model]
	if p == nil {
		return nil, 0, 0, 0
	}
	types := map[string]config.MetricType{}
	for _, m := range run.Metrics {
		types[m.ID] = m.Type
	}
	t := map[string]*tally{} // base scenario → its verdicts
	var keys []string
	for _, s := range p.scores {
		if s.Passed == nil || types[s.MetricID] != typ {
			continue
		}
		k := artifacts.BaseIDOf(s.ID)
		if t[k] == nil {
			t[k] = &tally{}
			keys = append(keys, k)
		}
		t[k].add(tally{passed: b2i(*s.Passed), total: 1})
	}
	if len(keys) == 0 {
		return nil, p.conversations, p.drafts, p.unjudged
	}
	cs := make([]stats.ClusterSum, len(keys))
	for i, k := range keys {
		cs[i] = stats.Binary(t[k].passed, t[k].total)
	}
	r := rateOf(stats.ClusterRate(cs, conf))
	return &r, p.conversations, p.drafts, p.unjudged
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

func contains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}
