// Package evaluate is the evaluate stage's rows: one verdict per
// conversation by the blind judge panel (package stages), stored in the
// call store under its unit and written to runs/<target>/scores.json in
// row order. A judge with `batch: true` sends its calls through the
// provider's batch API first (batch.go); evaluate --repeats judges again
// with other seeds to measure the judge's consistency (repeats.go).
package evaluate
