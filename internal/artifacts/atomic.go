package artifacts

import (
	"bufio"
	"fmt"

	"github.com/impactbench/impactbench/internal/fsx"
)

// ArrayWriter streams a top-level JSON array to a file, element by element,
// producing exactly the bytes MarshalPy would produce for the whole slice.
// Memory does not grow with the number of elements. The file appears at its
// path only on Close (an atomic write, see package fsx); Abort discards it.
type ArrayWriter struct {
	path string
	f    *fsx.File
	w    *bufio.Writer
	n    int
	buf  []byte
	err  error
	done bool
}

// NewArrayWriter starts writing path (created on Close).
func NewArrayWriter(path string) (*ArrayWriter, error) {
	f, err := fsx.Create(path, fsx.Shared)
	if err != nil {
		return nil, err
	}
	return &ArrayWriter{path: path, f: f, w: bufio.NewWriterSize(f, ioBuffer)}, nil
}

// ioBuffer is the buffer of a row file's reader and writer. A study keeps
// one of each open per benchmark and target at once (68 writers and as
// many readers in the 17-benchmark preset): at 256 KiB they were 37 MB of
// a 59 MB live heap at its peak, where 32 KiB still moves a row file in
// few system calls (the JSON decoder keeps a buffer of its own).
const ioBuffer = 32 << 10

// Write appends one element. After an error the writer is unusable; call Abort.
func (a *ArrayWriter) Write(v any) error {
	if a.done {
		return fmt.Errorf("write %s: writer already closed", a.path)
	}
	if a.err != nil {
		return a.err
	}
	a.buf = a.buf[:0]
	if a.n == 0 {
		a.buf = append(a.buf, "[\n  "...)
	} else {
		a.buf = append(a.buf, ",\n  "...)
	}
	var err error
	a.buf, err = marshalPyAt(a.buf, v, 1)
	if err != nil {
		a.err = fmt.Errorf("write %s element %d: %w", a.path, a.n, err)
		return a.err
	}
	if _, err := a.w.Write(a.buf); err != nil {
		a.err = err // fsx names the file
		return a.err
	}
	if cap(a.buf) > 1<<20 {
		a.buf = nil // don't pin one huge element's buffer
	}
	a.n++
	return nil
}

// Len is the number of elements written so far.
func (a *ArrayWriter) Len() int { return a.n }

// Close finishes the array and atomically replaces the target file. If an
// earlier Write failed, Close discards the temp file and returns that error.
func (a *ArrayWriter) Close() error {
	if a.done {
		return nil
	}
	if a.err != nil {
		a.Abort()
		return a.err
	}
	a.done = true
	tail := "\n]"
	if a.n == 0 {
		tail = "[]"
	}
	if _, err := a.w.WriteString(tail); err != nil {
		a.f.Abort()
		return err
	}
	if err := a.w.Flush(); err != nil {
		a.f.Abort()
		return err
	}
	return a.f.Commit()
}

// Abort discards the temp file; the target file is left untouched. Safe to
// call after Close (no-op), so `defer w.Abort()` is the idiom.
func (a *ArrayWriter) Abort() {
	if a.done {
		return
	}
	a.done = true
	a.f.Abort()
}

// WriteJSON marshals v with MarshalPy and writes it atomically to path.
func WriteJSON(path string, v any) error {
	f, err := fsx.Create(path, fsx.Shared)
	if err != nil {
		return err
	}
	if err := EncodePyTo(f, v); err != nil {
		f.Abort()
		return fmt.Errorf("write %s: %w", path, err)
	}
	return f.Commit()
}

// writeArray streams rows through an ArrayWriter.
func writeArray[T any](path string, rows []T) error {
	w, err := NewArrayWriter(path)
	if err != nil {
		return err
	}
	defer w.Abort()
	for i := range rows {
		if err := w.Write(&rows[i]); err != nil {
			return err
		}
	}
	return w.Close()
}
