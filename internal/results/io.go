package results

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/impactbench/impactbench/internal/artifacts"
	"github.com/impactbench/impactbench/internal/config"
	"github.com/impactbench/impactbench/internal/layout"
)

// Load reads Aggregate's input from a benchmark directory the way upstream
// does: every runs/*/scores.json sorted by path, the run directory name as
// the fallback target, plus scenarios.json for demographics (absent: none).
func Load(benchDir string, metrics []config.Metric) (Input, error) {
	in := Input{Metrics: metrics}
	dirs, err := layout.ListRunDirs(benchDir)
	if err != nil {
		return Input{}, fmt.Errorf("list runs of %s: %w", benchDir, err)
	}
	for _, dir := range dirs {
		name := filepath.Base(dir)
		err := artifacts.EachScore(layout.Run{Dir: dir}.Scores(), func(_ int, s artifacts.Score) error {
			in.Scores = append(in.Scores, s)
			in.RunDirs = append(in.RunDirs, name)
			return nil
		})
		if err != nil {
			return Input{}, err
		}
	}
	scen, err := artifacts.ReadScenarios(layout.Bench{Dir: benchDir}.Scenarios())
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return Input{}, err
	default:
		in.Scenarios = scen
	}
	return in, nil
}

// LoadRepeats reads every runs/<target>/repeats.json (evaluate --repeats)
// of a benchmark directory, the run directory name as the target; runs
// without one are skipped. A row that does not parse, or lacks its repeat
// number or id, is an *artifacts.FileError naming the file, row and field.
func LoadRepeats(benchDir string) ([]TargetRepeats, error) {
	dirs, err := layout.ListRunDirs(benchDir)
	if err != nil {
		return nil, fmt.Errorf("list runs of %s: %w", benchDir, err)
	}
	var out []TargetRepeats
	for _, dir := range dirs {
		rows, err := ReadRepeats(layout.Run{Dir: dir}.Repeats())
		if err != nil {
			return nil, err
		}
		if len(rows) > 0 {
			out = append(out, TargetRepeats{Target: filepath.Base(dir), Rows: rows})
		}
	}
	return out, nil
}

// ReadRepeats reads one repeats.json row by row through the input guards
// (nil when there is none). A row that does not parse, or lacks its repeat
// number or id, is an *artifacts.FileError naming the file, row and field;
// so is a file that is not a regular one (a named pipe is not waited on).
func ReadRepeats(path string) ([]RepeatRow, error) {
	var rows []RepeatRow
	err := artifacts.EachRawRow(path, func(i int, raw json.RawMessage) error {
		var rr RepeatRow
		if err := json.Unmarshal(raw, &rr); err != nil {
			return &artifacts.FileError{Path: path, Row: i, Err: err, Hint: "rerun `impactbench evaluate --repeats K` to rebuild it"}
		}
		field := ""
		switch {
		case rr.Repeat < 1:
			field = "repeat"
		case rr.ID == "":
			field = "id"
		}
		if field != "" {
			return &artifacts.FileError{Path: path, Row: i, Field: field, Err: errors.New("missing or invalid (want repeat ≥ 1 and an id)"),
				Hint: "rerun `impactbench evaluate --repeats K` to rebuild it"}
		}
		rows = append(rows, rr)
		return nil
	})
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	return rows, err
}

// WriteResults writes results.json atomically in upstream's format (a
// top-level array, Python json layout, no trailing newline).
func WriteResults(path string, results []ModelResult) error {
	if results == nil {
		results = []ModelResult{}
	}
	return artifacts.WriteJSON(path, results)
}

// ModelCount is one results.json model's row count.
type ModelCount struct {
	TargetModel string
	NTotal      int
}

// ReadCounts reads each model's target_model and n_total from a
// results.json, in file order. It streams the file row by row through
// artifacts' input guards (a named pipe is refused, not waited on; a row
// is at most MaxRowBytes, as for ReadResults) and keeps only the two
// fields, so a file whose by_scenario lists 100,000 scenarios costs one
// row's bytes at a time, never more: ReadResults would hold each model
// whole, and a row padded to gigabytes is refused after MaxRowBytes.
func ReadCounts(path string) ([]ModelCount, error) {
	rr, ok, err := artifacts.OpenRows(path, "")
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, fmt.Errorf("%s: %w", path, fs.ErrNotExist)
	}
	var out []ModelCount
	for rr.More() {
		var m struct {
			TargetModel string `json:"target_model"`
			NTotal      int    `json:"n_total"`
		}
		if err := rr.Next(&m); err != nil {
			rr.Close()
			return nil, err
		}
		out = append(out, ModelCount{TargetModel: m.TargetModel, NTotal: m.NTotal})
	}
	if err := rr.Close(); err != nil {
		return nil, err
	}
	return out, nil
}

