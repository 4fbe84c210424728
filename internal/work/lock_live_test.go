package work

import (
	"context"
	"errors"
	"io"
	"path/filepath"
	"testing"
	"time"

	"gocloud.dev/blob"

	"github.com/impactbench/impactbench/internal/callstore/s3test"
	"github.com/impactbench/impactbench/internal/config"
	"github.com/impactbench/impactbench/internal/fsx"
	"github.com/impactbench/impactbench/internal/layout"
)

func presenceFiles(t *testing.T, dir string) []string {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(dir, "worker-*.lock"))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// A worker of several on one project shows itself by a held lock in
// .cache/.workers while its environment lives; a second worker there is
// counted, and once it leaves the first one's limits are divided by one.
// A worker alone and a dry run show nothing.
func TestWorkersShowThemselvesOnADirectory(t *testing.T) {
	dir := t.TempDir()
	live := layout.PresenceDir(dir, "")
	for _, o := range []Options{{Workers: 1}, {Workers: 4, DryRun: true}} {
		e, err := NewEnv(context.Background(), &config.Config{Dir: dir}, o)
		if err != nil {
			t.Fatal(err)
		}
		if n := len(presenceFiles(t, live)); n != 0 {
			t.Fatalf("%+v: %d presence files, want none", o, n)
		}
		e.Close()
	}
	e1, err := NewEnv(context.Background(), &config.Config{Dir: dir}, Options{Workers: 4})
	if err != nil {
		t.Fatal(err)
	}
	defer e1.Close()
	files := presenceFiles(t, live)
	if len(files) != 1 {
		t.Fatalf("one worker: presence files %v", files)
	}
	if _, held := fsx.LockHeld(files[0]); !held {
		t.Fatalf("%s is not held", files[0])
	}
	e2, err := NewEnv(context.Background(), &config.Config{Dir: dir}, Options{Workers: 4})
	if err != nil {
		t.Fatal(err)
	}
	waitLive(t, e1, 2)
	e2.Close()
	if n := len(presenceFiles(t, live)); n != 1 {
		t.Fatalf("after the second left: %d presence files, want 1", n)
	}
	waitLive(t, e1, 1)
}

// On an object store the worker beats under the store's prefix and
// deletes its heartbeat when it ends.
func TestWorkersShowThemselvesOnAnObjectStore(t *testing.T) {
	srv := s3test.Start(t, "calls")
	s3test.SetEnv(t)
	o := Options{Workers: 4, Store: srv.URL("calls", "study"), StoreFrom: "store"}
	e, err := NewEnv(context.Background(), &config.Config{Dir: t.TempDir()}, o)
	if err != nil {
		t.Fatal(err)
	}
	b, err := blob.OpenBucket(t.Context(), srv.BucketURL("calls"))
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	beats := func() int {
		n := 0
		it := b.List(&blob.ListOptions{Prefix: "study/.impactbench-live/"})
		for {
			_, err := it.Next(t.Context())
			if errors.Is(err, io.EOF) {
				return n
			}
			if err != nil {
				t.Fatal(err)
			}
			n++
		}
	}
	if n := beats(); n != 1 {
		t.Fatalf("heartbeats while running: %d, want 1", n)
	}
	e.Close()
	if n := beats(); n != 0 {
		t.Fatalf("heartbeats after the end: %d, want 0", n)
	}
}

func waitLive(t *testing.T, e *Env, want int) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for e.Models.Live() != want {
		if time.Now().After(deadline) {
			t.Fatalf("limits divided by %d after 20 s, want %d", e.Models.Live(), want)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// A store that cannot be used is named as the user gave it, with where it
// came from — not as the benchmark's prefix under it, which the user never
// wrote — so a study's benchmarks refused alike say it once (merge all
// --from-store opened each benchmark's store first and named each prefix).
func TestRefusedStoreNamedAsGiven(t *testing.T) {
	srv := s3test.Start(t, "calls")
	s3test.SetEnv(t)
	dir := t.TempDir()
	given := srv.URL("absent", "study")
	e := &Env{Opts: Options{Store: given, StoreFrom: "IMPACTBENCH_STORE", Replay: true}}
	for _, slug := range []string{"b1", "b2"} {
		_, err := e.openStore(t.Context(), layout.ForProject(dir, filepath.Join(dir, "benchmarks", slug)), slug)
		if want := "IMPACTBENCH_STORE: " + given + ": store bucket does not exist"; err == nil || err.Error() != want {
			t.Errorf("%s: %v, want %q", slug, err, want)
		}
	}
}
