package viewer

import (
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/impactbench/impactbench/internal/artifacts"
	"github.com/impactbench/impactbench/internal/labels"
)

// Label is one human verdict: a line of benchmarks/<bench>/labels.jsonl.
type Label struct {
	ConvID   string    `json:"conv_id"`
	MetricID string    `json:"metric_id"`
	Present  bool      `json:"present"`
	Labeler  string    `json:"labeler"`
	Note     string    `json:"note"`
	At       time.Time `json:"at"`
	// AfterReveal: given after the judges' verdict was shown to this
	// labeller (labels.Label.AfterReveal).
	AfterReveal bool `json:"after_reveal,omitempty"`
	// VerdictShown: whether the viewer had shown this labeller the
	// judges' verdict on the row by the time the label was saved
	// (labels.Label.VerdictShown; nil on a line that does not say).
	VerdictShown *bool `json:"verdict_shown,omitempty"`
	// Transcript is the digest of the transcript the labeller read
	// (labels.Label.Transcript): a conversation run again since has
	// another, and the label is then stale (currentLabels).
	Transcript string `json:"transcript_sha256,omitempty"`
}

// LabelStore is where the viewer records labels. The file implementation
// below is the default; the labels package can stand in for it.
type LabelStore interface {
	Append(Label) error
	List() ([]Label, error)
}

// Limits on what a person can type into the review form: generous for
// people, small enough that one request cannot bloat the file.
const (
	maxLabelerLen = 100
	maxNoteLen    = 4000
)

// checkLabel validates the fields a person supplies.
func checkLabel(l Label) error {
	switch {
	case l.ConvID == "":
		return errors.New("conv_id is empty")
	case l.MetricID == "":
		return errors.New("metric_id is empty")
	case strings.TrimSpace(l.Labeler) == "":
		return errors.New("labeler is empty: say who you are")
	case utf8.RuneCountInString(l.Labeler) > maxLabelerLen:
		return fmt.Errorf("labeler is longer than %d characters", maxLabelerLen)
	case utf8.RuneCountInString(l.Note) > maxNoteLen:
		return fmt.Errorf("note is longer than %d characters", maxNoteLen)
	case !utf8.ValidString(l.Labeler) || !utf8.ValidString(l.Note):
		return errors.New("labeler or note is not valid UTF-8")
	}
	for _, r := range l.Labeler {
		if unicode.IsControl(r) {
			return errors.New("labeler contains a control character")
		}
	}
	return nil
}

// FileLabels is the labels file of a benchmark, read and appended through
// package labels (the one implementation of labels.jsonl: one O_APPEND
// write per line under an exclusive file lock, fsynced, never through a
// symbolic link; a hand-written last line without its newline is
// completed, a torn one refused; never rewritten).
type FileLabels struct {
	Path string
	// Known, when set, limits labels to the benchmark's conversations and
	// their metrics (the zero value checks the fields only).
	Known labels.Known
}

// Append validates l (what a person may type, then the file's rules) and
// appends it as one line.
func (s *FileLabels) Append(l Label) error {
	if err := checkLabel(l); err != nil {
		return fmt.Errorf("%s: %w", s.Path, err)
	}
	err := labels.Append(s.Path, labels.Label{
		ConvID: l.ConvID, MetricID: l.MetricID, Present: l.Present,
		Labeler: l.Labeler, Note: l.Note, At: l.At.UTC().Truncate(time.Second), AfterReveal: l.AfterReveal, VerdictShown: l.VerdictShown,
		Transcript: l.Transcript,
	}, s.Known)
	if err != nil {
		return fmt.Errorf("labels: %w", err)
	}
	return nil
}

// List reads every label. A missing file is no labels; a bad line is an
// error naming its line and field.
func (s *FileLabels) List() ([]Label, error) {
	ls, err := labels.Read(s.Path, s.Known)
	if err != nil {
		return nil, err
	}
	out := make([]Label, len(ls))
	for i, l := range ls {
		out[i] = Label{ConvID: l.ConvID, MetricID: l.MetricID, Present: l.Present, Labeler: l.Labeler, Note: l.Note, At: l.At, AfterReveal: l.AfterReveal,
			VerdictShown: l.VerdictShown, Transcript: l.Transcript}
	}
	return out, nil
}

// digestOf is the digest of conversation i's transcript as the index's
// files hold it (artifacts.TranscriptDigest), read once per index; false
// when it cannot be read.
func (ix *benchIndex) digestOf(i int) (string, bool) {
	ix.digestMu.Lock()
	d, ok := ix.digests[i]
	ix.digestMu.Unlock()
	if ok {
		return d, true
	}
	v, err := ix.readConv(i, false)
	if err != nil {
		return "", false
	}
	d = artifacts.TranscriptDigest(v.Transcript)
	ix.digestMu.Lock()
	if ix.digests == nil {
		ix.digests = map[int]string{}
	}
	ix.digests[i] = d
	ix.digestMu.Unlock()
	return d, true
}

// currentLabels is ls without the labels given on a transcript the
// conversation no longer has (it was run again since the person read it),
// nor the same person's earlier lines on the row — as calibration leaves
// them out (results.CurrentLabels): the queue asks for those rows again,
// and a person's place and labels count them as not labelled. Lines
// without a digest (written by hand, or before labels carried one) are
// kept.
func currentLabels(ix *benchIndex, ls []Label) []Label {
	type who struct{ conv, name string }
	last := map[who]int{}
	for k, l := range ls {
		if l.Transcript == "" {
			continue
		}
		i, ok := ix.byConvID[l.ConvID]
		if !ok {
			continue
		}
		if d, ok := ix.digestOf(i); ok && d != l.Transcript {
			last[who{l.ConvID, l.Labeler}] = k
		}
	}
	if len(last) == 0 {
		return ls
	}
	out := make([]Label, 0, len(ls))
	for k, l := range ls {
		if j, ok := last[who{l.ConvID, l.Labeler}]; ok && k <= j {
			continue
		}
		out = append(out, l)
	}
	return out
}
