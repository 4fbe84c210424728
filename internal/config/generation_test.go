package config

import (
	"encoding/json"
	"testing"
)

// TestIndependentOpeningsOutOfJSON: the settings fingerprint of results
// hashes Generation's JSON; independent_openings must not change it, so a
// run with independent openings writes the files of a build without the
// option, byte for byte.
func TestIndependentOpeningsOutOfJSON(t *testing.T) {
	g := Generation{ScenariosPerMetric: 3, Turns: 6, NumSamples: 1}
	before, _ := json.Marshal(g)
	g.IndependentOpenings = true
	after, _ := json.Marshal(g)
	if string(before) != string(after) || string(after) != `{"ScenariosPerMetric":3,"Turns":6,"NumSamples":1}` {
		t.Errorf("Generation's JSON %s, with independent openings %s", before, after)
	}
}
