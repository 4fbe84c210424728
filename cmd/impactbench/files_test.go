package main

import (
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

// The file layer, end to end: what a run writes respects the umask, the
// call store is private, temp files a killed write left anywhere (the call
// store's calls/<target>/sim/… included) are swept, and the lock never
// writes through a symbolic link.

// modes maps every file and directory under root (relative) to its mode.
func modes(t *testing.T, root string) map[string]fs.FileMode {
	t.Helper()
	out := map[string]fs.FileMode{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		out[filepath.ToSlash(rel)] = info.Mode()
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// staleTemp writes a temp file of a killed write, an hour old.
func staleTemp(t *testing.T, path string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte("half"), 0o644); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-time.Hour)
	if err := os.Chtimes(path, old, old); err != nil {
		t.Fatal(err)
	}
}

// TestRunFileModesAndSweep: a run under umask 077 writes its results 0600
// in 0700 directories (not forced to 0644); under 022 they are 0644/0755;
// under both the call store is 0600/0700. Stale temp files deep in the
// call store and the run directories are removed when the run opens the
// benchmark; a file that merely looks like one is not.
func TestRunFileModesAndSweep(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("Unix modes")
	}
	t.Parallel()
	cfg := offlineConfigOf{Comment: "# file modes", Turns: 1, Careful: 0.8}.yaml()
	for _, umask := range []string{"077", "022"} {
		t.Run("umask "+umask, func(t *testing.T) {
			t.Parallel()
			p := newProject(t, cfg)
			p.addBench("b", badInputBench)
			cache := p.path(".cache", "b")
			temps := []string{
				filepath.Join(cache, "calls", "careful", "sim", ".tmp-123"),                                     // an earlier version's call store
				filepath.Join(cache, "calls", "careful", "eval", ".m01_s001_v01__s0.json.tmp-0123456789abcdef"), // this version's
				filepath.Join(p.benchDir("b"), ".results.json.tmp-fedcba9876543210"),                            // an output's
			}
			for _, tmp := range temps {
				staleTemp(t, tmp)
			}
			lookalike := filepath.Join(cache, "calls", "careful", "sim", ".notes.tmp-draft")
			staleTemp(t, lookalike)
			// Directories the test made (0755) are the run's only from here on;
			// the call store's own directory must be closed all the same.
			madeBench, madeStore := modes(t, p.benchDir("b")), modes(t, filepath.Join(cache, "calls"))

			cmd := exec.Command("/bin/sh", "-c", `umask `+umask+` && exec "$0" "$@"`, ibBin, "run", "b", "--quiet")
			cmd.Dir, cmd.Env = p.dir, p.environ()
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("run under umask %s: %v\n%s", umask, err, out)
			}
			for _, tmp := range temps {
				if _, err := os.Stat(tmp); !os.IsNotExist(err) {
					t.Errorf("stale temp %s is still there (%v)", tmp, err)
				}
			}
			if _, err := os.Stat(lookalike); err != nil {
				t.Errorf("the sweep removed %s, which is not a temp name of impactbench: %v", lookalike, err)
			}

			wantFile, wantDir := fs.FileMode(0o600), fs.FileMode(0o700)
			if umask == "022" {
				wantFile, wantDir = 0o644, 0o755
			}
			n := 0
			for rel, m := range modes(t, p.benchDir("b")) {
				want := wantFile
				switch {
				case rel == "benchmark.yaml":
					continue // the test wrote it
				case m.IsDir():
					if _, made := madeBench[rel]; made {
						continue
					}
					want = wantDir
				}
				n++
				if m.Perm() != want {
					t.Errorf("umask %s: %s is %v, want %v", umask, rel, m.Perm(), want)
				}
			}
			if n < 8 {
				t.Errorf("only %d outputs checked", n)
			}
			store := 0
			for rel, m := range modes(t, filepath.Join(cache, "calls")) {
				want := fs.FileMode(0o600)
				if m.IsDir() {
					want = 0o700
				}
				if _, made := madeStore[rel]; made && rel != "." {
					continue
				}
				store++
				if m.Perm() != want {
					t.Errorf("umask %s: calls/%s is %v, want %v", umask, rel, m.Perm(), want)
				}
			}
			if store < 10 {
				t.Errorf("only %d call-store entries checked", store)
			}
			// The phase records beside the store fingerprint every input:
			// private like the store, whatever the umask.
			if st, err := os.Stat(filepath.Join(cache, "manifest.json")); err != nil || st.Mode().Perm() != 0o600 {
				t.Errorf("umask %s: manifest.json: %v, mode %v, want 0600", umask, err, st.Mode().Perm())
			}
		})
	}
}

// TestLockNeverWritesThroughALink: a .lock that is a symbolic link (to a
// shell's startup file, say) is refused, naming it, and its target keeps
// every byte; nothing runs.
func TestLockNeverWritesThroughALink(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("symbolic links need privileges on Windows")
	}
	t.Parallel()
	p := newProject(t, offlineConfigOf{Comment: "# lock link", Turns: 1, Careful: 0.8}.yaml())
	p.addBench("b", badInputBench)
	rc := filepath.Join(p.home, ".bashrc")
	const before = "# rc\nexport PATH=$HOME/bin:$PATH\n"
	if err := os.WriteFile(rc, []byte(before), 0o644); err != nil {
		t.Fatal(err)
	}
	lock := p.path(".cache", "b", ".lock")
	if err := os.MkdirAll(filepath.Dir(lock), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(rc, lock); err != nil {
		t.Fatal(err)
	}
	r := p.run("run", "b", "--quiet")
	if r.code == 0 || !strings.Contains(r.stderr, "symbolic link") || !strings.Contains(r.stderr, ".lock") {
		t.Errorf("run with a linked lock file: want a refusal naming it, got:\n%s", r)
	}
	if b := readFile(t, rc); string(b) != before {
		t.Errorf("the lock's link target changed to %q", b)
	}
	if exists(filepath.Join(p.benchDir("b"), "scenarios.json")) {
		t.Error("the run went ahead without its lock")
	}
}
