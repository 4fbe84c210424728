// Package layout is the one owner of a project's files and of the call
// store's unit names: every path impactbench writes or reads in a project
// (config.yaml, benchmarks/<bench>, the study's files beside them), under
// a benchmark (runs/<target>/conversations.json, shard files, judge
// panels' scores, people's conversations, results.json, the report, the
// validation runs) or under its cache (.cache/<bench>/calls, the phase
// records, the lock), every path publish writes under its output
// directory, and every call-store unit name (<target>/sim/<scenario>__s<n>,
// …/eval/…, the generation units, batch states) and phase record key, is
// built here, and every reader that lists or parses one (the viewer's
// live progress, the report and its status, export, compare, calibration,
// merge, publish's manifest check) does it here, so a writer and its
// readers cannot drift apart.
//
// Two tests keep it so: owner_test.go fails on a string literal anywhere
// else in the module that spells one of these names (with a short,
// commented allow-list of data names that are also folder names), and
// agree_test.go runs the offline project end to end and checks that every
// reader finds exactly what the writers wrote.
//
// It sits at the bottom of the import graph: the standard library,
// internal/ids, and internal/fsx (which lists its folders to a bound;
// fsx imports only the standard library and internal/fault).
//
// The layout is upstream's where upstream has one (runs/<target>/
// conversations.json and scores.json, scenarios.json, results.json);
// everything else is impactbench's own.
package layout
