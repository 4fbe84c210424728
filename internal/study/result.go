package study

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"unicode/utf8"

	"github.com/impactbench/impactbench/internal/artifacts"
	"github.com/impactbench/impactbench/internal/fsx"
)

// ResultVersion is study.json's format version.
const ResultVersion = 1

// Result is study.json: every model's score at every level and age group,
// with intervals, paired differences and rank intervals
// (docs/study.md#studyjson describes every field).
type Result struct {
	Version int         `json:"version"`
	Conf    float64     `json:"conf"`
	Methods Methods     `json:"methods"`
	Ages    []string    `json:"ages"`
	Models  []ModelInfo `json:"models"`
	Nodes   []*Node     `json:"nodes"`
	Cells   []Cell      `json:"cells"`
	Pairs   []Pair      `json:"pairs"`
	// JudgeError says whether the scores account for the judges' errors:
	// which models' cells carry a corrected score, and that the others'
	// intervals leave judge error out.
	JudgeError string   `json:"judge_error"`
	Warnings   []string `json:"warnings"`
}

// Methods says how each number was made.
type Methods struct {
	Score    string `json:"score"`
	Interval string `json:"interval"`
	Pairs    string `json:"pairs"`
	Ranks    string `json:"ranks"`
	Thin     string `json:"thin"`
	// ByPlacement says how an area cell's by_placement is made.
	ByPlacement string `json:"by_placement"`
}

// ModelInfo is one model of the study.
type ModelInfo struct {
	ID       string   `json:"id"`
	Name     string   `json:"name"`
	Provider string   `json:"provider"`
	RunDir   string   `json:"run_dir"`
	Surfaces []string `json:"surfaces"`
	// Refused lists, per benchmark of the study, the model's target
	// replies its provider stopped for safety (refused.go); omitted when
	// none was, so a study without any is unchanged.
	Refused []BenchRefused `json:"refused,omitempty"`
}

// Cell is one model's score at one node and age group.
type Cell struct {
	Node  string   `json:"node"`
	Age   string   `json:"age"`
	Model string   `json:"model"`
	Score *float64 `json:"score"` // mean of the metrics' pass rates: the float64 nearest the exact fraction, unrounded
	Lo    *float64 `json:"lo"`
	Hi    *float64 `json:"hi"`
	SE    *float64 `json:"se"`
	DF    *float64 `json:"df"` // null: infinite
	// Metrics with judged rows, of MetricsExpected at the node.
	Metrics         int  `json:"metrics"`
	MetricsExpected int  `json:"metrics_expected"`
	Complete        bool `json:"complete"`
	// Scenarios counts the base scenarios (clusters) over all metrics;
	// MinScenarios the fewest of any one metric.
	Scenarios     int    `json:"scenarios"`
	MinScenarios  int    `json:"min_scenarios"`
	Conversations int    `json:"conversations"`
	Thin          bool   `json:"thin"`
	Warning       string `json:"warning,omitempty"`
	// Rank among the node's ranked models (1 = best; null: not ranked),
	// and its interval.
	Rank   *int `json:"rank"`
	RankLo *int `json:"rank_lo"`
	RankHi *int `json:"rank_hi"`
	// ByPlacement (area cells) is the score as impactbench-web's area card
	// computes it: every placement of a metric in the area's subareas
	// counts (Node.Placements weighs them), with its interval. Score is
	// the site's leaderboard rule (each metric once), and ranks use it.
	ByPlacement *Estimate `json:"by_placement,omitempty"`
	// Corrected (models with judge calibration in results.json) is the
	// score corrected for the judge's errors, with its wider interval
	// (calib.go); Result.JudgeError says what the other cells leave out.
	Corrected *Corrected `json:"corrected,omitempty"`
	// TiedWith lists the ranked models this one is not shown to differ
	// from: their pair's Holm-adjusted p-value is not below Alpha (not at
	// metric nodes).
	TiedWith []string `json:"tied_with,omitempty"`
}

// Estimate is a score under another rule, with its interval (unrounded).
type Estimate struct {
	Score float64  `json:"score"`
	Lo    float64  `json:"lo"`
	Hi    float64  `json:"hi"`
	SE    float64  `json:"se"`
	DF    *float64 `json:"df"` // null: infinite
}

// Pair is a paired difference A − B of two models at one node and age,
// over the metrics and base scenarios both have.
type Pair struct {
	Node string  `json:"node"`
	Age  string  `json:"age"`
	A    string  `json:"a"`
	B    string  `json:"b"`
	Diff float64 `json:"diff"`
	Lo   float64 `json:"lo"`
	Hi   float64 `json:"hi"`
	P    float64 `json:"p"`
	// PAdjusted is Holm's adjusted p-value over every pair of ranked
	// models at the same node and age; Significant is PAdjusted < Alpha
	// (and tied_with its negation).
	PAdjusted   float64  `json:"p_adjusted"`
	Significant bool     `json:"significant"`
	DF          *float64 `json:"df"`
	Metrics     int      `json:"metrics"`
	Scenarios   int      `json:"scenarios"`
}

// Cell returns the cell of a model at a node and age.
func (r *Result) Cell(node, age, model string) (Cell, bool) {
	for _, c := range r.Cells {
		if c.Node == node && c.Age == age && c.Model == model {
			return c, true
		}
	}
	return Cell{}, false
}

