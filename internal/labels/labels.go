// Package labels reads and appends human verdicts: benchmarks/<bench>/labels.jsonl,
// one JSON object per line,
//
//	{"conv_id": "m01_s001_v01__gpt-4o__s0", "metric_id": "m01", "present": true, "labeler": "ana", "note": "", "at": "2025-05-01T12:00:00Z"}
//
// The tool only ever appends to the file (one write per line, then fsync),
// so a person may also write lines by hand or from a spreadsheet. Read is
// strict: a line that is not a label (not JSON, a missing or mistyped field,
// an unknown conversation, a bad time) is an error naming the line and the
// field, never skipped. Several people may label the same conversation;
// when one person labels it twice, their later line wins (the file is never
// rewritten, so a change of mind is a new line). A line may record the
// transcript its labeller read ("transcript_sha256"); read against the
// conversations' transcripts (Known.Transcripts), a label on a conversation
// run again since is Stale. It may also say whether the label was given
// after the judges' verdict on the row was shown ("after_reveal") and
// whether the viewer had shown that verdict by the time it was saved
// ("verdict_shown").
package labels

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/impactbench/impactbench/internal/fault"
	"github.com/impactbench/impactbench/internal/fsx"
	"github.com/impactbench/impactbench/internal/ids"
	"github.com/impactbench/impactbench/internal/layout"
)

// Label is one person's verdict on one conversation and metric.
type Label struct {
	// ConvID is the conversation's conv_id (<scenario_id>__<target>__s<sample>).
	ConvID string
	// MetricID is the metric judged; it must be the conversation's metric.
	MetricID string
	// Present: the metric's behaviour is present in the assistant's messages
	// (the judge's question, not pass/fail).
	Present bool
	// Labeler names the person.
	Labeler string
	// Note is optional free text.
	Note string
	// At is when the verdict was given (RFC 3339 in the file).
	At time.Time
	// AfterReveal marks a label given after the person had seen the
	// judges' verdict on the row (the viewer sets it when it showed the
	// verdict before the label — blind review off — or when an earlier
	// label of theirs on the row was saved with it shown: VerdictShown):
	// it is no longer blind, so calibration leaves it out unless asked to
	// count it. Written only when true ("after_reveal": true).
	AfterReveal bool
	// VerdictShown says whether the viewer had shown the person the
	// judges' verdict on the row by the time this label was saved: before
	// they gave it (blind review off) or in the answer to its save (blind
	// review with reveal after). The viewer writes it on every line
	// ("verdict_shown": true or false, last), so that a later label by the
	// same person on the row is marked AfterReveal by what was shown, not
	// by how the viewer happens to be set when it is given. Nil: not
	// recorded (a hand-written line, or one written before the viewer
	// recorded it); such a line is read as today and never written with
	// the key.
	VerdictShown *bool
	// Transcript is the sha256 (hex) of the transcript the person read
	// (artifacts.TranscriptDigest), written by the viewer so that a label
	// on a conversation run again since is told from a label on the
	// conversation as it stands ("transcript_sha256"; optional: a
	// hand-written line without it is taken as about the conversation as
	// it is).
	Transcript string
	// Stale is set by Read when Known.Transcripts holds the conversation
	// and its digest is not Transcript: the person labelled a transcript
	// that is no longer there (the conversation was run again). Never
	// written.
	Stale bool
	// Line is the 1-based line the label was read from (0 when not read).
	Line int
}

// Key identifies what a label is about: one conversation and metric.
type Key struct{ ConvID, MetricID string }

// Key returns the label's row.
func (l Label) Key() Key { return Key{l.ConvID, l.MetricID} }

// fields are the keys of a line, in the order they are written
// (transcript_sha256 only when set, after_reveal only when true,
// verdict_shown only when recorded).
var fields = []string{"conv_id", "metric_id", "present", "labeler", "note", "at", "transcript_sha256", "after_reveal", "verdict_shown"}

