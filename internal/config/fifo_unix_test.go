//go:build darwin || dragonfly || freebsd || linux || netbsd || openbsd

package config

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A named pipe in place of a YAML file (or .env) would block a reader
// forever: every loader refuses it at once, as an *Error naming the file.
func TestNamedPipesAreRefused(t *testing.T) {
	for _, tc := range []struct {
		name string
		load func(path string) error
	}{
		{"benchmark.yaml", func(p string) error { _, err := LoadBenchmark(p); return err }},
		{"models.yaml", func(p string) error { _, err := LoadStudyModels(p); return err }},
		{"config.yaml", func(p string) error {
			_, err := LoadWithOptions(p, LoadOptions{AllowMissingEnv: true, LookupEnv: noEnv})
			return err
		}},
		{".env", func(p string) error {
			_, err := LoadWithOptions(filepath.Join(filepath.Dir(p), "config.yaml"), LoadOptions{AllowMissingEnv: true, LookupEnv: noEnv})
			return err
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sub := t.TempDir()
			copyFile(t, "testdata/good/empty.yaml", sub, "config.yaml")
			path := filepath.Join(sub, tc.name)
			_ = os.Remove(path)
			if err := syscall.Mkfifo(path, 0o644); err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() { done <- tc.load(path) }()
			select {
			case err := <-done:
				var ce *Error
				if !errors.As(err, &ce) || ce.File != path || !strings.Contains(err.Error(), "named pipe") {
					t.Fatalf("want an *Error naming %s as a named pipe, got %T %v", path, err, err)
				}
			case <-time.After(5 * time.Second):
				// Unblock the reader so the test ends.
				if w, err := os.OpenFile(path, os.O_WRONLY, 0); err == nil {
					w.Close()
				}
				t.Fatalf("loading a named pipe as %s blocked", tc.name)
			}
		})
	}
}
