package runner

import (
	"testing"

	"github.com/impactbench/impactbench/internal/artifacts"
)

func TestIsDerivedConvID(t *testing.T) {
	tests := []struct {
		conv, id, target string
		sample           int
		want             bool
	}{
		{artifacts.ConvID("sc_01_v02", "gpt", 0), "sc_01_v02", "gpt", 0, true},
		{artifacts.ConvID("sc_01_v02", "t__x", 12), "sc_01_v02", "t__x", 12, true},
		{artifacts.ConvID("sc_01_v02", "gpt", 1), "sc_01_v02", "gpt", 0, false},
		{artifacts.ConvID("sc_01_v02", "gpt", 0), "sc_01_v02", "claude", 0, false},
		{artifacts.ConvID("sc_01", "gpt", 0), "sc_01_v02", "gpt", 0, false},
		{"custom-id", "sc_01_v02", "gpt", 0, false},
		{"", "sc_01_v02", "gpt", 0, false},
		{artifacts.ConvID("sc_01_v02", "gpt", 0) + "0", "sc_01_v02", "gpt", 0, false},
	}
	for _, tc := range tests {
		if got := isDerivedConvID(tc.conv, tc.id, tc.target, tc.sample); got != tc.want {
			t.Errorf("isDerivedConvID(%q, %q, %q, %d) = %v, want %v", tc.conv, tc.id, tc.target, tc.sample, got, tc.want)
		}
	}
}
