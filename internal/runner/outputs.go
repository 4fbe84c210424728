package runner

import (
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// Every output file has a phase record (manifest.go): the fingerprints of
// the inputs it was made from, its hash, and its failed rows. The record
// decides whether a phase whose output exists may be skipped, and says
// what changed when it may not.

// upToDate decides whether a phase whose output exists may be skipped: only
// when its recorded inputs match (outputs made elsewhere — e.g. by upstream —
// have no record and are trusted, as upstream does). It returns a reason.
func (r *Runner) upToDate(key, output string, inputs map[string]string) (bool, string) {
	if r.opts.Force {
		return false, "forced"
	}
	if _, err := os.Stat(output); err != nil {
		return false, ""
	}
	rec, ok := r.manifest.get(key)
	if !ok {
		return true, fmt.Sprintf("%s exists (use --force to redo)", rel(r.outDir, output))
	}
	if rec.Pending {
		return false, fmt.Sprintf("the last run stopped while writing %s; redoing it from stored calls", rel(r.outDir, output))
	}
	if sha, err := fileSHA(output); err == nil && rec.Output != "" && sha != rec.Output {
		return true, fmt.Sprintf("%s exists and was edited by hand; keeping it (use --force to redo)", rel(r.outDir, output))
	}
	if ch := changedInputs(rec.Inputs, inputs); len(ch) > 0 {
		return false, fmt.Sprintf("inputs changed since %s was made: %v", rel(r.outDir, output), ch)
	}
	if rec.Failed > 0 {
		return false, fmt.Sprintf("%d row(s) failed last time; retrying them", rec.Failed)
	}
	return true, fmt.Sprintf("%s is up to date (use --force to redo)", rel(r.outDir, output))
}

// checkSkip applies the skip rule to a phase: it reports (and records in the
// summary) a skip when the output is up to date, or says why it reruns. In a
// dry run nothing is skipped; the plan rows get dryNote instead.
func (r *Runner) checkSkip(phase Stage, target, key, out string, inputs map[string]string, rep PhaseReport) (skip bool, dryNote string) {
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
		rep.Status, rep.Reason = StatusSkipped, why
		r.logf("[skip] %s %s — %s", phase, label, why)
		r.Report.add(rep)
		return true, ""
	case why != "" && why != "forced":
		r.logf("%s %s: %s", phase, label, why)
	}
	return false, ""
}

// beginOutput marks key's output as being replaced, before it is written. A
// process killed after the output is in place but before cost.json and the
// record are would otherwise leave an output that the next run trusts as
// made elsewhere (no record) or as edited by hand (the old record's hash):
// it would skip the phase, and cost.json would lack its entry for good.
func (r *Runner) beginOutput(key string, inputs map[string]string) error {
	return r.manifest.put(key, phaseRecord{Inputs: inputs, Pending: true, Finished: time.Now().UTC()})
}

func (r *Runner) record(key, output string, inputs map[string]string, failed int) error {
	sha, err := fileSHA(output)
	if err != nil {
		return err
	}
	return r.manifest.put(key, phaseRecord{Inputs: inputs, Output: sha, Failed: failed, Finished: time.Now().UTC()})
}

func rel(base, p string) string {
	if s, err := filepath.Rel(base, p); err == nil {
		return s
	}
	return p
}
