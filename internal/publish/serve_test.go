package publish

import (
	"context"
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"testing"

	"github.com/impactbench/impactbench/internal/layout"
)

// TestServeSendsTheCORSHeader: the preview serves the published files on
// loopback with Access-Control-Allow-Origin: * (what impactbench-web needs
// to fetch them from its own origin), answers a preflight, lists no
// directory, and refuses a non-loopback address.
func TestServeSendsTheCORSHeader(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "data"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "data", layout.PublishedModelsFile), []byte(`{"models":[]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	url := serveDir(t, dir)
	req, _ := http.NewRequest(http.MethodGet, url+"/data/"+layout.PublishedModelsFile, nil)
	req.Header.Set("Origin", "http://localhost:5173")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || string(body) != `{"models":[]}` || resp.Header.Get("Access-Control-Allow-Origin") != "*" {
		t.Errorf("GET: %d %q, Access-Control-Allow-Origin %q", resp.StatusCode, body, resp.Header.Get("Access-Control-Allow-Origin"))
	}
	req, _ = http.NewRequest(http.MethodOptions, url+"/data/"+layout.PublishedModelsFile, nil)
	req.Header.Set("Origin", "http://localhost:5173")
	req.Header.Set("Access-Control-Request-Method", "GET")
	if resp, err = http.DefaultClient.Do(req); err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent || resp.Header.Get("Access-Control-Allow-Origin") != "*" {
		t.Errorf("preflight: %d, %q", resp.StatusCode, resp.Header.Get("Access-Control-Allow-Origin"))
	}
	if resp, err = http.Get(url + "/data/"); err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("directory listing: %d", resp.StatusCode)
	}
	var nl *NotLoopbackError
	if err := Serve(context.Background(), dir, "0.0.0.0:0", nil); !errors.As(err, &nl) {
		t.Errorf("Serve on 0.0.0.0: %v, want a refusal", err)
	}
}

// serveDir starts Serve on dir at a free loopback port and returns its base
// URL; when the test ends the server is stopped, and must stop cleanly.
func serveDir(t *testing.T, dir string) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	base := make(chan string, 1)
	served := make(chan error, 1)
	go func() { served <- Serve(ctx, dir, "127.0.0.1:0", func(b string) { base <- b }) }()
	select {
	case url := <-base:
		t.Cleanup(func() {
			cancel()
			if err := <-served; err != nil {
				t.Errorf("Serve after cancel: %v", err)
			}
		})
		return url
	case err := <-served:
		cancel()
		t.Fatal(err)
		return ""
	}
}
