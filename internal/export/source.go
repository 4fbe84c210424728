package export

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/impactbench/impactbench/internal/artifacts"
	"github.com/impactbench/impactbench/internal/config"
	"github.com/impactbench/impactbench/internal/layout"
)

// Source is a benchmark directory plus what only config.yaml knows.
type Source struct {
	Dir     string          // the benchmark directory (holds scenarios.json and runs/)
	Name    string          // the benchmark column; filepath.Base(Dir) when empty
	Metrics []config.Metric // benchmark.yaml's metrics (names and types)
	// Judges are the labels of the configured evaluator panel, in order:
	// who judged runs/<target>/scores.json when its rows carry no
	// per-judge verdicts (a single judge, or a conversation never judged).
	Judges []string
	// Models maps a target id to its provider model, for conversations
	// without a run record (upstream's files).
	Models map[string]string
}

func (s Source) name() string {
	if s.Name != "" {
		return s.Name
	}
	return filepath.Base(s.Dir)
}

// InputError is an input file that is missing or unreadable; its message
// names the file (and row and field where the reader knows them).
type InputError struct{ Err error }

func (e *InputError) Error() string { return e.Err.Error() }
func (e *InputError) Unwrap() error { return e.Err }

func inputErr(err error) error {
	if err == nil {
		return nil
	}
	var we *writeError
	if errors.As(err, &we) {
		return we.err // an output failure inside a reader's callback
	}
	return &InputError{Err: err}
}

// writeError carries a sink's error through a reader's callback, which
// wraps it with the input file's name, so it is not taken for bad input.
type writeError struct{ err error }

func (e *writeError) Error() string { return e.err.Error() }

// Sink receives a table's rows in order. The Row is reused after Sink
// returns.
type Sink func(Row) error

func (s Sink) write(r Row) error {
	if err := s(r); err != nil {
		return &writeError{err}
	}
	return nil
}

// runDir is one runs/<target> directory and the files export reads there.
type runDir struct {
	target        string
	conversations string
	scores        []scoresFile
}

// scoresFile is one scores file of a target.
type scoresFile struct {
	path  string
	rel   string   // scores.json or judges/<label>/scores.json
	panel []string // who judged it when rows carry no per-judge verdicts
}

// listRuns finds runs/<target> directories (sorted, hidden ones skipped as
// aggregate does) with their main scores.json and judges/<label>/scores.json
// files. Shard files are not read: `impactbench merge` combines them first.
func listRuns(src Source) ([]runDir, error) {
	targets, err := layout.RunTargets(src.Dir)
	if err != nil {
		return nil, &InputError{Err: err}
	}
	var out []runDir
	for _, t := range targets {
		dir := layout.Bench{Dir: src.Dir}.Run(t)
		rd := runDir{target: t, conversations: dir.Conversations()}
		if isFile(dir.Scores()) {
			rd.scores = append(rd.scores, scoresFile{path: dir.Scores(), rel: dir.Rel(dir.Scores()), panel: src.Judges})
		}
		panels, err := dir.JudgePanels()
		if err != nil {
			return nil, &InputError{Err: err}
		}
		for _, p := range panels {
			rd.scores = append(rd.scores, scoresFile{path: dir.PanelScores(p), rel: dir.Rel(dir.PanelScores(p)), panel: layout.ParsePanelDir(p)})
		}
		out = append(out, rd)
	}
	return out, nil
}

func isFile(path string) bool {
	st, err := os.Stat(path)
	return err == nil && !st.IsDir()
}

// missing reports a required input that does not exist, with the command
// that makes it.
func missing(path, hint string) error {
	return &InputError{Err: fmt.Errorf("%s does not exist: %s", path, hint)}
}

// rowKey joins score rows to their conversation: (scenario id, sample), the
// match aggregate and the report use, which also holds for upstream files
// without conv_id.
func rowKey(id string, sample int) string { return fmt.Sprintf("%s\x00%d", id, sample) }

// convIDOf is a row's conv_id, or the default one when the file has none.
func convIDOf(stored, id, target string, sample int) string {
	if stored != "" {
		return stored
	}
	return artifacts.ConvID(id, target, sample)
}
