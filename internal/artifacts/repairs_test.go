package artifacts

import "testing"

// TestMessageRepair: a _repairs entry names its message only in the form
// the simulation writes ("message <index>: <phrase>"); the report and the
// viewer mark nothing for any other.
func TestMessageRepair(t *testing.T) {
	tests := []struct {
		in    string
		index int
		what  string
		ok    bool
	}{
		{"message 0: removed quotes or emphasis around the message", 0, "removed quotes or emphasis around the message", true},
		{"message 12: read a reply without a Message: label", 12, "read a reply without a Message: label", true},
		{"message -1: x", 0, "", false},
		{"message 01: x", 0, "", false},
		{"message 3:", 0, "", false},
		{"message : x", 0, "", false},
		{"turn 3: x", 0, "", false},
		{"", 0, "", false},
	}
	for _, tc := range tests {
		i, what, ok := MessageRepair(tc.in)
		if i != tc.index || what != tc.what || ok != tc.ok {
			t.Errorf("MessageRepair(%q) = %d, %q, %v; want %d, %q, %v", tc.in, i, what, ok, tc.index, tc.what, tc.ok)
		}
	}
}
