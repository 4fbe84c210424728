//go:build darwin || dragonfly || freebsd || linux || netbsd || openbsd

package main

import (
	"context"
	"crypto/sha256"
	"errors"
	"io/fs"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/impactbench/impactbench/internal/hostile"
)

// TestNamedPipeInputs puts a named pipe where each file a command reads
// belongs: no command may wait on it (a reader that opens it blocks until
// someone writes, that is forever), and each that reads it as an input
// refuses it with exit 2 naming the file, leaving every other file as it
// was. Before, aggregate blocked forever on a repeats.json, sets.json,
// run_manifest.json or results.json that was a named pipe, run on a
// scenarios.json, status on a conversations.json or a shard's row file,
// and a labels.jsonl one was taken for no labels.
func TestNamedPipeInputs(t *testing.T) {
	t.Parallel()
	fixture := badInputFixture(t)
	cases := []struct {
		file string
		args []string
		code int // 0: any exit, as long as the command ends
	}{
		{"config.yaml", aggregate, 2},
		{benchFile, aggregate, 2},
		{scenFile, aggregate, 2},
		{convFile, aggregate, 2},
		{scoreFile, aggregate, 2},
		{labelsFile, aggregate, 2},
		{"benchmarks/corpus/runs/careful/repeats.json", aggregate, 2},
		{costFile, reportCmd, 2},
		{runCost, reportCmd, 2},
		{manifest, compareCmd, 2},
		{scenFile, runCmd, 2},
		{convFile, runCmd, 2},
		// People's conversations (the viewer's Play page), read by report
		// and export.
		{"benchmarks/corpus/runs/careful/human/conversations.json", reportCmd, 2},
		{"benchmarks/corpus/runs/careful/human/scores.json", []string{"export", "corpus"}, 2},
		// status shows what it can read; it must not wait on the rest.
		{convFile, []string{"status", "corpus"}, 0},
		{"benchmarks/corpus/runs/careful/conversations.shard-0-of-2.json", []string{"status", "corpus"}, 0},
		// Files aggregate writes: it may replace the pipe, never wait on it.
		{manifest, aggregate, 0},
		{"benchmarks/corpus/sets/sets.json", aggregate, 0},
		{resFile, aggregate, 0},
	}
	for _, tc := range cases {
		t.Run(strings.Join(tc.args[:1], "")+"/"+filepath.Base(tc.file), func(t *testing.T) {
			t.Parallel()
			p := newProject(t, "")
			copyDir(t, fixture, p.dir)
			path := p.path(tc.file)
			if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
				t.Fatal(err)
			}
			hostile.Pipe(t, path)
			before := hashRegular(t, p.dir)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			cmd := exec.CommandContext(ctx, ibBin, tc.args...)
			cmd.Dir, cmd.Env = p.dir, p.environ()
			out, err := cmd.CombinedOutput()
			if ctx.Err() != nil {
				if w, err := os.OpenFile(path, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
					w.Close()
				}
				t.Fatalf("impactbench %s still waiting on the named pipe %s after 30 s", strings.Join(tc.args, " "), tc.file)
			}
			var ee *exec.ExitError
			if err != nil && !errors.As(err, &ee) {
				t.Fatal(err)
			}
			if tc.code == 0 {
				return
			}
			if code := cmd.ProcessState.ExitCode(); code != tc.code || !strings.Contains(string(out), filepath.Base(tc.file)) {
				t.Fatalf("exit %d, want %d naming %s:\n%s", code, tc.code, tc.file, out)
			}
			if after := hashRegular(t, p.dir); !maps.Equal(before, after) {
				t.Errorf("files changed although the input was refused")
			}
		})
	}
}

// hashRegular is hashTree over regular files only (reading a named pipe
// would block the test), with every other file listed by its type.
func hashRegular(t *testing.T, root string) map[string][32]byte {
	t.Helper()
	out := map[string][32]byte{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || d.Name() == ".lock" {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		if !d.Type().IsRegular() {
			out[rel] = sha256.Sum256([]byte(d.Type().String()))
			return nil
		}
		b, err := os.ReadFile(path)
		out[rel] = sha256.Sum256(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}
