package stats

import (
	"math"
	"testing"
)

// approx reports whether got is within tol of want; two NaNs are equal so
// that the package's NaN conventions can be asserted in tables.
func approx(got, want, tol float64) bool {
	if math.IsNaN(want) {
		return math.IsNaN(got)
	}
	return math.Abs(got-want) <= tol
}

// mustPanic fails the test unless f panics.
func mustPanic(t *testing.T, name string, f func()) {
	t.Helper()
	defer func() {
		if recover() == nil {
			t.Errorf("%s: expected a panic, got none", name)
		}
	}()
	f()
}
