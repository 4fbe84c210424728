// Package work is one invocation's work: the environment every benchmark
// of a study shares (Env: the config, its models over shared provider
// pools and one cost ceiling, the lanes that bound rows in flight, the
// progress display) and each benchmark's state (Bench: its files and
// cache, call store, phase records, rows and summary).
//
// The stages' row code (packages generate, simulate, evaluate) works on a
// Bench; package runner wires them into runs and studies. Work does the
// things every stage does the same way: the skip rule and guards of an
// output, cost.json, dry-run estimates, reading scenarios.json by shard.
package work