// MarshalJSON writes the keys in the documented order.
func (l Label) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, f := range fields {
		if f == "after_reveal" && !l.AfterReveal || f == "transcript_sha256" && l.Transcript == "" || f == "verdict_shown" && l.VerdictShown == nil {
			continue
		}
		if i > 0 {
			b.WriteString(", ")
		}
		k, _ := json.Marshal(f)
		b.Write(k)
		b.WriteString(": ")
		var v any
		switch f {
		case "conv_id":
			v = l.ConvID
		case "metric_id":
			v = l.MetricID
		case "present":
			v = l.Present
		case "labeler":
			v = l.Labeler
		case "note":
			v = l.Note
		case "at":
			v = l.At.Format(time.RFC3339Nano)
		case "transcript_sha256":
			v = l.Transcript
		case "after_reveal":
			v = l.AfterReveal
		case "verdict_shown":
			v = *l.VerdictShown
		}
		enc, err := json.Marshal(v)
		if err != nil {
			return nil, err
		}
		b.Write(enc)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// Known lists what labels may refer to. The zero Known accepts any
// conversation and metric (only the shape of a line is checked).
type Known struct {
	// Conversations maps every conv_id of the benchmark to its metric id.
	Conversations map[string]string
	// Transcripts maps conv_ids to the digest of their transcript as it
	// stands (artifacts.TranscriptDigest); a label carrying another
	// digest is read with Stale set. Nil: no label is stale.
	Transcripts map[string]string
}

// LineError is one bad line.
type LineError struct {
	Line  int
	Field string // "" when the line as a whole is bad (not JSON)
	Msg   string
}

func (e LineError) Error() string {
	if e.Field == "" {
		return fmt.Sprintf("line %d: %s", e.Line, e.Msg)
	}
	return fmt.Sprintf("line %d, field %q: %s", e.Line, e.Field, e.Msg)
}

// Error lists the bad lines of a labels file (at most MaxListed of them).
type Error struct {
	Path  string
	Lines []LineError
	// More counts bad lines beyond Lines.
	More int
}

// MaxListed bounds the bad lines an Error lists.
const MaxListed = 20

func (e *Error) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %d bad line(s); fix them (the file is yours: impactbench only appends to it)", e.Path, len(e.Lines)+e.More)
	for _, l := range e.Lines {
		b.WriteString("\n  ")
		b.WriteString(l.Error())
	}
	if e.More > 0 {
		fmt.Fprintf(&b, "\n  … and %d more", e.More)
	}
	return b.String()
}

// MaxLineBytes bounds one line of labels.jsonl: a line the viewer writes
// (a 4,000-character note at most) is a few KiB; a longer one was pasted
// by accident, and reading it whole would make every read of the file (each
// poll of the viewer) slow and large.
const MaxLineBytes = 64 << 10

// Read returns every label of the file at path, in file order. A missing
// file is no labels (nil, nil). Blank lines are skipped; every other line
// must be a label whose conversation and metric known accepts, or Read
// returns an *Error naming each bad line and field (and no labels). A last
// line without its newline is accepted when it is a whole label, and
// reported as an interrupted write when it is not. A line over
// MaxLineBytes is reported as such and ends the read there, after at most
// MaxLineBytes of it were read. The file may be a symbolic link (read, but
// never appended to: see Append).
func Read(path string, known Known) ([]Label, error) {
	f, err := fsx.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return parse(path, f, known)
}

func parse(path string, r io.Reader, known Known) ([]Label, error) {
	var out []Label
	bad := &Error{Path: path}
	report := func(e LineError) {
		if len(bad.Lines) < MaxListed {
			bad.Lines = append(bad.Lines, e)
		} else {
			bad.More++
		}
	}
	br := bufio.NewReaderSize(r, MaxLineBytes+1)
	for n := 1; ; n++ {
		line, err := br.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			report(LineError{Line: n, Msg: fmt.Sprintf("longer than the %s limit for one line; shorten it (the lines after it were not read)", formatBytes(MaxLineBytes))})
			break
		}
		if err != nil && !errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("read %s: %w", path, err)
		}
		torn := errors.Is(err, io.EOF) && len(line) > 0
		if len(bytes.TrimSpace(line)) > 0 {
			l, lerr := parseLine(line, known)
			if lerr != nil {
				lerr.Line = n
				if torn && lerr.Field == "" {
					lerr.Msg = "incomplete last line (no newline; an interrupted write?): " + lerr.Msg + "; complete or delete it"
				}
				report(*lerr)
			} else {
				l.Line = n
				out = append(out, l)
			}
		}
		if err != nil {
			break
		}
	}
	if len(bad.Lines) > 0 {
		return nil, bad
	}
	return out, nil
}

