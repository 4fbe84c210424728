package simulate

import (
	"github.com/impactbench/impactbench/internal/artifacts"
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

// planPendingConversations counts t's conversations that simulate would
// make now, records them for evaluate's estimate, and sets the simulate
// plan rows' share.
func planPendingConversations(b *work.Bench, t *Target, rows []simRow) {
	pending := map[work.Row]bool{}
	err := eachRow(b, rows, func(row convRow) error {
		var conv artifacts.Conversation
		key, ok := b.Store.ReadResult(t.unit(row.sc.ID, row.sample), &conv)
		if !ok || key != phase.Fingerprint(t.rowKeyBase, row.sc, row.sample) || conv.Status == artifacts.StatusError {
			pending[work.Row{ID: row.sc.ID, Sample: row.sample}] = true
		}
		return nil
	})
	if err != nil {
		return // the estimate keeps every row
	}
	b.Pending.Set(t.id, pending)
	b.PlanShare(phase.StageSimulate, t.id, len(pending))
}
