package report

import "testing"

// TestStatusPValuesStayOnTheirSideOfAlpha: status prints a p-value so that
// it reads as significant exactly when it is below 0.05.
func TestStatusPValuesStayOnTheirSideOfAlpha(t *testing.T) {
	for p, want := range map[float64]string{0.049996: "0.049996", 0.05: "0.050", 0.0504: "0.050", 0.2: "0.200", 0.0002: "2.0e-04"} {
		if got := fmtP(p); got != want {
			t.Errorf("fmtP(%v) = %q, want %q", p, got, want)
		}
	}
}
