package report

import (
	"cmp"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/impactbench/impactbench/internal/artifacts"
	"github.com/impactbench/impactbench/internal/results"
)

// ScorecardRow is the checks of the simulated user for one user model and
// target: the valid-rollout rate and what failed. Field names are stable
// (status --json; docs/json.md).
type ScorecardRow struct {
	UserModel string `json:"user_model"` // "" when the rows do not say
	Target    string `json:"target"`
	// N is the conversations; Checked those with a validity verdict, of
	// which Valid and Invalid (kept invalid after their redos, left out of
	// every rate); Share is Valid / Checked.
	N       int      `json:"n"`
	Checked int      `json:"checked"`
	Valid   int      `json:"valid"`
	Invalid int      `json:"invalid"`
	Share   *float64 `json:"valid_share"`
	// Rejected counts the replies a turn check rejected (never sent) and
	// Redone the conversations made again at least once.
	Rejected int `json:"rejected_replies"`
	Redone   int `json:"redone"`
	// Kinds counts every failure the checks found, by kind: rejected
	// replies, redone attempts and conversations kept invalid.
	Kinds map[string]int `json:"kinds"`
}

// scorecard accumulates ScorecardRows in first-appearance order.
type scorecard struct {
	rows []*ScorecardRow
	at   map[[2]string]int
}

// add counts one conversation.
func (s *scorecard) add(target, user string, v *artifacts.Validity, f *artifacts.Fidelity) {
	if s.at == nil {
		s.at = map[[2]string]int{}
	}
	k := [2]string{user, target}
	i, ok := s.at[k]
	if !ok {
		i = len(s.rows)
		s.at[k] = i
		s.rows = append(s.rows, &ScorecardRow{UserModel: user, Target: target, Kinds: map[string]int{}})
	}
	r := s.rows[i]
	r.N++
	if v != nil && v.Valid != nil {
		r.Checked++
		if *v.Valid {
			r.Valid++
		} else {
			r.Invalid++
			for _, kind := range v.Failed {
				r.Kinds[kind]++
			}
		}
	}
	if f == nil {
		return
	}
	r.Rejected += len(f.Reasks)
	for _, q := range f.Reasks {
		r.Kinds[q.Check]++
	}
	if len(f.Redos) > 0 {
		r.Redone++
	}
	for _, d := range f.Redos {
		for _, kind := range d.Failed {
			r.Kinds[kind]++
		}
	}
}

// list is the rows, each with its share, or nil when no conversation was
// checked (runs made before the checks, or with them off).
func (s *scorecard) list() []ScorecardRow {
	any := false
	out := make([]ScorecardRow, len(s.rows))
	for i, r := range s.rows {
		any = any || r.Checked > 0 || r.Rejected > 0
		out[i] = *r
		if r.Checked > 0 {
			sh := artifacts.Round(float64(r.Valid)/float64(r.Checked), 4)
			out[i].Share = &sh
		}
	}
	if !any {
		return nil
	}
	return out
}

// kindsText lists failure kinds, most frequent first ("format 3, role 1").
func kindsText(kinds map[string]int) string {
	keys := make([]string, 0, len(kinds))
	for k := range kinds {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b string) int {
		if c := cmp.Compare(kinds[b], kinds[a]); c != 0 {
			return c
		}
		return cmp.Compare(a, b)
	})
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + " " + strconv.Itoa(kinds[k])
	}
	return strings.Join(parts, ", ")
}

// fidelityView is the "Simulated users" section: the scorecard, and from
// results.json each model's failure curve and identical samples.
type fidelityView struct {
	Scorecard []ScorecardRow `json:"scorecard"`
	Breaks    []breakView    `json:"breaks"`
}

// breakView is one model's "share failed by turn k" curve (negative
// metrics: a failure is the behaviour appearing, at the first assistant
// turn the judge's evidence was found in).
type breakView struct {
	Model    string    `json:"model"`
	N        int       `json:"n"`
	Failed   int       `json:"failed"`
	Located  int       `json:"located"`
	ByTurn   []int     `json:"by_turn"`
	Curve    []float64 `json:"curve"`
	Unplaced int       `json:"unplaced"` // failures whose evidence names no turn
}

func buildFidelity(in *Input, models []string) fidelityView {
	var sc scorecard
	for _, run := range in.Runs {
		for i := range run.Conversations {
			c := &run.Conversations[i]
			user := ""
			if c.Run != nil {
				user = c.Run.UserModel
			}
			sc.add(run.Target, user, c.Validity, c.Fidelity)
		}
	}
	v := fidelityView{Scorecard: nonNil(sc.list()), Breaks: []breakView{}}
	for _, m := range models {
		r := resultFor(in, m)
		if r == nil || r.BreakTurns == nil {
			continue
		}
		b := r.BreakTurns
		v.Breaks = append(v.Breaks, breakView{Model: m, N: b.N, Failed: b.NFailed, Located: b.NLocated,
			ByTurn: b.ByTurn, Curve: b.ShareByTurn, Unplaced: b.NFailed - b.NLocated})
	}
	return v
}

// identicalView names a model's scenarios whose samples are byte-identical
// (results.json's agreement.identical_samples).
type identicalView struct {
	Model     string   `json:"model"`
	N         int      `json:"n"`
	Scenarios []string `json:"scenarios"` // the first few
	Warning   string   `json:"warning"`
}

func identicalFor(r *results.ModelResult) *identicalView {
	if r.Agreement == nil || r.Agreement.Identical == nil {
		return nil
	}
	id := r.Agreement.Identical
	return &identicalView{Model: r.TargetModel, N: id.NGroups, Scenarios: id.Scenarios[:min(len(id.Scenarios), 10)], Warning: id.Warning}
}

// writeScorecard prints the checks of the simulated user per user model ×
// target (nothing when no conversation was checked).
func writeScorecard(w io.Writer, c colors, rows []ScorecardRow) {
	if len(rows) == 0 {
		return
	}
	fmt.Fprintf(w, "\n%s\n", c.bold("Simulated users"))
	table := [][]string{{"USER MODEL", "TARGET", "CHECKED", "VALID", "INVALID", "VALID %", "REJECTED REPLIES", "REDONE", "FAILURE KINDS"}}
	for _, r := range rows {
		share := "—"
		if r.Share != nil {
			share = strconv.FormatFloat(100**r.Share, 'f', 1, 64) + "%"
		}
		table = append(table, []string{cmp.Or(r.UserModel, "?"), r.Target, strconv.Itoa(r.Checked) + "/" + strconv.Itoa(r.N),
			strconv.Itoa(r.Valid), strconv.Itoa(r.Invalid), share, strconv.Itoa(r.Rejected), strconv.Itoa(r.Redone), cmp.Or(kindsText(r.Kinds), "—")})
	}
	writeTable(w, table, []bool{false, false, true, true, true, true, true, true, false}, func(row, col int, s string) string {
		if row > 0 && col == 4 && s != "0" {
			return c.yellow(s)
		}
		return s
	})
	fmt.Fprintln(w, "Invalid conversations (still invalid after their redos) have no verdict: every pass rate leaves them out. Rejected replies were never sent to the target.")
}
