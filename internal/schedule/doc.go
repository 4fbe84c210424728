// Package schedule runs rows: the units of work of a run, each made once
// per invocation and awaited by whatever needs it.
//
// It knows nothing of stages, prompts or files. A Row is claimed once by
// its unit and key in a Set and finished once with an Outcome; whoever
// needs it first starts it, everyone else awaits it. A Lane bounds the
// rows in flight of one kind (a stage and target, say, but the lane does
// not know): rows offered while it is full queue there as closures and
// start by rank, then in the order they were offered. An Assembler writes
// rows that finish out of order to an output in row order, keeping only a
// bounded number in memory. ForEach is the plain worker pool.
package schedule
