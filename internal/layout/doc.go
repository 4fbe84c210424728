// Package layout is the one owner of a project's files and of the call
// store's unit names: every path impactbench writes or reads under a
// benchmark (runs/<target>/conversations.json, shard files, judge panels'
// scores, people's conversations, results.json, the report) or under its
// cache (.cache/<bench>/calls, the phase records, the lock), and every
// call-store unit name (<target>/sim/<scenario>__s<n>, …/eval/…, the
// generation units), is built here, and every reader that parses one
// (the viewer's live progress, the report's status, merge) parses it
// here, so a writer and its readers cannot drift apart.
//
// The layout is upstream's where upstream has one (runs/<target>/
// conversations.json and scores.json, scenarios.json, results.json);
// everything else is impactbench's own.
package layout
