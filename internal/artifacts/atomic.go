package artifacts

import (
	"bufio"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
)

// WriteFileAtomic replaces path with data so that readers (and a crash)
// see either the old file or the complete new one, never a torn write:
// write a temp file in the same directory, fsync it, rename it over path,
// fsync the directory. Parent directories are created. A new file gets mode
// 0644; an existing file keeps its mode.
func WriteFileAtomic(path string, data []byte) error {
	f, err := createTemp(path)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		_ = f.Close()
		_ = os.Remove(f.Name())
		return fmt.Errorf("write %s: %w", path, err)
	}
	return commitTemp(f, path)
}

// createTemp makes the parent directories and a temp file next to path.
func createTemp(path string) (*os.File, error) {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("create directory for %s: %w", path, err)
	}
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return nil, fmt.Errorf("create temp file for %s: %w", path, err)
	}
	return f, nil
}

// commitTemp syncs, closes and renames f over path, then syncs the directory.
// On failure the temp file is removed.
func commitTemp(f *os.File, path string) (err error) {
	tmp := f.Name()
	defer func() {
		if err != nil {
			_ = os.Remove(tmp)
		}
	}()
	mode := fs.FileMode(0o644)
	if st, statErr := os.Stat(path); statErr == nil {
		mode = st.Mode().Perm()
	}
	if err := f.Chmod(mode); err != nil && runtime.GOOS != "windows" {
		_ = f.Close()
		return fmt.Errorf("chmod %s: %w", tmp, err)
	}
	if err := f.Sync(); err != nil {
		_ = f.Close()
		return fmt.Errorf("sync %s: %w", tmp, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("close %s: %w", tmp, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("replace %s: %w", path, err)
	}
	syncDir(filepath.Dir(path))
	return nil
}

// syncDir makes the rename durable. Best effort: some platforms and file
// systems (Windows, some FUSE mounts) cannot fsync a directory, and the
// data itself is already safely on disk at this point.
func syncDir(dir string) {
	d, err := os.Open(dir)
	if err != nil {
		return
	}
	_ = d.Sync()
	_ = d.Close()
}

// ArrayWriter streams a top-level JSON array to a file, element by element,
// producing exactly the bytes MarshalPy would produce for the whole slice.
// Memory does not grow with the number of elements. The file appears at its
// path only on Close (atomic rename); Abort discards it.
type ArrayWriter struct {
	path string
	f    *os.File
	w    *bufio.Writer
	n    int
	buf  []byte
	err  error
	done bool
}

// NewArrayWriter starts writing path (created on Close).
func NewArrayWriter(path string) (*ArrayWriter, error) {
	f, err := createTemp(path)
	if err != nil {
		return nil, err
	}
	return &ArrayWriter{path: path, f: f, w: bufio.NewWriterSize(f, 256<<10)}, nil
}

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
		a.err = fmt.Errorf("write %s: %w", a.path, err)
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
		_ = a.f.Close()
		_ = os.Remove(a.f.Name())
		return fmt.Errorf("write %s: %w", a.path, err)
	}
	if err := a.w.Flush(); err != nil {
		_ = a.f.Close()
		_ = os.Remove(a.f.Name())
		return fmt.Errorf("write %s: %w", a.path, err)
	}
	return commitTemp(a.f, a.path)
}

// Abort discards the temp file; the target file is left untouched. Safe to
// call after Close (no-op), so `defer w.Abort()` is the idiom.
func (a *ArrayWriter) Abort() {
	if a.done {
		return
	}
	a.done = true
	_ = a.f.Close()
	_ = os.Remove(a.f.Name())
}

// WriteJSON marshals v with MarshalPy and writes it atomically to path.
func WriteJSON(path string, v any) error {
	f, err := createTemp(path)
	if err != nil {
		return err
	}
	if err := EncodePyTo(f, v); err != nil {
		_ = f.Close()
		_ = os.Remove(f.Name())
		return fmt.Errorf("write %s: %w", path, err)
	}
	return commitTemp(f, path)
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