// formatBytes writes a size the way the docs state it.
func formatBytes(n int) string {
	if n%(1<<10) == 0 {
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}

// parseLine checks one line strictly: every field present with its JSON
// type, nothing else, and the conversation known.
func parseLine(line []byte, known Known) (Label, *LineError) {
	raw, e := rawLabel(line)
	if e != nil {
		return Label{}, e
	}
	var l Label
	str := func(name string, dst *string, required bool) *LineError {
		return stringField(raw, name, dst, required)
	}
	for _, f := range []struct {
		name     string
		dst      *string
		required bool
	}{{"conv_id", &l.ConvID, true}, {"metric_id", &l.MetricID, true}} {
		if e := str(f.name, f.dst, f.required); e != nil {
			return Label{}, e
		}
	}
	if e := checkIDs(l); e != nil {
		return Label{}, e
	}
	v, ok := raw["present"]
	switch {
	case !ok:
		return Label{}, &LineError{Field: "present", Msg: "missing"}
	case json.Unmarshal(v, &l.Present) != nil || isNull(v):
		return Label{}, &LineError{Field: "present", Msg: "want true or false, got " + string(v)}
	}
	if e := str("labeler", &l.Labeler, true); e != nil {
		return Label{}, e
	}
	if e := str("note", &l.Note, false); e != nil {
		return Label{}, e
	}
	var at string
	if e := str("at", &at, true); e != nil {
		return Label{}, e
	}
	t, err := time.Parse(time.RFC3339, at)
	if err != nil {
		return Label{}, &LineError{Field: "at", Msg: fmt.Sprintf("want an RFC 3339 time such as 2025-05-01T12:00:00Z, got %q", at)}
	}
	l.At = t
	if v, ok := raw["after_reveal"]; ok && (json.Unmarshal(v, &l.AfterReveal) != nil || isNull(v)) {
		return Label{}, &LineError{Field: "after_reveal", Msg: "want true or false, got " + string(v)}
	}
	if v, ok := raw["verdict_shown"]; ok {
		var shown bool
		if json.Unmarshal(v, &shown) != nil || isNull(v) {
			return Label{}, &LineError{Field: "verdict_shown", Msg: "want true or false, got " + string(v) + "; delete the key if you do not know it"}
		}
		l.VerdictShown = &shown
	}
	if _, ok := raw["transcript_sha256"]; ok {
		if e := str("transcript_sha256", &l.Transcript, true); e != nil {
			return Label{}, e
		}
		if !isDigest(l.Transcript) {
			return Label{}, &LineError{Field: "transcript_sha256", Msg: fmt.Sprintf("want 64 lowercase hexadecimal digits (a sha256), got %q; delete the key if you do not know it", l.Transcript)}
		}
	}
	if e := known.check(l); e != nil {
		return Label{}, e
	}
	if d, ok := known.Transcripts[l.ConvID]; ok && l.Transcript != "" && d != l.Transcript {
		l.Stale = true
	}
	return l, nil
}

// rawLabel is line's fields, undecoded: line must be UTF-8 text holding one
// JSON object whose keys are all label fields.
func rawLabel(line []byte) (map[string]json.RawMessage, *LineError) {
	// encoding/json would read bytes that are not UTF-8 as U+FFFD: a
	// label's conv_id or note would silently differ from the file.
	if !utf8.Valid(line) {
		return nil, &LineError{Msg: "not UTF-8 text (save the file as UTF-8)"}
	}
	if err := CheckObject(line); err != nil {
		return nil, &LineError{Msg: err.Error()}
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(line, &raw); err != nil {
		return nil, &LineError{Msg: "not a JSON object: " + err.Error()}
	}
	var unknown []string
	for k := range raw {
		if !isField(k) {
			unknown = append(unknown, k)
		}
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		return nil, &LineError{Field: unknown[0], Msg: "unknown field (a label has " + strings.Join(fields, ", ") + ")"}
	}
	return raw, nil
}

// stringField decodes field name of raw into dst: a JSON string, non-empty
// when required; a missing field is an error only when required.
func stringField(raw map[string]json.RawMessage, name string, dst *string, required bool) *LineError {
	v, ok := raw[name]
	if !ok {
		if required {
			return &LineError{Field: name, Msg: "missing"}
		}
		return nil
	}
	if err := json.Unmarshal(v, dst); err != nil || isNull(v) {
		return &LineError{Field: name, Msg: "want a string, got " + string(v)}
	}
	if required && strings.TrimSpace(*dst) == "" {
		return &LineError{Field: name, Msg: "empty"}
	}
	return nil
}

// checkIDs refuses a conv_id or metric_id that is not an id (package ids):
// labels are keyed by them, and a hand-written line is read as hostile as
// any other file.
func checkIDs(l Label) *LineError {
	for _, f := range []struct {
		name, v string
		max     int
	}{{"conv_id", l.ConvID, ids.MaxConv}, {"metric_id", l.MetricID, ids.MaxName}} {
		if why := ids.Problem(f.v, f.max); why != "" {
			return &LineError{Field: f.name, Msg: fmt.Sprintf("%s is not a valid %s (%s); ids hold only %s", ids.Quote(f.v), strings.ReplaceAll(f.name, "_", " "), why, ids.Allowed)}
		}
	}
	return nil
}

func (k Known) check(l Label) *LineError {
	if k.Conversations == nil {
		return nil
	}
	metric, ok := k.Conversations[l.ConvID]
	if !ok {
		return &LineError{Field: "conv_id", Msg: fmt.Sprintf("unknown conversation %q (not in any %s or %s)", l.ConvID, layout.RunFileRel("<target>", layout.ConversationsFile), layout.ScoresFile)}
	}
	if metric != l.MetricID {
		return &LineError{Field: "metric_id", Msg: fmt.Sprintf("%q is not the metric of conversation %q (%q)", l.MetricID, l.ConvID, metric)}
	}
	return nil
}

// Check reports whether l would be read back as a good line: every field
// set and, unless known is zero, its conversation and metric known. The
// error names the field.
func (k Known) Check(l Label) error {
	b, err := l.MarshalJSON()
	if err != nil {
		return err
	}
	if _, lerr := parseLine(b, k); lerr != nil {
		return fmt.Errorf("label: %s", strings.TrimPrefix(lerr.Error(), "line 0, "))
	}
	return nil
}

// CheckObject says whether b is exactly one JSON object with no key twice
// at its top level and nothing after it but white space. encoding/json
// would take the last of two "present" keys and ignore what follows the
// object, so a line or a request could say one thing to a person reading
// it and another to impactbench.
func CheckObject(b []byte) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	tok, err := dec.Token()
	if err != nil || tok != json.Delim('{') {
		return errors.New("not a JSON object")
	}
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return fmt.Errorf("not a JSON object: %v", err)
		}
		k, _ := tok.(string)
		if seen[k] {
			return fmt.Errorf("key %q appears twice", k)
		}
		seen[k] = true
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return fmt.Errorf("not a JSON object: %v", err)
		}
	}
	if _, err := dec.Token(); err != nil {
		return fmt.Errorf("not a JSON object: %v", err)
	}
	if rest := bytes.TrimSpace(b[dec.InputOffset():]); len(rest) > 0 {
		return errors.New("data after the JSON object")
	}
	return nil
}

