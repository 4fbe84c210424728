// Package generate is the generation stages' rows: a benchmark's metrics
// (gen_metrics, written into benchmark.yaml) and, per metric, its base
// scenarios and their demographic variants (gen_scenarios, written to
// scenarios.json in metric order by its own writer), each row stored in
// the call store under its unit so a rerun pays nothing twice. A base
// scenario's variants are offered the moment they exist (Offers), so a
// run's conversations start before scenarios.json is written. A set can
// also grow or have items replaced (Growth), keeping the rest exactly.
package generate
