package schedule

import (
	"errors"
	"sync"
)

// Halt stops a flow of rows: once halted (by a fatal error no row of the
// flow can escape, such as a refused key), no new row of the flow starts,
// while rows already running finish what they have on the wire, under the
// caller's context. It holds no context: the rows get theirs from whoever
// starts them.
type Halt struct {
	mu    sync.Mutex
	cause error
}

// ErrHalted is a halt's cause when none was given.
var ErrHalted = errors.New("stopped")

// Stop halts the flow; the first cause is kept (nil: ErrHalted).
func (h *Halt) Stop(cause error) {
	if cause == nil {
		cause = ErrHalted
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.cause == nil {
		h.cause = cause
	}
}

// Err is why the flow halted (nil: it has not).
func (h *Halt) Err() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.cause
}
