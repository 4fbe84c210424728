package evaluate

import (
	"os"

	"github.com/impactbench/impactbench/internal/artifacts"
	"github.com/impactbench/impactbench/internal/layout"
	"github.com/impactbench/impactbench/internal/phase"
	"github.com/impactbench/impactbench/internal/work"
)

// What a dry run would run now. A phase that is not up to date does not
// redo every row: each row replays its stored result when the call store
// holds one under the row's current key (resume: nothing is paid twice).
// So the dry run walks the rows as the run would and looks each one up:
// a hand edit of one user_goal re-simulates that scenario's variants and
// re-judges their conversations, and the estimate says so, instead of
// pricing the whole phase (and calling evaluate up to date because
// conversations.json has not changed yet).

// planPendingVerdicts counts the verdicts evaluate would make now: those
// of conversations simulate would make again, and those not stored under
// the current conversation and judges. It returns -1 when the rows cannot
// be read (the estimate then keeps every row).
func planPendingVerdicts(b *work.Bench, targetID, convPath string) int {
	resim := b.Pending.Of(targetID)
	if _, err := os.Stat(convPath); err != nil {
		return -1
	}
	base, dir := verdictKeyBase(b), verdictUnitDir(b, targetID)
	n := 0
	err := artifacts.EachConversation(convPath, func(_ int, c artifacts.Conversation) error {
		if resim[work.Row{ID: c.ID, Sample: c.Sample}] {
			n++
			return nil
		}
		var sc artifacts.Score
		unit := layout.EvalUnit(targetID, dir, c.ID, c.Sample)
		if key, ok := b.Store.ReadResult(unit, &sc); !ok || key != verdictKey(base, &c) {
			n++
		}
		return nil
	})
	if err != nil {
		return -1
	}
	return n
}

// planEvaluateNow marks what of a target's evaluate a dry run would run
// now. An evaluate that looks up to date (conversations.json unchanged) is
// not when simulate would remake some conversations first.
func planEvaluateNow(b *work.Bench, targetID, convPath, note string) {
	n := planPendingVerdicts(b, targetID, convPath)
	switch {
	case n > 0:
		b.PlanShare(phase.StageEvaluate, targetID, n)
	case note != "":
		b.PlanNote(phase.StageEvaluate, targetID, note)
	case n == 0:
		b.PlanShare(phase.StageEvaluate, targetID, 0)
	}
}
