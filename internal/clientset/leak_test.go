package clientset

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package's tests when a goroutine they started is still
// running at the end. The one exception is the pool trace of
// TestPoolTraceEnvWritesTheTrace: IMPACTBENCH_POOLTRACE traces for the life
// of the process by design.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, goleak.IgnoreAnyFunction("github.com/impactbench/impactbench/internal/llm/ratelimit.(*Registry).Trace"))
}
