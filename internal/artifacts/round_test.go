package artifacts

import "testing"

func TestDisplayRoundsOnce(t *testing.T) {
	cases := []struct {
		got, want string
	}{
		{Fixed(4.0/21, 3, false), "0.190"}, // 0.190476…: via 0.1905 it would print 0.191
		{Fixed(0.5185185185185185, 3, false), "0.519"},
		{Fixed(0.25, 3, true), "+0.250"},
		{Fixed(-0.25, 3, true), "-0.250"},
		{Fixed(0, 3, true), "+0.000"},
		{Limit(0.00003, 3, true), "+0.000030"},
		{Limit(-0.0004, 3, false), "-0.00040"},
		{Limit(0.0004, 3, false), "0.00040"},
		{Limit(0.0123, 3, true), "+0.012"},
		{Limit(0, 3, true), "+0.000"},
		{PValue(0.049996, 0.05, 3), "0.049996"},
		{PValue(0.05, 0.05, 3), "0.050"},
		{PValue(0.0501, 0.05, 3), "0.050"},
		{PValue(0.0499, 0.05, 3), "0.0499"},
		{PValue(0.0004, 0.05, 3), "< 0.001"},
		{PValue(0.2, 0.05, 3), "0.200"},
	}
	for i, c := range cases {
		if c.got != c.want {
			t.Errorf("case %d: %q, want %q", i, c.got, c.want)
		}
	}
}
