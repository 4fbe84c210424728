// Package simulate is the simulate stage's rows: one conversation per
// scenario variant, sample and target, between the simulated user and the
// target, checked and audited (package stages), stored in the call store
// under its unit, and written to runs/<target>/conversations.json in row
// order by its own writer while the rows are still running. A target's
// roles may go in batch waves instead of real time (waves.go). A run
// attaches a Judge so each conversation is judged the moment it is stored.
package simulate
