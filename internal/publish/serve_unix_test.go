//go:build darwin || dragonfly || freebsd || linux || netbsd || openbsd

package publish

import (
	"io"
	"net/http"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// TestServeOnlyRegularFilesUnderDir: the preview answers any origin, so it
// serves only DIR's own regular files. A link to a file elsewhere (at the
// file, or a folder on its way) is not followed, and a named pipe is not
// waited on: each is "not found", at once.
func TestServeOnlyRegularFilesUnderDir(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "out")
	secret := filepath.Join(root, "secret")
	writeFile(t, filepath.Join(secret, "key.json"), `"secret"`)
	writeFile(t, filepath.Join(dir, "data", "models.json"), `{"models":[]}`)
	if err := os.Symlink(filepath.Join(secret, "key.json"), filepath.Join(dir, "data", "taxonomy.json")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(secret, filepath.Join(dir, "scenarios")); err != nil {
		t.Fatal(err)
	}
	pipe := filepath.Join(dir, "data", "nutrition.json")
	if err := syscall.Mkfifo(pipe, 0o644); err != nil {
		t.Fatal(err)
	}

	url := serveDir(t, dir)
	client := &http.Client{Timeout: 5 * time.Second}
	for path, want := range map[string]int{
		"/data/models.json":    200,
		"/data/taxonomy.json":  404,
		"/scenarios/key.json":  404,
		"/data/nutrition.json": 404,
	} {
		resp, err := client.Get(url + path)
		if err != nil {
			t.Errorf("GET %s: %v", path, err)
			// Unblock the handler waiting on the pipe.
			if w, err := os.OpenFile(pipe, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
				w.Close()
			}
			continue
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("GET %s: %d %q, want %d", path, resp.StatusCode, body, want)
		}
	}
}
