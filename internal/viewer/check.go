package viewer

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/impactbench/impactbench/internal/artifacts"
	"github.com/impactbench/impactbench/internal/ids"
)

// Check reads every benchmark of the project the way the viewer indexes
// it and refuses the first row whose ids would reach a label, a URL or a
// file name unchecked: a scenario, metric or conv_id that is not an id, or
// a conv_id that names another scenario, target or sample than its row's.
// The error is an *artifacts.FileError naming the file, the row and the
// field (view exits 2). A file that cannot be read at all is not this
// check's business: the viewer shows it as a note.
func Check(projectDir string) error {
	root := filepath.Join(projectDir, "benchmarks")
	ents, err := os.ReadDir(root)
	if err != nil {
		return nil
	}
	for _, e := range ents {
		if !e.IsDir() || strings.HasPrefix(e.Name(), ".") {
			continue
		}
		dir := filepath.Join(root, e.Name())
		if _, err := os.Stat(filepath.Join(dir, "benchmark.yaml")); err != nil {
			continue
		}
		if err := checkBench(dir); err != nil {
			return err
		}
	}
	return nil
}

func checkBench(dir string) error {
	scens, _, _, err := readRows[lightScen](filepath.Join(dir, "scenarios.json"))
	if err == nil {
		for i, sc := range scens {
			if why := ids.Problem(sc.ID, ids.MaxScenario); why != "" {
				return rowError(filepath.Join(dir, "scenarios.json"), i, "id", fmt.Sprintf("%s is not an id: %s", ids.Quote(sc.ID), why))
			}
		}
	}
	for _, t := range listRunDirs(dir) {
		path := filepath.Join(dir, "runs", t, "conversations.json")
		convs, _, _, err := readRows[lightConv](path)
		if err == nil {
			for i := range convs {
				if field, why := convRowProblem(&convs[i], t); why != "" {
					return rowError(path, i, field, why)
				}
			}
		}
		path = filepath.Join(dir, "runs", t, "scores.json")
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