// Encode writes study.json: the top-level object indented, every cell and
// pair on one line (a 16-model study has ~15,000 cells; one per line keeps
// the file greppable and diffs readable).
func (r *Result) Encode(w io.Writer) error {
	var b bytes.Buffer
	b.WriteString("{\n")
	field := func(name string, v any, last bool) error {
		data, err := json.MarshalIndent(v, "  ", "  ")
		if err != nil {
			return err
		}
		fmt.Fprintf(&b, "  %q: %s", name, data)
		if !last {
			b.WriteString(",")
		}
		b.WriteString("\n")
		return nil
	}
	lines := func(name string, n int, item func(i int) any, last bool) error {
		fmt.Fprintf(&b, "  %q: [", name)
		for i := range n {
			data, err := json.Marshal(item(i))
			if err != nil {
				return err
			}
			if i > 0 {
				b.WriteString(",")
			}
			b.WriteString("\n    ")
			b.Write(data)
		}
		if n > 0 {
			b.WriteString("\n  ")
		}
		b.WriteString("]")
		if !last {
			b.WriteString(",")
		}
		b.WriteString("\n")
		return nil
	}
	warnings := r.Warnings
	if warnings == nil {
		warnings = []string{}
	}
	for _, step := range []func() error{
		func() error { return field("version", r.Version, false) },
		func() error { return field("conf", r.Conf, false) },
		func() error { return field("methods", r.Methods, false) },
		func() error { return field("ages", r.Ages, false) },
		func() error { return field("models", r.Models, false) },
		func() error { return lines("nodes", len(r.Nodes), func(i int) any { return r.Nodes[i] }, false) },
		func() error { return lines("cells", len(r.Cells), func(i int) any { return r.Cells[i] }, false) },
		func() error { return lines("pairs", len(r.Pairs), func(i int) any { return r.Pairs[i] }, false) },
		func() error { return field("judge_error", r.JudgeError, false) },
		func() error { return field("warnings", warnings, true) },
	} {
		if err := step(); err != nil {
			return err
		}
	}
	b.WriteString("}\n")
	_, err := w.Write(b.Bytes())
	return err
}

// WriteFile writes study.json atomically.
func (r *Result) WriteFile(path string) error {
	var b bytes.Buffer
	if err := r.Encode(&b); err != nil {
		return err
	}
	return fsx.WriteFile(path, b.Bytes(), fsx.Shared)
}

// MaxResultBytes bounds study.json: the July 2026 study's is 11 MB.
const MaxResultBytes = 256 << 20

// ReadResult reads a study.json (a *artifacts.FileError when damaged).
// It decodes from the file as it reads, so that memory follows what the
// file holds, not its size (read whole, a study.json padded to 1 GiB
// took 2.2 GB).
func ReadResult(path string) (*Result, error) {
	f, err := openResult(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var r Result
	in := &utf8Reader{r: bufio.NewReader(io.LimitReader(f, MaxResultBytes))}
	if err := decodeResult(in, &r); err != nil {
		return nil, &artifacts.FileError{Path: path, Row: -1, Err: fmt.Errorf("not a study.json: %w", err), Hint: " (rewrite it with `impactbench study`)"}
	}
	if r.Version != ResultVersion {
		return nil, &artifacts.FileError{Path: path, Row: -1, Field: "version", Err: fmt.Errorf("version %d, this impactbench reads version %d", r.Version, ResultVersion), Hint: " (rewrite it with `impactbench study`)"}
	}
	return &r, nil
}

// openResult opens study.json for ReadResult: a regular file (links
// followed) of at most MaxResultBytes, else a *artifacts.FileError; a
// missing file stays an fs.ErrNotExist error.
func openResult(path string) (*os.File, error) {
	f, err := artifacts.OpenInput(path)
	if err != nil {
		return nil, err
	}
	if st, err := f.Stat(); err != nil || st.Size() > MaxResultBytes {
		f.Close()
		if err == nil {
			err = fmt.Errorf("file is larger than the %s limit for this file", artifacts.FormatBytes(MaxResultBytes))
		}
		return nil, &artifacts.FileError{Path: path, Row: -1, Err: err}
	}
	return f, nil
}

// utf8Reader passes on whole UTF-8 characters and fails at the first byte
// that is not UTF-8: encoding/json would read it as U+FFFD, so a name in
// study.json would silently differ from the file.
type utf8Reader struct {
	r   *bufio.Reader
	off int64
	err error // sticky: encoding/json may drop an error returned with data
}

func (u *utf8Reader) Read(p []byte) (int, error) {
	if u.err != nil {
		return 0, u.err
	}
	n := 0
	for n+utf8.UTFMax <= len(p) {
		c, size, err := u.r.ReadRune()
		if err != nil {
			if n > 0 && errors.Is(err, io.EOF) {
				return n, nil
			}
			return n, err
		}
		if c == utf8.RuneError && size == 1 {
			u.err = fmt.Errorf("bytes that are not UTF-8 at byte %d", u.off)
			return n, u.err
		}
		n += utf8.EncodeRune(p[n:], c)
		u.off += int64(size)
		if u.r.Buffered() == 0 {
			break // return what is here rather than wait for more
		}
	}
	return n, nil
}
