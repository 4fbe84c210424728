package artifacts

import "testing"

func TestIsConvID(t *testing.T) {
	tests := []struct {
		conv, id, target string
		sample           int
		want             bool
	}{
		{ConvID("sc_01_v02", "gpt", 0), "sc_01_v02", "gpt", 0, true},
		{ConvID("sc_01_v02", "t__x", 12), "sc_01_v02", "t__x", 12, true},
		{ConvID("sc_01_v02", "gpt", 1), "sc_01_v02", "gpt", 0, false},
		{ConvID("sc_01_v02", "gpt", 0), "sc_01_v02", "claude", 0, false},
		{ConvID("sc_01", "gpt", 0), "sc_01_v02", "gpt", 0, false},
		{"custom-id", "sc_01_v02", "gpt", 0, false},
		{"", "sc_01_v02", "gpt", 0, false},
		{ConvID("sc_01_v02", "gpt", 0) + "0", "sc_01_v02", "gpt", 0, false},
	}
	for _, tc := range tests {
		if got := IsConvID(tc.conv, tc.id, tc.target, tc.sample); got != tc.want {
			t.Errorf("IsConvID(%q, %q, %q, %d) = %v, want %v", tc.conv, tc.id, tc.target, tc.sample, got, tc.want)
		}
	}
}
