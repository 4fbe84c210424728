// Package adaptrun runs an adaptive study (`impactbench run all
// --adaptive`): the design of internal/adaptive carried out on a project's
// benchmarks, in rounds.
//
// ARCHITECTURE. A round is one study run (runner.Study.RunRound) over the
// scenario sets the last look asked for. Each round (1) runs every
// benchmark's current set to the end for every target — the first round
// over a fresh set of Start base scenarios per metric, later rounds over
// the sets grown by generate.GrowthFor, which keeps every base scenario
// and appends the new ones, so every model sees the same scenarios of a
// metric — then (2) loads the study from disk (study.Load: every
// benchmark's scores) and (3) asks adaptive.Look which metrics are still
// undecided and how many base scenarios each should have next
// (Round.ByBench). It stops when no metric grows (every conclusion is
// decided, out of reach, or its metrics are at Max) or the cost ceiling
// is reached.
//
// Nothing here keeps state between processes: Look replays its looks from
// the rows, and every call goes through the call store, so a run killed
// mid-round and started again completes the round it was in (paying only
// for the calls not yet stored) and goes on exactly as it would have.
// Sharded runs are refused (a round's growth depends on every shard's
// scores, which only merge brings together).
//
// Imports point along the data's path: adaptrun reads work (the
// benchmarks), generate (growth), study and adaptive; the runner and the
// CLI call it, never the other way.
package adaptrun
