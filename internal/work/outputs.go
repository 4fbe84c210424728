package work

import (
	"encoding/json"
	"path/filepath"

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
// instead.
func (b *Bench) CheckSkip(rep summary.PhaseReport, key string, inputs map[string]string) (skip bool, dryNote string) {
	upToDate, why := b.UpToDate(key, rep.Output, inputs)
	label := b.Spec.Slug
	if rep.Target != "" {
		label += "/" + rep.Target
	}
	switch {
	case b.Opts.DryRun:
		if upToDate {
			return false, "skip: up to date"
		}
	case upToDate:
		rep.Status, rep.Reason = phase.StatusSkipped, why
		b.Logf("[skip] %s %s — %s", rep.Phase, label, why)
		b.Report.Add(rep)
		return true, ""
	case why != "" && why != "forced":
		b.Logf("%s %s: %s", rep.Phase, label, why)
	}
	return false, ""
}

// BeginOutput marks key's output as being replaced (phase.Records.Begin).
func (b *Bench) BeginOutput(key string, inputs map[string]string) error {
	return b.Records.Begin(key, inputs)
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
