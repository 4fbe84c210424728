package work

import (
	"errors"
	"fmt"
	"strings"

	"github.com/impactbench/impactbench/internal/fault"
	"github.com/impactbench/impactbench/internal/llm"
)

// Fatal reports errors that no other row can escape either (a refused
// key, exhausted quota, a config mistake): the phase stops at once instead
// of sending the same doomed request for every row.
func Fatal(err error) bool {
	switch llm.KindOf(err) {
	case llm.KindAuth, llm.KindQuota, llm.KindConfig:
		return true
	}
	return false
}

// BudgetStopped reports whether err stems from the cost ceiling.
func BudgetStopped(err error) bool { return errors.Is(err, llm.ErrBudgetExceeded) }

// PartialError says some rows failed after their retries; outputs hold
// what succeeded and a rerun redoes only the failed rows. The CLI exits 1.
type PartialError struct {
	Failed int
	Phases []string
}

// FaultKind: failed rows are retried by running the command again.
func (e *PartialError) FaultKind() fault.Kind { return fault.Partial }

func (e *PartialError) Error() string {
	return fmt.Sprintf("%d row(s) failed in %s; completed rows are saved — run the same command again to retry only the failed ones",
		e.Failed, strings.Join(e.Phases, ", "))
}
