package callstore

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package's tests when a goroutine started by them is
// still running once they have all ended: this package starts goroutines,
// and each must end with the work that started it.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
