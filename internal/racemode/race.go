//go:build race

package racemode

// Enabled reports whether the race detector is on.
const Enabled = true
