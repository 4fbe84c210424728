package work

import (
	"encoding/json"
	"path/filepath"

	"github.com/impactbench/impactbench/internal/fault"
	"github.com/impactbench/impactbench/internal/fsx"
	"github.com/impactbench/impactbench/internal/phase"
	"github.com/impactbench/impactbench/internal/summary"
)

// Every output file has a phase record (package phase): the fingerprints
// of the inputs it was made from, its hash, and its failed rows. The
// record decides whether a phase whose output exists may be skipped, and
// says what changed when it may not.

// UpToDate decides whether a phase whose output exists may be skipped
// (phase.Records.UpToDate), and says why.
func (b *Bench) UpToDate(key, output string, inputs map[string]string) (bool, string) {
	return b.Records.UpToDate(b.Opts.Force, key, b.Files.Dir, output, inputs)
}

// CheckSkip applies the skip rule to a phase: it reports (and records in
// the summary) a skip when the output is up to date, or says why it
// reruns. In a dry run nothing is skipped; the plan rows get dryNote
// instead. An output it would keep though this tool did not write it as
// it stands (made elsewhere, edited by hand) must at least read as rows:
// a damaged one is bad input (the later phases would fail on it), not a
// hand edit to keep.
func (b *Bench) CheckSkip(rep summary.PhaseReport, key string, inputs map[string]string) (skip bool, dryNote string, err error) {
	d := b.Records.Decide(b.Opts.Force, key, b.Files.Dir, rep.Output, inputs)
	label := b.Spec.Slug
	if rep.Target != "" {
		label += "/" + rep.Target
	}
	switch {
	case b.Opts.DryRun:
		if d.Skip {
			return false, "skip: up to date", nil
		}
	case d.Skip:
		if d.Foreign {
			if _, err := phase.CountRows(rep.Output); err != nil {
				return false, "", fault.AsInput(err)
			}
		}
		rep.Status, rep.Reason = phase.StatusSkipped, d.Why
		b.Logf("[skip] %s %s — %s", rep.Phase, label, d.Why)
		b.Report.Add(rep)
		return true, "", nil
	case d.Why != "" && d.Why != "forced":
		b.Logf("%s %s: %s", rep.Phase, label, d.Why)
	}
	return false, "", nil
}

// BeginOutput marks key's output as being replaced (phase.Records.Begin).
func (b *Bench) BeginOutput(key string, inputs map[string]string) error {
	return b.Records.Begin(key, inputs)
}

// AbandonOutput undoes BeginOutput when the output's write was refused
// (phase.RefusedError): the file and its record stand as they were.
func (b *Bench) AbandonOutput(key string) error {
	return b.Records.Abandon(key)
}

// Record records key's output as made from inputs, with failed rows.
func (b *Bench) Record(key, output string, inputs map[string]string, failed int) error {
	return b.Records.Done(key, output, inputs, failed)
}

// GuardRows refuses to replace path (a JSON array) with newRows rows when
// it holds more (phase.GuardRows), unless Opts.AcceptFewer.
func (b *Bench) GuardRows(path string, newRows int, why string) error {
	return phase.GuardRows(b.Opts.AcceptFewer, path, newRows, why)
}

// RelPath is p relative to base for messages (p itself when it is not
// under base).
func RelPath(base, p string) string {
	if s, err := filepath.Rel(base, p); err == nil {
		return s
	}
	return p
}

// ErrorKey is the key a failed row's result is stored under: one no run
// accepts as done, so the output records the failure and the next run
// retries the row (its calls replayed from the store).
func ErrorKey(rowKey string) string { return "error:" + rowKey }

// WriteJSON writes v as indented JSON with a final newline, atomically.
func WriteJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return fsx.WriteFile(path, append(b, '\n'), fsx.Shared)
}
