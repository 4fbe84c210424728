package runner

import (
	"fmt"
	"os"

	"github.com/impactbench/impactbench/internal/artifacts"
	"github.com/impactbench/impactbench/internal/phase"
	"github.com/impactbench/impactbench/internal/plan"
)

// What a dry run would run now. A phase that is not up to date does not
// redo every row: each row replays its stored result when the call store
// holds one under the row's current key (resume: nothing is paid twice).
// So the dry run walks the rows as the run would and looks each one up:
// a hand edit of one user_goal re-simulates that scenario's variants and
// re-judges their conversations, and the estimate says so, instead of
// pricing the whole phase (and calling evaluate up to date because
// conversations.json has not changed yet).

// planPendingConversations counts t's conversations that simulate would
// make now, records them for evaluate's estimate, and sets the simulate
// plan rows' share.
func (r *Runner) planPendingConversations(t *simTarget, rows []simRow) {
	pending := map[simRow]bool{}
	err := r.eachRow(rows, func(row convRow) error {
		var conv artifacts.Conversation
		key, ok := r.store.ReadResult(t.unit(row.sc.ID, row.sample), &conv)
		if !ok || key != fingerprint(t.rowKeyBase, row.sc, row.sample) || conv.Status == artifacts.StatusError {
			pending[simRow{row.sc.ID, row.sample}] = true
		}
		return nil
	})
	if err != nil {
		return // the estimate keeps every row
	}
	r.dryMu.Lock()
	if r.dryPending == nil {
		r.dryPending = map[string]map[simRow]bool{}
	}
	r.dryPending[t.id] = pending
	r.dryMu.Unlock()
	r.planShare(phase.StageSimulate, t.id, len(pending))
}

// planPendingVerdicts counts the verdicts evaluate would make now: those
// of conversations simulate would make again, and those not stored under
// the current conversation and judges. It returns -1 when the rows cannot
// be read (the estimate then keeps every row).
func (r *Runner) planPendingVerdicts(targetID, convPath string) int {
	r.dryMu.Lock()
	resim := r.dryPending[targetID]
	r.dryMu.Unlock()
	if _, err := os.Stat(convPath); err != nil {
		return -1
	}
	base, dir := r.verdictKeyBase(), r.verdictUnitDir(targetID)
	n := 0
	err := artifacts.EachConversation(convPath, func(_ int, c artifacts.Conversation) error {
		if resim[simRow{c.ID, c.Sample}] {
			n++
			return nil
		}
		var sc artifacts.Score
		unit := fmt.Sprintf("%s/%s/%s__s%d", safeName(targetID), dir, safeName(c.ID), c.Sample)
		if key, ok := r.store.ReadResult(unit, &sc); !ok || key != verdictKey(base, &c) {
			n++
		}
		return nil
	})
	if err != nil {
		return -1
	}
	return n
}

// planShare sets how many of a phase's plan rows would run now, and
// their share of the cost.
func (r *Runner) planShare(stage phase.Stage, target string, rowsNow int) {
	r.Report.EditPlan(stage, target, func(p *plan.Row) {
		if p.Note != "" || p.Rows == 0 {
			return
		}
		p.RowsNow = min(rowsNow, p.Rows)
		p.CostNow = p.Cost * float64(p.RowsNow) / float64(p.Rows)
	})
}

// planEvaluateNow marks what of a target's evaluate a dry run would run
// now. An evaluate that looks up to date (conversations.json unchanged) is
// not when simulate would remake some conversations first.
func (r *Runner) planEvaluateNow(targetID, convPath, note string) {
	n := r.planPendingVerdicts(targetID, convPath)
	switch {
	case n > 0:
		r.planShare(phase.StageEvaluate, targetID, n)
	case note != "":
		r.planNote(phase.StageEvaluate, targetID, note)
	case n == 0:
		r.planShare(phase.StageEvaluate, targetID, 0)
	}
}
