package stats

import "testing"

// TestSignFlipAtTheBoundary: a sign-flip p-value of exactly 0.05 (20
// clusters all favouring A, 39 random sign patterns: 2·1/40) is not
// below 0.05, so the 95 % interval must hold 0. At the level 1 − 0.95 =
// 0.050000000000000044 the interval excluded 0 while p was 0.05.
func TestSignFlipAtTheBoundary(t *testing.T) {
	cs := make([]PairedCluster, 20)
	for i := range cs {
		cs[i] = PairedCluster{NA: 1, NB: 1, SumA: 1, SumB: 0}
	}
	d := ClusterDiff(cs, 0.95, 39, 1)
	if d.PSignFlip != 0.05 {
		t.Fatalf("sign-flip p = %v, want exactly 0.05 (the case under test)", d.PSignFlip)
	}
	if excludes := d.Lo > 0 || d.Hi < 0; excludes != (d.P < 0.05) {
		t.Errorf("p = %v with interval [%v, %v]", d.P, d.Lo, d.Hi)
	}
	if a := alphaOf(0.95); a != 0.05 {
		t.Errorf("alphaOf(0.95) = %v", a)
	}
}
