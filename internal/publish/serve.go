package publish

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"path"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/impactbench/impactbench/internal/fsx"
)

// NotLoopbackError refuses to serve a study's files beyond this machine:
// the preview answers any origin (the CORS header the site needs), which
// is fine on loopback and not on a network.
type NotLoopbackError struct{ Addr string }

func (e *NotLoopbackError) Error() string {
	return fmt.Sprintf("--addr %s: the preview serves on loopback only (127.0.0.1, ::1 or localhost); use a static host for anything else", e.Addr)
}

// CheckAddr refuses an --addr that Serve would refuse: not HOST:PORT, or
// not a loopback host (a *NotLoopbackError). Callers check it before
// publishing, so a refused flag leaves the output folder as it was.
func CheckAddr(addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("--addr %s: %w (give HOST:PORT, e.g. 127.0.0.1:8080)", addr, err)
	}
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return &NotLoopbackError{Addr: addr}
	}
	return nil
}

// Serve serves dir (what publish wrote) over HTTP at addr, a loopback
// address, until ctx ends: GET and HEAD of its files with
// "Access-Control-Allow-Origin: *", which impactbench-web needs to fetch
// them from its own origin (a plain static server such as `python3 -m
// http.server` sends no such header, and the browser then refuses the
// site every file). ready is called with the base URL once it listens.
func Serve(ctx context.Context, dir, addr string, ready func(base string)) error {
	if err := CheckAddr(addr); err != nil {
		return err
	}
	ln, err := net.Listen("tcp", addr)
	if errors.Is(err, syscall.EADDRINUSE) {
		return fmt.Errorf("%w (another process serves there, perhaps an earlier `impactbench publish --serve` or `view`: stop it, or pick a free port with --addr 127.0.0.1:PORT)", err)
	}
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: corsFiles(dir), ReadHeaderTimeout: 10 * time.Second}
	done := make(chan struct{})
	go func() {
		defer close(done)
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}()
	if ready != nil {
		ready("http://" + ln.Addr().String())
	}
	err = srv.Serve(ln)
	<-done
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

// corsFiles serves dir's files (no directory listings) to any origin.
func corsFiles(dir string) http.Handler {
	files := http.FileServer(regularFiles(dir))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Access-Control-Allow-Origin", "*")
		h.Set("Access-Control-Allow-Methods", "GET, HEAD, OPTIONS")
		switch {
		case r.Method == http.MethodOptions:
			w.WriteHeader(http.StatusNoContent)
		case r.Method != http.MethodGet && r.Method != http.MethodHead:
			http.Error(w, "read-only", http.StatusMethodNotAllowed)
		case strings.HasSuffix(r.URL.Path, "/"):
			http.NotFound(w, r)
		default:
			files.ServeHTTP(w, r)
		}
	})
}

// regularFiles is dir's regular files, as http.FileServer opens them: a
// symbolic link (at the file or on its way under dir) is not followed — the
// preview answers any origin, so a link planted in a shared folder must
// not serve a file from elsewhere on the machine — and a named pipe is
// refused instead of blocking the request forever. Both are "not found".
type regularFiles string

func (d regularFiles) Open(name string) (http.File, error) {
	rel := strings.TrimPrefix(path.Clean("/"+name), "/")
	if rel == "" {
		return nil, fs.ErrNotExist
	}
	if err := noLinks(string(d), rel); err != nil {
		return nil, fs.ErrNotExist
	}
	f, err := fsx.OpenNoFollow(filepath.Join(string(d), filepath.FromSlash(rel)))
	if err != nil {
		return nil, fs.ErrNotExist
	}
	return f, nil
}
