package runner

import (
	"path/filepath"

	"github.com/impactbench/impactbench/internal/phase"
	"github.com/impactbench/impactbench/internal/summary"
)

// Every output file has a phase record (package phase): the fingerprints
// of the inputs it was made from, its hash, and its failed rows. The
// record decides whether a phase whose output exists may be skipped, and
// says what changed when it may not.

// upToDate decides whether a phase whose output exists may be skipped
// (phase.Records.UpToDate), and says why.
func (r *Runner) upToDate(key, output string, inputs map[string]string) (bool, string) {
	return r.records.UpToDate(r.opts.Force, key, r.outDir, output, inputs)
}

// checkSkip applies the skip rule to a phase: it reports (and records in the
// summary) a skip when the output is up to date, or says why it reruns. In a
// dry run nothing is skipped; the plan rows get dryNote instead.
func (r *Runner) checkSkip(stage phase.Stage, target, key, out string, inputs map[string]string, rep summary.PhaseReport) (skip bool, dryNote string) {
	upToDate, why := r.upToDate(key, out, inputs)
	label := r.bench.Slug
	if target != "" {
		label += "/" + target
	}
	switch {
	case r.opts.DryRun:
		if upToDate {
			return false, "skip: up to date"
		}
	case upToDate:
		rep.Status, rep.Reason = phase.StatusSkipped, why
		r.logf("[skip] %s %s — %s", stage, label, why)
		r.Report.Add(rep)
		return true, ""
	case why != "" && why != "forced":
		r.logf("%s %s: %s", stage, label, why)
	}
	return false, ""
}

// beginOutput marks key's output as being replaced (phase.Records.Begin).
func (r *Runner) beginOutput(key string, inputs map[string]string) error {
	return r.records.Begin(key, inputs)
}

// record records key's output as made from inputs.
func (r *Runner) record(key, output string, inputs map[string]string, failed int) error {
	return r.records.Done(key, output, inputs, failed)
}

// fingerprint hashes any JSON-encodable values (phase.Fingerprint).
func fingerprint(vs ...any) string { return phase.Fingerprint(vs...) }

// fileSHA is a file's fingerprint.
func fileSHA(path string) (string, error) { return phase.FileSHA(path) }

// relPath is p relative to base for messages (p itself when it is not under base).
func relPath(base, p string) string {
	if s, err := filepath.Rel(base, p); err == nil {
		return s
	}
	return p
}
