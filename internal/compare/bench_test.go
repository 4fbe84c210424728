package compare

import (
	"fmt"
	"testing"
)

// BenchmarkCompareLarge: 20 models × 30 metrics × 10 base scenarios × 4
// variants × 3 samples per run (72,000 rows), 2000 replicates.
func BenchmarkCompareLarge(b *testing.B) {
	metrics := testMetrics()[:0]
	for k := range 30 {
		m := testMetrics()[k%2]
		m.ID = fmt.Sprintf("m%02d", k+1)
		metrics = append(metrics, m)
	}
	mk := func(label string, shift int) Run {
		r := Run{Label: label, Metrics: metrics}
		for mi := range 20 {
			for k := range 30 {
				var bases []string
				for s := range 10 {
					v := ""
					for x := range 3 {
						if x > 0 {
							v += "/"
						}
						for y := range 4 {
							if (mi*7+k*3+s*5+x+y+shift)%(mi%5+2) == 0 {
								v += "0"
							} else {
								v += "1"
							}
						}
					}
					bases = append(bases, v)
				}
				r.Scores = append(r.Scores, scoreRows(fmt.Sprintf("model%02d", mi), metrics[k].ID, bases)...)
			}
		}
		return r
	}
	a, c := mk("A", 0), mk("B", 1)
	b.ResetTimer()
	for range b.N {
		if _, err := Compare(a, c, testOpts); err != nil {
			b.Fatal(err)
		}
	}
}
