// Package phase is what every output file of a run has in common: the
// stage that writes it (Stage) and how its writing ended (Status), its
// phase record (Records: the fingerprints of the inputs it was made from,
// its hash and its failed rows), the skip rule that record decides, and
// the guards that refuse to replace an output with a worse one.
package phase
