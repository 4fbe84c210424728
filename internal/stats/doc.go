// Package stats holds the pure statistical functions behind impactbench
// reports. Nothing here does I/O; every result is a deterministic function of
// its arguments (bootstraps take an explicit seed).
//
// The data are pass/fail verdicts on conversations. Conversations are
// clustered: a base scenario has demographic variants and repeated samples,
// which tend to pass or fail together.
//
// Pass rates:
//   - Wilson: the range of true pass rates plausible given k passes out of n
//     independent conversations; unlike "±2 standard errors" it stays within
//     0–100% and is honest for small samples.
//   - ClusterRate: the headline interval, with the base scenario as the
//     unit: the cluster-score interval (ScoreInterval: the design effect
//     from the cluster-robust variance, Wilson's score form when scenarios
//     vary no more than chance, a logit t interval when they do), sized
//     for its level in simulation (TestIntervalGrid: at least 94 % in 344
//     of 420 cells of 3–30 scenarios × 1–16 conversations, 94–97 % in
//     152; docs/statistics.md lists where not). Beside it the betting
//     interval on scenario rates (BettingCI), valid for any spread of
//     rates with a finite-sample guarantee — the any-mix bound, a median
//     1.4× as wide, up to 5.7× — which the cluster-score interval holds at
//     60 % where the scenarios clearly differ; and, for planning, a t
//     interval and Wilson on the effective sample size (design effect from
//     the ICC's upper bound); a warning below FewClusters.
//     StratifiedRate is the same interval, without the betting join, for a
//     rate over fixed strata (a track's metrics), StratifiedBettingCI its
//     any-mix bound; MeanOfRates combines independent tracks.
//   - BettingCS: an anytime-valid confidence sequence for scenarios added
//     in rounds (optional stopping); UntilLook, its stratified form for
//     run --until (blocks of one scenario per metric, round-robin growth).
//   - VarianceComponents: the split of a pass rate's variance into
//     scenario, variant, sample and judge.
//   - ICC, DesignEffect, ExpectedHalfWidth, ScenariosNeeded: planning
//     (the cluster-score interval's expected half-width).
//   - ClusterBootstrap: the percentile cluster bootstrap; too narrow with
//     few scenarios, kept for compatibility.
//   - BootstrapStat and PairedBootstrap: the same resampling idea for any
//     statistic, e.g. a rank correlation over models.
//
// Reliability:
//   - PassAtKAll (τ-bench pass^k): the chance that k samples of the same
//     scenario all pass; it rewards consistency.
//   - PassAtK (pass@k): the chance that at least one of k samples passes.
//
// Demographic effects:
//   - Unanimity: the share of scenarios whose variants all got the same
//     outcome.
//   - ClusterDiff / StratifiedDiff / SignFlipP: differences with the base
//     scenario as the unit (also model vs model): the mean per-scenario
//     difference, and one procedure (sign-flip test and binomial-noise
//     floor) whose interval excludes 0 exactly when its p-value is below
//     1 − conf.
//   - RankIntervals: bootstrap intervals for ranks.
//
// Study scores (a mean over fixed metrics of each metric's pass rate):
//   - StratifiedMean: the mean with an interval that treats the base
//     scenarios within each metric as the sampled units (floored linearised
//     cluster variance per metric, Satterthwaite t); covers ≥ 94.5% in
//     simulation from 1 to 360 metrics of 3 scenarios each.
//   - StratifiedPairedDiff: two models on the same scenarios, with the
//     p-value from the same t.
//   - TestedRanks: rank intervals from one family's Holm-adjusted paired
//     comparisons (the decisions "tied with" uses), all holding the true
//     ranks together with probability ≥ 95%.
//   - McNemarExact / SignTest: whether two variants differ, using only the
//     pairs where their outcomes differ; treats pairs as independent, so it
//     overstates with clustered data (kept for reference).
//   - Holm and BenjaminiHochberg: raise p-values when many comparisons are
//     made, so that luck does not masquerade as a finding. PairwiseMcNemar
//     compares every pair of variants and applies Holm.
//
// Judge agreement:
//   - RawAgreement: how often two judges give the same verdict.
//   - CohenKappa (two judges) and FleissKappa (several judges): agreement
//     beyond what luck alone would produce; 1 is perfect, 0 is chance.
//   - KrippendorffAlpha: the same idea for any number of raters with
//     missing ratings.
//
// Judge error (human labels):
//   - Calibrate: a judge's sensitivity, specificity, Cohen's κ and Youden's
//     J against human labels, weighted to the study's verdicts, with the
//     raw counts; JudgeHeterogeneity: whether its error differs by target.
//   - RoganGladen, RoganGladenInterval and CombineCorrected: the pass rate
//     corrected for the judge's errors, with an interval that includes the
//     labels' own uncertainty; ExpectedCalibration and
//     RoganGladenHalfWidth plan how many labels that takes.
//
// Ranking stability:
//   - Spearman and KendallTauB: from −1 to 1, how similarly two runs order
//     the models; both handle ties. Ranks gives the average ranks they use.
//
// Conventions: functions that return an error report malformed input through
// it. The others panic on arguments that describe no possible experiment
// (negative counts, k > n, a confidence level outside (0, 1)), like the
// standard library does for negative lengths. Valid but uninformative data
// never panics: it yields a documented value — [0, 1] for an interval with no
// trials, NaN for a statistic that is undefined (for example kappa when every
// verdict is the same, or a correlation of constant scores). Note that
// encoding/json refuses NaN, so callers that serialise results must map NaN
// to null or omit the field.
//
// The same explanations, in README-ready Markdown, are in Explained
// (EXPLAINED.md).
package stats