func isField(k string) bool {
	for _, f := range fields {
		if f == k {
			return true
		}
	}
	return false
}

// isDigest: a sha256 in lowercase hex, as the viewer writes it.
func isDigest(s string) bool {
	if len(s) != 64 {
		return false
	}
	for _, c := range s {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

func isNull(v json.RawMessage) bool { return string(bytes.TrimSpace(v)) == "null" }

// appendMu serialises appends within the process; the file lock
// serialises them with other processes (the viewer and a script, say).
var appendMu sync.Mutex

// Append adds l to the labels file at path as one line, creating the file
// when missing. l.At zero means now. The line is checked first (known as in
// Read; the zero Known checks only the fields), written with a single
// O_APPEND write under an exclusive lock, and fsynced before Append
// returns, so a crash leaves either the whole line or, at worst, a torn
// last line that Read reports. A file whose last line lacks its newline
// gets one in the same write when that line is a whole label; when it is
// torn Append refuses and writes nothing. Append never rewrites the file,
// and never writes through a symbolic link: a labels.jsonl that is a link
// (to a shell's startup file, say) or anything but a regular file is
// refused, and nothing is written (package fsx).
func Append(path string, l Label, known Known) error {
	if l.At.IsZero() {
		l.At = time.Now().UTC().Truncate(time.Second)
	}
	if err := known.Check(l); err != nil {
		return err
	}
	line, err := l.MarshalJSON()
	if err != nil {
		return err
	}
	if len(line) > MaxLineBytes {
		return fmt.Errorf("label: the line would be %d bytes, over the %s limit for one line (a shorter note?)", len(line), formatBytes(MaxLineBytes))
	}
	line = append(line, '\n')
	appendMu.Lock()
	defer appendMu.Unlock()
	f, err := fsx.OpenAppend(path, fsx.Shared)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := fsx.Lock(f); err != nil {
		return fmt.Errorf("lock %s: %w", path, err)
	}
	defer fsx.Unlock(f)
	st, err := f.Stat()
	if err != nil {
		return err
	}
	if st.Size() > 0 {
		prefix, err := joinLastLine(path, st.Size())
		if err != nil {
			return err
		}
		line = append(prefix, line...)
	}
	n, err := f.Write(line)
	if err == nil && n < len(line) {
		err = io.ErrShortWrite
	}
	if err != nil {
		return fmt.Errorf("append to %s: %w (the last line may be incomplete: check it)", path, err)
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("sync %s: %w", path, err)
	}
	if st.Size() == 0 {
		fsx.SyncDir(filepath.Dir(path))
	}
	return nil
}

// joinLastLine returns what must precede a new line: nothing when the file
// ends with a newline, a newline when its last line is a whole label
// written without one (by hand), and an error when that line is torn.
func joinLastLine(path string, size int64) ([]byte, error) {
	f, err := fsx.OpenNoFollow(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	const window = 64 << 10
	off := max(0, size-window)
	buf := make([]byte, size-off)
	if _, err := f.ReadAt(buf, off); err != nil && !errors.Is(err, io.EOF) {
		return nil, err
	}
	if buf[len(buf)-1] == '\n' {
		return nil, nil
	}
	last := buf[bytes.LastIndexByte(buf, '\n')+1:]
	if len(bytes.TrimSpace(last)) == 0 {
		return []byte("\n"), nil
	}
	if _, lerr := parseLine(last, Known{}); lerr != nil {
		return nil, fmt.Errorf("%s: the last line is incomplete (an interrupted write?): %s; complete or delete it, nothing was appended", path, lerr.Msg)
	}
	return []byte("\n"), nil
}

// Consensus is the humans' verdict on one row: the majority of the latest
// label of each labeler. A tie has no verdict.
type Consensus struct {
	Key Key
	// Present is the majority verdict; nil on a tie.
	Present *bool
	// Labelers lists each labeler's latest verdict, by name (sorted).
	Labelers []string
	Votes    []bool
}

// Consensuses groups labels by row, keeps each labeler's last label (file
// order), and takes the majority. Rows are in order of first appearance.
func Consensuses(ls []Label) []Consensus {
	type acc struct {
		votes map[string]bool
	}
	idx := map[Key]int{}
	var keys []Key
	var accs []acc
	for _, l := range ls {
		i, ok := idx[l.Key()]
		if !ok {
			i = len(keys)
			idx[l.Key()] = i
			keys = append(keys, l.Key())
			accs = append(accs, acc{votes: map[string]bool{}})
		}
		accs[i].votes[l.Labeler] = l.Present
	}
	out := make([]Consensus, len(keys))
	for i, k := range keys {
		c := Consensus{Key: k}
		yes := 0
		for name := range accs[i].votes {
			c.Labelers = append(c.Labelers, name)
		}
		sort.Strings(c.Labelers)
		for _, name := range c.Labelers {
			v := accs[i].votes[name]
			c.Votes = append(c.Votes, v)
			if v {
				yes++
			}
		}
		if no := len(c.Votes) - yes; yes != no {
			p := yes > no
			c.Present = &p
		}
		out[i] = c
	}
	return out
}

// FaultKind: bad label lines are fixed in the file.
func (e *Error) FaultKind() fault.Kind { return fault.Input }