// ReadResults reads a results.json written by upstream or by us.
func ReadResults(path string) ([]ModelResult, error) {
	var out []ModelResult
	first := map[string]int{}
	err := artifacts.EachRawRow(path, func(i int, raw json.RawMessage) error {
		var m ModelResult
		if err := json.Unmarshal(raw, &m); err != nil {
			return fmt.Errorf("%w; re-run aggregate to rebuild the file", err)
		}
		if m.TargetModel == "" {
			return errors.New(`field "target_model": missing or empty; re-run aggregate to rebuild the file`)
		}
		if j, dup := first[m.TargetModel]; dup {
			return fmt.Errorf(`field "target_model": %q appears twice (first in row %d); re-run aggregate to rebuild the file`, m.TargetModel, j)
		}
		first[m.TargetModel] = i
		out = append(out, m)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// SummaryLine is upstream's per-model console line,
// "  <model>: pos=<p> neg=<n> n=<N>", with Python's str() of the rates
// (None when null).
func SummaryLine(m ModelResult) string {
	return fmt.Sprintf("  %s: pos=%s neg=%s n=%d", m.TargetModel, pyStr(m.PositivePassRate), pyStr(m.NegativePassRate), m.NTotal)
}

// IntervalLine is ours, printed under SummaryLine: each track's rate with
// its 95% interval, the leaderboard score, and the base scenarios and method
// behind them, with the few-scenarios warning; "" for an upstream-only
// entry (no intervals).
func IntervalLine(m ModelResult) string {
	if m.PositiveCI == nil && m.NegativeCI == nil {
		return ""
	}
	var parts []string
	clusters, method, warning := 0, "", ""
	for _, t := range []struct {
		name string
		ci   *ClusterCI
	}{{"positive", m.PositiveCI}, {"negative", m.NegativeCI}} {
		if t.ci == nil || t.ci.Estimate == nil || t.ci.Low == nil || t.ci.High == nil {
			continue
		}
		parts = append(parts, fmt.Sprintf("%s %s [%s, %s]", t.name, pct(*t.ci.Estimate), pct(*t.ci.Low), pct(*t.ci.High)))
		clusters, method = max(clusters, t.ci.Clusters), t.ci.Method
		if warning == "" {
			warning = t.ci.Warning
		}
	}
	if len(parts) == 0 {
		return ""
	}
	if lb := m.Leaderboard; lb != nil && lb.Score != nil && lb.CILow != nil && lb.CIHigh != nil {
		parts = append(parts, fmt.Sprintf("score %s [%s, %s]", pct(*lb.Score), pct(*lb.CILow), pct(*lb.CIHigh)))
	}
	line := fmt.Sprintf("    %s · n=%d, up to %d base scenarios per track (%s)", strings.Join(parts, " · "), m.NTotal, clusters, method)
	if warning != "" {
		line += "\n    ! " + warning
	}
	return line
}

// ValidityLine is ours, printed under IntervalLine: the valid-rollout rate
// and what made conversations invalid; "" when nothing was checked.
func ValidityLine(m ModelResult) string {
	v := m.Validity
	if v == nil || v.Share == nil {
		return ""
	}
	line := fmt.Sprintf("    valid rollouts %s (%d of %d checked)", pct(*v.Share), v.Valid, v.Checked)
	if v.Invalid > 0 {
		kinds := make([]string, len(v.Kinds))
		for i, k := range v.Kinds {
			kinds[i] = fmt.Sprintf("%s %d", k.Key, k.Value)
		}
		line += fmt.Sprintf("; %d invalid, left out of every rate (%s)", v.Invalid, strings.Join(kinds, ", "))
	}
	if e := v.Estimated; e != nil {
		line += fmt.Sprintf("\n    valid rollouts estimated %s [%s, %s] from a sample: %s, %d of %d unflagged (share %.2f, %d passed); %s, %.0f %%",
			pct(e.Share), pct(e.Lo), pct(e.Hi), auditedInFull(e), e.Sampled, e.Sampled+e.Unsampled, e.AuditShare, e.SampledPass, e.Method, 100*e.Conf)
		if e.Warning != "" {
			line += "\n    ! " + e.Warning
		}
	}
	if v.Warning != "" {
		line += "\n    ! " + v.Warning
	}
	return line
}

func pct(x float64) string { return strconv.FormatFloat(100*x, 'f', 1, 64) + "%" }

func pyStr(p *float64) string {
	if p == nil {
		return "None"
	}
	return artifacts.FormatPyFloat(*p)
}

// auditedInFull names the strata the audit read in full: the flagged
// conversations, and the suspect ones when the suspect check found any.
func auditedInFull(e *SampledValidity) string {
	if e.Suspect == 0 {
		return fmt.Sprintf("every flagged conversation audited (%d)", e.Flagged)
	}
	return fmt.Sprintf("every flagged (%d) and suspect (%d) conversation audited", e.Flagged, e.Suspect)
}

// CalibrationLine is printed under a model's summary lines when people
// labelled the benchmark: its score corrected for judge error, or why
// there is none and what says more, and the label lines left out as stale
// (their conversation was run again since); "" without labels.
func CalibrationLine(m ModelResult) string {
	jc, lb := m.JudgeCalibration, m.Leaderboard
	if jc == nil || lb == nil || lb.Corrected == nil {
		return ""
	}
	c := lb.Corrected
	line := "    corrected for judge error: "
	if c.Score != nil && c.CILow != nil && c.CIHigh != nil {
		line += fmt.Sprintf("score %s [%s, %s] (%d labelled rows of its own)", pct(*c.Score), pct(*c.CILow), pct(*c.CIHigh), jc.Labels.NRows)
	} else {
		line += fmt.Sprintf("none (%d labelled rows of its own): %s; `impactbench calibrate` says why per metric, and `calibrate --plan` which labels would give one",
			jc.Labels.NRows, strings.TrimPrefix(c.Warning, "not corrected: "))
	}
	if n := jc.Labels.NStale; n > 0 {
		line += fmt.Sprintf("\n    ! %d of its label lines were given on a conversation run again since: left out; label those rows again", n)
	}
	return line
}
