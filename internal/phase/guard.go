package phase

import (
	"encoding/json"
	"fmt"
	"hash/fnv"
	"strconv"
	"strings"

	"github.com/impactbench/impactbench/internal/artifacts"
	"github.com/impactbench/impactbench/internal/fault"
	"github.com/impactbench/impactbench/internal/layout"
	"github.com/impactbench/impactbench/internal/results"
)

// RefusedError says a phase would have replaced an output with a worse one
// — fewer rows, fewer models, or nulls where verdicts stood — and wrote
// nothing instead. The file is byte-identical; --accept-fewer overrides
// (--force does not: it redoes work, it does not accept losing it). The
// CLI exits 2: the cause is an input (an edited file or config), not a
// failure a rerun would heal.
type RefusedError struct {
	File string // the output that was kept
	Msg  string // what would have got worse, with old and new counts
}

func (e *RefusedError) Error() string {
	return fmt.Sprintf("refusing to replace %s: %s; the file is unchanged", e.File, e.Msg)
}

// AcceptFewerFlag is the flag that lets a refused output through. The
// stage commands register it under this name, and every refusal names it,
// so the message and the command line cannot drift apart.
const AcceptFewerFlag = "--accept-fewer"

// acceptHint is how to override a refusal. --force is not one: a redo that
// ends with fewer rows than before is refused like any other run.
const acceptHint = "if that is intended, pass " + AcceptFewerFlag + " (--force alone redoes the work but still refuses this) or move the file aside first"

// GuardRows refuses to replace path (a JSON array) with newRows rows when
// it holds more. why says what usually shrinks the output. A missing or
// unreadable old file has nothing worth protecting; acceptFewer lets
// anything through.
func GuardRows(acceptFewer bool, path string, newRows int, why string) error {
	if acceptFewer {
		return nil
	}
	old, err := CountRows(path)
	if err != nil || newRows >= old {
		return nil
	}
	return &RefusedError{File: path, Msg: fmt.Sprintf("it holds %d rows, the new one would hold %d (%s); %s", old, newRows, why, acceptHint)}
}

// GuardAudits refuses to replace path (conversations.json) with
// conversations whose simulated user is not audited (the audit is off
// now) when rows of it were: the audit's verdicts would be lost, and the
// conversations it found invalid judged and counted. A missing or
// unreadable old file has nothing worth protecting; acceptFewer lets it
// through.
func GuardAudits(acceptFewer bool, path string) error {
	if acceptFewer {
		return nil
	}
	audited := 0
	err := artifacts.EachRawRow(path, func(_ int, raw json.RawMessage) error {
		var row struct {
			Validity *struct {
				Judge string `json:"judge"`
			} `json:"validity"`
		}
		if json.Unmarshal(raw, &row) == nil && row.Validity != nil && row.Validity.Judge != "" {
			audited++
		}
		return nil
	})
	if err != nil || audited == 0 {
		return nil
	}
	return &RefusedError{File: path, Msg: fmt.Sprintf("%d of its conversations carry the audit of the simulated user, the new one would carry none "+
		"(the audit is off: validity.audit is false, or there is no landmark_model or evaluator_model), and conversations the audit found invalid "+
		"would be judged and counted; %s", audited, acceptHint)}
}

// CountRows counts the rows of a JSON array file without decoding them.
func CountRows(path string) (int, error) {
	n := 0
	err := artifacts.EachRawRow(path, func(int, json.RawMessage) error { n++; return nil })
	return n, err
}

// VerdictGuard watches the rows of a scores file being written and
// refuses the file when a row that has a verdict in the old file would get
// a null one: a judge that failed (or is missing) must not erase verdicts.
type VerdictGuard struct {
	path    string
	off     bool
	had     map[uint64]struct{} // rows of the old file with a verdict
	lost    int
	example []string
}

// scoreKey identifies a score row across files (conv_id is optional upstream).
func scoreKey(id, metric string, sample int) uint64 {
	h := fnv.New64a()
	h.Write([]byte(id))
	h.Write([]byte{0})
	h.Write([]byte(metric))
	h.Write([]byte{0})
	h.Write([]byte(strconv.Itoa(sample)))
	return h.Sum64()
}

// NewVerdictGuard reads the verdicts of the scores file at path
// (acceptFewer: guard nothing).
func NewVerdictGuard(acceptFewer bool, path string) *VerdictGuard {
	g := &VerdictGuard{path: path, off: acceptFewer, had: map[uint64]struct{}{}}
	if g.off {
		return g
	}
	// Only id, metric, sample and verdict are decoded; an unreadable old
	// file protects the rows read before the damage.
	_ = artifacts.EachRawRow(path, func(_ int, raw json.RawMessage) error {
		var s struct {
			ID       string `json:"id"`
			MetricID string `json:"metric_id"`
			Sample   int    `json:"sample"`
			Passed   *bool  `json:"passed"`
		}
		if json.Unmarshal(raw, &s) == nil && s.Passed != nil {
			g.had[scoreKey(s.ID, s.MetricID, s.Sample)] = struct{}{}
		}
		return nil
	})
	return g
}

// See checks one new row.
func (g *VerdictGuard) See(s *artifacts.Score) {
	if g.off || s.Passed != nil {
		return
	}
	if _, ok := g.had[scoreKey(s.ID, s.MetricID, s.Sample)]; !ok {
		return
	}
	g.lost++
	if len(g.example) < 3 {
		g.example = append(g.example, fmt.Sprintf("%s sample %d: %s", s.ID, s.Sample, s.NullReason))
	}
}

// Check is the verdict after every row was seen.
func (g *VerdictGuard) Check() error {
	if g.lost == 0 {
		return nil
	}
	return &RefusedError{File: g.path, Msg: fmt.Sprintf(
		"%d of its %d verdicts would become null (e.g. %s); run the command again without --force to retry only the failed judgements, or pass %s to write the nulls",
		g.lost, len(g.had), strings.Join(g.example, "; "), AcceptFewerFlag)}
}

// GuardResults refuses a results.json that drops a model the old one has,
// or counts fewer rows for one (acceptFewer: anything goes).
func GuardResults(acceptFewer bool, path string, res []results.ModelResult) error {
	if acceptFewer {
		return nil
	}
	old, err := results.ReadCounts(path)
	if err != nil {
		return nil // an unreadable file holds nothing to lose
	}
	now := make(map[string]int, len(res))
	for _, m := range res {
		now[m.TargetModel] = m.NTotal
	}
	var worse []string
	for _, m := range old {
		n, ok := now[m.TargetModel]
		switch {
		case !ok:
			worse = append(worse, fmt.Sprintf("%s is missing (had n_total %d)", m.TargetModel, m.NTotal))
		case n < m.NTotal:
			worse = append(worse, fmt.Sprintf("%s: n_total %d → %d", m.TargetModel, m.NTotal, n))
		}
	}
	if len(worse) == 0 {
		return nil
	}
	if len(worse) > 5 {
		worse = append(worse[:5:5], fmt.Sprintf("… and %d more", len(worse)-5))
	}
	return &RefusedError{File: path, Msg: fmt.Sprintf("it holds %d models, the new one would hold %d, and %s (a %s was removed or shrank); %s",
		len(old), len(res), strings.Join(worse, "; "), layout.RunFileRel("<target>", layout.ScoresFile), acceptHint)}
}

// FaultKind: a refused overwrite is overridden with --accept-fewer.
func (e *RefusedError) FaultKind() fault.Kind { return fault.Refused }
