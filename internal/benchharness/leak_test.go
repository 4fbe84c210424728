package benchharness

import (
	"fmt"
	"os"

	"go.uber.org/goleak"
)

// leaked is TestMain's last check: 1 (and the goroutines on stderr) when a
// goroutine started by the tests is still running once they have all ended.
// This package starts goroutines, and each must end with the work that
// started it.
func leaked() int {
	if err := goleak.Find(); err != nil {
		fmt.Fprintln(os.Stderr, "goleak:", err)
		return 1
	}
	return 0
}
