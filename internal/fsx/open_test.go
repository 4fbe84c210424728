package fsx

import (
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

func symlinkOrSkip(t *testing.T, target, link string) {
	t.Helper()
	if err := os.Symlink(target, link); err != nil {
		if runtime.GOOS == "windows" {
			t.Skip("symbolic links need privileges on Windows")
		}
		t.Fatal(err)
	}
}

// TestNoFollowOpensRefuseALink: appending, locking and no-follow reading
// refuse a link at the path, naming the path, and leave its target as it
// was; a dangling link is not created through either.
func TestNoFollowOpensRefuseALink(t *testing.T) {
	dir := t.TempDir()
	rc := filepath.Join(dir, "bashrc")
	if err := os.WriteFile(rc, []byte("# rc\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "labels.jsonl")
	symlinkOrSkip(t, rc, link)
	dangling := filepath.Join(dir, ".lock")
	symlinkOrSkip(t, filepath.Join(dir, "created-through-link"), dangling)

	opens := map[string]func(string) (*os.File, error){
		"OpenAppend":   func(p string) (*os.File, error) { return OpenAppend(p, Shared) },
		"OpenLockFile": OpenLockFile,
		"OpenNoFollow": OpenNoFollow,
	}
	for name, open := range opens {
		for _, p := range []string{link, dangling} {
			f, err := open(p)
			if err == nil {
				f.Close()
				t.Errorf("%s(%s) opened a symbolic link", name, filepath.Base(p))
				continue
			}
			var nr *NotRegularError
			if !errors.As(err, &nr) || !strings.Contains(err.Error(), p) || !strings.Contains(err.Error(), "symbolic link") {
				t.Errorf("%s(%s): error %v, want a *NotRegularError naming the path and the link", name, filepath.Base(p), err)
			}
		}
	}
	if got := readString(t, rc); got != "# rc\n" {
		t.Errorf("the link's target changed to %q", got)
	}
	if _, err := os.Lstat(filepath.Join(dir, "created-through-link")); !os.IsNotExist(err) {
		t.Errorf("a file was created through the dangling link (%v)", err)
	}
}

// TestOpenFollowsLinksToRegularFiles: reading a benchmark file that is a
// link (a shared scenarios.json, say) keeps working.
func TestOpenFollowsLinksToRegularFiles(t *testing.T) {
	dir := t.TempDir()
	real := filepath.Join(dir, "shared.json")
	if err := os.WriteFile(real, []byte("[]"), 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "scenarios.json")
	symlinkOrSkip(t, real, link)
	f, err := Open(link)
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	if b, err := ReadFile(link, 10); err != nil || string(b) != "[]" {
		t.Errorf("ReadFile through a link: %q, %v", b, err)
	}
}

func TestOpensRefuseADirectory(t *testing.T) {
	dir := t.TempDir()
	for name, open := range map[string]func(string) (*os.File, error){
		"Open":         Open,
		"OpenNoFollow": OpenNoFollow,
		"OpenAppend":   func(p string) (*os.File, error) { return OpenAppend(p, Shared) },
		"OpenLockFile": OpenLockFile,
	} {
		f, err := open(dir)
		if err == nil {
			f.Close()
			t.Errorf("%s opened a directory", name)
			continue
		}
		if !strings.Contains(err.Error(), dir) {
			t.Errorf("%s: %v does not name the path", name, err)
		}
	}
}

// TestOpenRefusesANamedPipeWithoutBlocking: a FIFO named scenarios.json
// would block a plain open forever.
func TestOpenRefusesANamedPipeWithoutBlocking(t *testing.T) {
	p := filepath.Join(t.TempDir(), "scenarios.json")
	if err := mkfifo(p); err != nil {
		t.Skip("no named pipes here:", err)
	}
	done := make(chan error, 1)
	go func() {
		f, err := Open(p)
		if err == nil {
			f.Close()
		}
		done <- err
	}()
	select {
	case err := <-done:
		var nr *NotRegularError
		if !errors.As(err, &nr) || !strings.Contains(err.Error(), "named pipe") {
			t.Errorf("err = %v, want a *NotRegularError saying named pipe", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Open blocked on a named pipe")
	}
}

func TestReadFileLimit(t *testing.T) {
	p := filepath.Join(t.TempDir(), "cost.json")
	if err := os.WriteFile(p, []byte("0123456789"), 0o644); err != nil {
		t.Fatal(err)
	}
	for name, read := range map[string]func(string, int64) ([]byte, error){"ReadFile": ReadFile, "ReadFileNoFollow": ReadFileNoFollow} {
		if _, err := read(p, 10); err != nil {
			t.Errorf("%s at the limit: %v", name, err)
		}
		var tl *TooLargeError
		if _, err := read(p, 9); !errors.As(err, &tl) || !strings.Contains(err.Error(), p) {
			t.Errorf("%s over the limit: %v", name, err)
		}
	}
}

// TestReadFileNoFollowRefusesALink: a file impactbench replaces itself
// (the review holds) is never read through a link.
func TestReadFileNoFollowRefusesALink(t *testing.T) {
	dir := t.TempDir()
	real := filepath.Join(dir, "elsewhere.json")
	if err := os.WriteFile(real, []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "holds.json")
	symlinkOrSkip(t, real, link)
	if b, err := ReadFileNoFollow(link, 10); err == nil {
		t.Errorf("read %q through a link", b)
	}
}

func TestOpenAppendAppends(t *testing.T) {
	p := filepath.Join(t.TempDir(), "labels.jsonl")
	for _, line := range []string{"a\n", "b\n"} {
		f, err := OpenAppend(p, Shared)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.WriteString(line); err != nil {
			t.Fatal(err)
		}
		f.Close()
	}
	if got := readString(t, p); got != "a\nb\n" {
		t.Errorf("got %q", got)
	}
}
