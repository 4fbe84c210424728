package viewer

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"
	"sync"
	"syscall"
	"time"
	"unicode"
	"unicode/utf8"
)

// Label is one human verdict: a line of benchmarks/<bench>/labels.jsonl.
type Label struct {
	ConvID   string    `json:"conv_id"`
	MetricID string    `json:"metric_id"`
	Present  bool      `json:"present"`
	Labeler  string    `json:"labeler"`
	Note     string    `json:"note"`
	At       time.Time `json:"at"`
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

// FileLabels appends labels to a JSON Lines file. Each label is one
// write(2) of one whole line on a file opened with O_APPEND, under an
// exclusive flock, then fsync: concurrent appenders (two viewers, a script)
// never interleave inside a line, existing lines are never rewritten, and a
// crash loses at most the label being written.
type FileLabels struct {
	Path string
	mu   sync.Mutex
}

// Append validates l and appends it as one line.
func (s *FileLabels) Append(l Label) error {
	if err := checkLabel(l); err != nil {
		return fmt.Errorf("%s: %w", s.Path, err)
	}
	l.At = l.At.UTC().Truncate(time.Second)
	line, err := json.Marshal(l)
	if err != nil {
		return fmt.Errorf("%s: %w", s.Path, err)
	}
	line = append(line, '\n')
	s.mu.Lock()
	defer s.mu.Unlock()
	f, err := os.OpenFile(s.Path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("labels: %w", err)
	}
	// Another appender (a second viewer) could be mid-write while we look
	// at the last byte below; the advisory lock orders appenders that take
	// it, and closing the file releases it.
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		return fmt.Errorf("labels: lock %s: %w", s.Path, err)
	}
	// A hand-edited file may lack its final newline; gluing our line onto
	// its last line would corrupt both.
	if st, err := f.Stat(); err == nil && st.Size() > 0 && !endsWithNewline(s.Path, st.Size()) {
		line = append([]byte{'\n'}, line...)
	}
	if _, err := f.Write(line); err != nil {
		f.Close()
		return fmt.Errorf("labels: append %s: %w", s.Path, err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("labels: sync %s: %w", s.Path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("labels: %w", err)
	}
	return nil
}

func endsWithNewline(path string, size int64) bool {
	f, err := os.Open(path)
	if err != nil {
		return true
	}
	defer f.Close()
	b := make([]byte, 1)
	if _, err := f.ReadAt(b, size-1); err != nil {
		return true
	}
	return b[0] == '\n'
}

// List reads every label. A missing file is no labels. A line that does not
// parse is an error naming its line; blank lines are skipped.
func (s *FileLabels) List() ([]Label, error) {
	f, err := os.Open(s.Path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("labels: %w", err)
	}
	defer f.Close()
	return readLabels(f, s.Path)
}

func readLabels(r io.Reader, name string) ([]Label, error) {
	var out []Label
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for n := 1; sc.Scan(); n++ {
		b := bytes.TrimSpace(sc.Bytes())
		if len(b) == 0 {
			continue
		}
		var l Label
		if err := json.Unmarshal(b, &l); err != nil {
			return nil, fmt.Errorf("%s line %d: %w", name, n, err)
		}
		out = append(out, l)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return out, nil
}
