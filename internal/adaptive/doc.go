// Package adaptive is the adaptive study design: base scenarios are added
// in rounds, round-robin across metrics and shared by every model (every
// model sees the same scenarios of a metric, so pairs stay paired), and a
// metric stops growing when the conclusions the study states about it are
// decided or out of reach.
//
// ARCHITECTURE. The package is plain functions over a loaded study
// (internal/study): Look takes the study's structure and the base
// scenarios' sums observed so far, in round order, and returns, per metric,
// how many base scenarios it should have after the next round (as many as
// it has: it stops) with every conclusion decided so far. Look keeps no
// state: it replays the design's looks from the data (look k sees the
// prefix of each metric's scenarios the design had asked for by then), so a
// resumed run, or a shard that reloads the study, gets the same answer.
// Replay runs the design over a finished study's rows in random scenario
// orders, as if they were being collected, and compares what it states
// with what the full study states. Bill is the dry-run estimate.
//
// The conclusions are the study's own, computed by the study's code on the
// rows observed so far (study.WithClusters, at a level set by AtLevel):
//
//   - "different": a pair of ranked models whose paired difference at a
//     node and age group is significant after Holm over the node's pairs
//     (study.json's significant; not different is "tied");
//   - "grade": a cell whose interval lies in one band of the site's scale
//     (site.CellGrade: the grade word, letter or step label shown);
//   - ranks: each ranked model's rank interval from the different-calls
//     (stats.TestedRanks), so ranks are decided exactly when the calls are.
//
// The guarantee. The design looks at most Looks = Max − Start + 1 times (a
// metric that grows reaches Start + k base scenarios after round k). Look k
// computes the study at significance α_k and confidence 1 − α_k, where
// α_1 + … + α_Looks = α (a power spending function, α·((k/K)^ρ −
// ((k−1)/K)^ρ), ρ = 3 by default, which keeps most of α for the last look,
// as O'Brien–Fleming boundaries do). A conclusion stated at any look stays
// stated. By the union bound over the looks:
//
//   - "different" calls: within each family (one node and age group, every
//     pair of its ranked models), the chance that any call stated at any
//     look is wrong is at most α, whatever the data-dependent stop;
//   - rank intervals: all of a family's hold together with probability at
//     least 1 − α (they rest on the same calls);
//   - grade words: each cell's word is wrong with probability at most α.
//
// Each look's level rests on the study's intervals at that look, whose
// coverage is measured by simulation (docs/study.md), not proven; the
// union bound then carries it over looks and stops. Which metrics grow is
// decided from the nodes' data and a seeded random order of metrics, never
// from one metric's own scenarios alone, so a metric's rate is not
// selected on its own values (TestDesignKeepsItsErrorRate checks the whole
// on worlds with known truth).
package adaptive
