package viewer

import (
	"errors"
	"fmt"

	"github.com/impactbench/impactbench/internal/artifacts"
	"github.com/impactbench/impactbench/internal/fsx"
	"github.com/impactbench/impactbench/internal/ids"
	"github.com/impactbench/impactbench/internal/layout"
)

// Check reads every benchmark of the project the way the viewer indexes
// it and refuses the first row whose ids would reach a label, a URL or a
// file name unchecked: a scenario, metric or conv_id that is not an id, or
// a conv_id that names another scenario, target or sample than its row's.
// The error is an *artifacts.FileError naming the file, the row and the
// field (view exits 2), or a runs/ folder holding more entries than its
// bound (an *fsx.TooManyEntriesError naming it, exit 2). A file that
// cannot be read at all is not this check's business: the viewer shows it
// as a note.
func Check(projectDir string) error {
	names, err := layout.Benchmarks(projectDir)
	var many *fsx.TooManyEntriesError
	if errors.As(err, &many) {
		return err // a benchmarks/ too crowded to list is refused, not served as empty
	} // no benchmarks/: nothing to check
	for _, name := range names {
		if err := checkBench(layout.BenchDir(projectDir, name)); err != nil {
			return err
		}
	}
	return nil
}

func checkBench(dir string) error {
	b := layout.Bench{Dir: dir}
	scens, _, _, err := readRows[lightScen](b.Scenarios())
	if err == nil {
		for i, sc := range scens {
			if why := ids.Problem(sc.ID, ids.MaxScenario); why != "" {
				return rowError(b.Scenarios(), i, "id", fmt.Sprintf("%s is not an id: %s", ids.Quote(sc.ID), why))
			}
		}
	}
	targets, err := runTargetsOf(dir)
	if err != nil {
		return err
	}
	for _, t := range targets {
		path := b.Run(t).Conversations()
		convs, _, _, err := readRows[lightConv](path)
		if err == nil {
			for i := range convs {
				if field, why := convRowProblem(&convs[i], t); why != "" {
					return rowError(path, i, field, why)
				}
			}
		}
		path = b.Run(t).Scores()
		scores, _, _, err := readRows[lightScore](path)
		if err != nil {
			continue
		}
		for i, sc := range scores {
			if sc.ConvID == "" {
				continue
			}
			if why := convIDProblem(sc.ConvID, sc.ID, t, sc.Sample); why != "" {
				return rowError(path, i, "conv_id", why)
			}
		}
	}
	return nil
}

func rowError(path string, row int, field, why string) error {
	return &artifacts.FileError{Path: path, Row: row, Field: field, Err: errors.New(why),
		Hint: "; the viewer serves no row it cannot name safely: fix or remove the row"}
}
