package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/goccy/go-yaml/ast"

	"github.com/impactbench/impactbench/internal/fsx"
)

// Bounds on what config.yaml and benchmark.yaml may ask for. A value
// outside them is a typo or a paste accident (num_samples: 99999999999999
// would run until killed), refused before anything runs. The README's
// config reference lists them.
const (
	MaxTurns              = 100
	MaxNumSamples         = 1000
	MaxScenariosPerMetric = 1000
	// MaxVariants bounds the demographic combinations (the product of the
	// axis sizes): each base scenario is rewritten once per combination.
	MaxVariants = 1000
	// MaxScenariosPerMetricTotal bounds scenarios_per_metric × variants,
	// the scenarios.json rows of one metric.
	MaxScenariosPerMetricTotal = 10_000
	// MaxConversationsPerMetric bounds scenario rows × num_samples, the
	// conversations of one metric per target.
	MaxConversationsPerMetric = 100_000
	MaxConcurrency            = 10_000 // run.concurrency.*, max_concurrency
	MaxOutputTokens           = 262_144
	MaxCacheMinTokens         = 1 << 20 // cache_min_tokens
	MaxRetries                = 100
	MaxTimeout                = 24 * time.Hour // per call
	MaxMetrics                = 1000

	// MaxStringBytes bounds any single string value; MaxConfigBytes and
	// MaxBenchmarkBytes bound the files, so that a pasted 300 MB value is
	// refused after reading a few MB instead of being parsed for minutes.
	MaxStringBytes    = 1 << 20
	MaxConfigBytes    = 4 << 20
	MaxBenchmarkBytes = 16 << 20
)

// utf8BOM is the UTF-8 byte-order mark.
var utf8BOM = []byte("\xef\xbb\xbf")

// readCapped reads a YAML file, refusing one over limit bytes with the
// line (and key) of the overlong value when one line is longer than
// MaxStringBytes, which is how such files come about. Anything but a
// regular file (a named pipe, which would block the read forever, a
// device, a directory) is refused before a byte is read; links are
// followed (a benchmark folder may link to a shared benchmark.yaml).
func readCapped(path string, limit int64) ([]byte, error) {
	f, err := openRegular(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	src, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(src)) <= limit {
		// A byte-order mark opens files saved by some Windows editors;
		// upstream's YAML reader skips it at the start of the stream, so
		// such a file is the same file here (it failed as a syntax error).
		return bytes.TrimPrefix(src, utf8BOM), nil
	}
	ps := &problems{file: path}
	line, key := longLine(src)
	if line > 0 {
		ps.add(line, 0, key, "value is longer than the %s limit for one value", mib(MaxStringBytes))
	} else {
		ps.add(0, 0, "", "file is larger than the %s limit", mib(int(limit)))
	}
	return nil, ps.err()
}

// longLine finds the first line longer than MaxStringBytes and the key it
// starts with ("" when it does not look like key: value).
func longLine(src []byte) (line int, key string) {
	for n, rest := 1, src; len(rest) > 0; n++ {
		i := bytes.IndexByte(rest, '\n')
		l := rest
		if i >= 0 {
			l, rest = rest[:i], rest[i+1:]
		} else {
			rest = nil
		}
		if len(l) <= MaxStringBytes {
			continue
		}
		head := strings.TrimLeft(string(l[:min(len(l), 200)]), " -")
		if k, _, ok := strings.Cut(head, ":"); ok && !strings.ContainsAny(k, " \t\"'{[") && utf8.ValidString(k) {
			key = k
		}
		return n, key
	}
	return 0, ""
}

// openRegular opens path for reading with fsx.Open, turning its refusal
// of a non-regular file into an *Error naming the file (exit 2).
func openRegular(path string) (*os.File, error) {
	f, err := fsx.Open(path)
	var nr *fsx.NotRegularError
	if errors.As(err, &nr) {
		return nil, &Error{File: path, Problems: []Problem{{
			Msg: fmt.Sprintf("is %s, not a regular file: impactbench reads only regular files", nr.What), Err: err}}}
	}
	return f, err
}

func mib(n int) string {
	if n%(1<<20) == 0 {
		return fmt.Sprintf("%d MiB", n>>20)
	}
	return fmt.Sprintf("%d bytes", n)
}

// checkText refuses a string value that is not UTF-8 or is over
// MaxStringBytes. The value itself is never quoted (it may be a key).
func (t *tree) checkText(raw ast.Node, field, s string) bool {
	line, col := nodePos(raw)
	switch {
	case !utf8.ValidString(s):
		t.ps.add(line, col, field, "contains bytes that are not UTF-8; save the file as UTF-8")
	case len(s) > MaxStringBytes:
		t.ps.add(line, col, field, "value is %d bytes long, over the %s limit for one value", len(s), mib(MaxStringBytes))
	default:
		return true
	}
	t.bad[field] = true
	t.textProblem = true
	return false
}

// checkFileUTF8 reports bytes that are not UTF-8 outside any value (in a
// comment, say) when no value-level problem named them already.
func (t *tree) checkFileUTF8(src []byte) {
	if t.textProblem || utf8.Valid(src) {
		return
	}
	line, col := 1, 1
	for i := 0; i < len(src); {
		r, size := utf8.DecodeRune(src[i:])
		if r == utf8.RuneError && size == 1 {
			break
		}
		if r == '\n' {
			line, col = line+1, 1
		} else {
			col++
		}
		i += size
	}
	t.ps.add(line, col, t.fieldAt(line, col), "contains bytes that are not UTF-8; save the file as UTF-8")
}

// bounded reads an integer within [lo, hi].
func (t *tree) bounded(raw ast.Node, field string, lo, hi int, why string) (int, bool) {
	v, ok := t.integer(raw, field)
	if !ok {
		return lo, false
	}
	if v < lo || v > hi {
		line, col := nodePos(raw)
		msg := fmt.Sprintf("must be at least %d, got %d", lo, v)
		if v > hi {
			msg = fmt.Sprintf("must be at most %d, got %d", hi, v)
		}
		if why != "" {
			msg += " (" + why + ")"
		}
		t.ps.add(line, col, field, "%s", msg)
		return lo, false
	}
	return v, true
}
