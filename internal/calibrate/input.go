// Package calibrate gathers what judge calibration reads beside the
// scores: people's labels (labels.jsonl, checked against the benchmark's
// conversations), alternative judges' scores and evaluate --repeats rows.
package calibrate

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/impactbench/impactbench/internal/artifacts"
	"github.com/impactbench/impactbench/internal/fault"
	"github.com/impactbench/impactbench/internal/fsx"
	"github.com/impactbench/impactbench/internal/labels"
	"github.com/impactbench/impactbench/internal/layout"
	"github.com/impactbench/impactbench/internal/results"
)

// KnownConversations maps every conv_id of the benchmark's runs (from
// conversations.json and scores.json) to its metric: what labels may name;
// and each conversation of conversations.json to its transcript's digest,
// so that a label given before the conversation was run again is read as
// stale.
func KnownConversations(ctx context.Context, files layout.Bench) (labels.Known, error) {
	known := labels.Known{Conversations: map[string]string{}, Transcripts: map[string]string{}}
	targets, err := layout.RunTargets(files.Dir)
	if err != nil {
		return known, err
	}
	for _, target := range targets {
		run := files.Run(target)
		err := artifacts.EachConversation(run.Conversations(), func(_ int, c artifacts.Conversation) error {
			if err := ctx.Err(); err != nil {
				return err
			}
			id := convIDOf(c.ConvID, c.ID, target, c.Sample)
			known.Conversations[id] = c.MetricID
			known.Transcripts[id] = artifacts.TranscriptDigest(c.Transcript)
			return nil
		})
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return known, fault.AsInput(err)
		}
		err = artifacts.EachScore(run.Scores(), func(_ int, s artifacts.Score) error {
			t := s.TargetModel
			if t == "" {
				t = target
			}
			known.Conversations[convIDOf(s.ConvID, s.ID, t, s.Sample)] = s.MetricID
			return nil
		})
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return known, fault.AsInput(err)
		}
	}
	return known, nil
}

func convIDOf(convID, id, target string, sample int) string {
	if convID != "" {
		return convID
	}
	return artifacts.ConvID(id, target, sample)
}

// ReadLabels reads labels.jsonl checked against the benchmark's
// conversations: nil without a file or with an empty one; a bad line is an
// input error (exit 2) naming the line and field, and so is a labels.jsonl
// that is not a regular file (a named pipe, a device), naming the file.
func ReadLabels(ctx context.Context, files layout.Bench) ([]labels.Label, error) {
	path := files.Labels()
	// Only a missing file or an empty regular one is no labels: a named
	// pipe or a device also has size 0, and was silently taken for none.
	st, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) || (err == nil && st.Mode().IsRegular() && st.Size() == 0) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	known, err := KnownConversations(ctx, files)
	if err != nil {
		return nil, err
	}
	ls, err := labels.Read(path, known)
	var le *labels.Error
	var nr *fsx.NotRegularError
	if errors.As(err, &le) || errors.As(err, &nr) {
		return nil, fault.AsInput(err)
	}
	return ls, err
}

// Input gathers labels, alternate judges' scores and repeats for
// results.Aggregate; nil when there is none of them. mainJudge is the
// configured judge's label when there is one judge ("" for a panel).
func Input(ctx context.Context, files layout.Bench, mainJudge string) (*results.CalibrationInput, error) {
	ls, err := ReadLabels(ctx, files)
	if err != nil {
		return nil, err
	}
	in := &results.CalibrationInput{Labels: ls, MainJudge: mainJudge}
	dirs, err := layout.ListRunDirs(files.Dir)
	if err != nil {
		return nil, err
	}
	for _, d := range dirs {
		target, run := filepath.Base(d), layout.Run{Dir: d}
		reps, err := results.ReadRepeats(run.Repeats())
		if err != nil {
			return nil, err
		}
		if len(reps) > 0 {
			in.Repeats = append(in.Repeats, results.TargetRepeats{Target: target, Rows: reps})
		}
		if len(ls) == 0 {
			continue // alternates only matter for calibration
		}
		alts, err := readAlternates(target, run)
		if err != nil {
			return nil, err
		}
		in.Alternates = append(in.Alternates, alts...)
	}
	if len(in.Labels) == 0 && len(in.Repeats) == 0 {
		return nil, nil
	}
	return in, nil
}

// readAlternates reads every judges/<panel>/scores.json of a target's run,
// keeping what calibration uses.
func readAlternates(target string, run layout.Run) ([]results.AlternateScores, error) {
	names, err := run.JudgePanels()
	if err != nil {
		return nil, err
	}
	var out []results.AlternateScores
	for _, n := range names {
		a := results.AlternateScores{Target: target, Judge: n}
		err := artifacts.EachScore(run.PanelScores(n), func(_ int, s artifacts.Score) error {
			a.Scores = append(a.Scores, artifacts.Score{ID: s.ID, MetricID: s.MetricID, Sample: s.Sample, Present: s.Present})
			return nil
		})
		if err != nil {
			return nil, fault.AsInput(err)
		}
		out = append(out, a)
	}
	return out, nil
}
