package work

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"path"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"gocloud.dev/blob"

	"github.com/impactbench/impactbench/internal/callstore"
	"github.com/impactbench/impactbench/internal/callstore/s3test"
	"github.com/impactbench/impactbench/internal/layout"
)

// records keeps every log record a logger hands it.
type records struct {
	mu    sync.Mutex
	attrs []map[string]string
	msgs  []string
}

func (r *records) Enabled(context.Context, slog.Level) bool { return true }
func (r *records) WithGroup(string) slog.Handler            { return r }
func (r *records) WithAttrs(as []slog.Attr) slog.Handler {
	return &withAttrs{r, as}
}
func (r *records) Handle(_ context.Context, rec slog.Record) error {
	return r.add(nil, rec)
}

func (r *records) add(pre []slog.Attr, rec slog.Record) error {
	m := map[string]string{}
	for _, a := range pre {
		m[a.Key] = a.Value.String()
	}
	rec.Attrs(func(a slog.Attr) bool {
		m[a.Key] = a.Value.String()
		return true
	})
	r.mu.Lock()
	defer r.mu.Unlock()
	r.attrs, r.msgs = append(r.attrs, m), append(r.msgs, rec.Message)
	return nil
}

type withAttrs struct {
	r  *records
	as []slog.Attr
}

func (w *withAttrs) Enabled(context.Context, slog.Level) bool { return true }
func (w *withAttrs) WithGroup(string) slog.Handler            { return w }
func (w *withAttrs) WithAttrs(as []slog.Attr) slog.Handler {
	return &withAttrs{w.r, append(append([]slog.Attr{}, w.as...), as...)}
}
func (w *withAttrs) Handle(_ context.Context, rec slog.Record) error { return w.r.add(w.as, rec) }

// A worker that loses a shard's lease (paused past its TTL while another
// took it over) warns once per benchmark of the study, each lease having
// the same name under its benchmark's prefix: each warning names its
// benchmark, not only "lease=shard-0-of-4".
func TestTakenOverLeaseWarningNamesTheBenchmark(t *testing.T) {
	srv := s3test.Start(t, "calls")
	s3test.SetEnv(t)
	b, err := blob.OpenBucket(t.Context(), srv.BucketURL("calls"))
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	rec := &records{}
	shard := layout.Shard{Index: 0, Count: 4}
	for _, slug := range []string{"b1", "b2"} {
		st, err := callstore.OpenURL(t.Context(), srv.URL("calls", "study/"+slug), callstore.Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		lo := leaseOptions("benchmark "+slug+" shard 0/4", lockOptions{Bench: slug, Shard: shard, Store: st, Logger: slog.New(rec)})
		lo.TTL = 300 * time.Millisecond // renewals every 100 ms
		l, err := st.TakeLease(t.Context(), lo)
		if err != nil {
			t.Fatal(err)
		}
		takeOver(t, b, "study/"+slug+"/!lease/"+lo.Name+"/")
		select {
		case <-l.Lost():
		case <-time.After(10 * time.Second):
			t.Fatalf("%s: the holder never learned it lost the lease", slug)
		}
		_ = l.Release(t.Context())
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	var got []string
	for i, m := range rec.attrs {
		if strings.Contains(rec.msgs[i], "taken over") {
			got = append(got, m["benchmark"]+" "+m["lease"])
		}
	}
	if want := []string{"b1 shard-0-of-4", "b2 shard-0-of-4"}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("taken-over warnings name (benchmark lease) %q, want %q", got, want)
	}
}

// takeOver creates the next object of the lease under dir as another
// worker would, retrying while the holder's renewals race it.
func takeOver(t *testing.T, b *blob.Bucket, dir string) {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"kind": "held", "holder": "pid 7, host node-9, started 2026-11-29T00:00:00Z", "renewed": time.Now().UTC(), "ttl_s": 30, "token": "node-9"})
	for range 100 {
		top := -1
		it := b.List(&blob.ListOptions{Prefix: dir})
		for {
			obj, err := it.Next(t.Context())
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			if n, err := strconv.Atoi(strings.TrimSuffix(path.Base(obj.Key), ".json")); err == nil && n > top {
				top = n
			}
		}
		err := b.WriteAll(t.Context(), fmt.Sprintf("%s%010d.json", dir, top+1), body, &blob.WriterOptions{IfNotExist: true})
		if err == nil {
			return
		}
	}
	t.Fatalf("could not take over %s", dir)
}

// A merge from the store learns from the leases the workers left how
// many shards the study had and which to run again: those that never took
// one, and those whose lease was never released (a killed worker's).
func TestUnfinishedShardsFromLeases(t *testing.T) {
	for _, tc := range []struct {
		name     string
		released []string // leases taken and released, the work done
		held     []string // leases taken and kept (a killed holder's)
		stopped  []string // leases released with the work not done (SIGTERM)
		want     string
	}{
		// A mistyped bucket or prefix: no worker ever wrote there.
		{"none", nil, nil, nil, "the store s3://calls/study/b1?"},
		{"every shard ended", []string{"shard-0-of-2", "shard-1-of-2"}, nil, nil, ""},
		{"one never ran", []string{"shard-1-of-2"}, nil, nil,
			"shard(s) 0 of 2 have no outputs in the store: run index(es) 0 again (Slurm: sbatch --array=0 study.sbatch; Kubernetes, or by hand: the study's command with --shard <index>/2), then merge"},
		{"one never ran, one killed", []string{"shard-0-of-4", "shard-3-of-4"}, []string{"shard-1-of-4"}, nil,
			"shard(s) 2 of 4 have no outputs in the store; shard(s) 1 of 4 did not finish (killed, stopped, or still running): run index(es) 1, 2 again (Slurm: sbatch --array=1,2 study.sbatch; Kubernetes, or by hand: the study's command with --shard <index>/4), then merge"},
		// A Slurm time limit's SIGTERM: the worker stops cleanly and
		// releases its lease, its shard not done.
		{"one stopped by SIGTERM", []string{"shard-0-of-2"}, nil, []string{"shard-1-of-2"},
			"shard(s) 1 of 2 did not finish (killed, stopped, or still running): run index(es) 1 again (Slurm: sbatch --array=1 study.sbatch; Kubernetes, or by hand: the study's command with --shard <index>/2), then merge"},
		// Pods given different IMPACTBENCH_SHARDS: nothing refused them.
		{"two splits", []string{"shard-0-of-4", "shard-0-of-2"}, []string{"shard-1-of-4"}, nil,
			"the store holds shards of 2 different counts (2 and 4): if this study's workers were given different counts (IMPACTBENCH_SHARDS, --shards), run every index of the study's one count again — what the store holds is reused, not paid again — then merge"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := s3test.Start(t, "calls")
			s3test.SetEnv(t)
			st, err := callstore.OpenURL(t.Context(), srv.URL("calls", "study/b1"), callstore.Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			for _, name := range slices.Concat(tc.released, tc.held, tc.stopped) {
				l, err := st.TakeLease(t.Context(), callstore.LeaseOptions{Name: name})
				if err != nil {
					t.Fatal(err)
				}
				if slices.Contains(tc.released, name) {
					l.MarkFinished()
				}
				if !slices.Contains(tc.held, name) {
					if err := l.Release(t.Context()); err != nil {
						t.Fatal(err)
					}
				} else {
					defer l.Release(context.Background())
				}
			}
			b := &Bench{Store: st}
			if got := b.UnfinishedShards(t.Context()); tc.name == "none" {
				if want := " holds no shard's lease: if the study ran in shards, this is not the store its workers wrote — check the bucket and prefix (IMPACTBENCH_STORE, store:)"; !strings.HasPrefix(got, tc.want) || !strings.HasSuffix(got, want) {
					t.Errorf("got  %q\nwant %q…%q", got, tc.want, want)
				}
			} else if got != tc.want {
				t.Errorf("got  %q\nwant %q", got, tc.want)
			}
		})
	}
}

// A worker given another shard count than the workers running beside it
// on an object store is not refused (it cannot see their lock files), but
// warns naming the shards of the other count held now; an ended split of
// another count (an earlier study on the store) and shards of its own
// count are not named.
func TestWorkerOfAnotherCountWarns(t *testing.T) {
	for _, tc := range []struct {
		name     string
		held     []string
		released []string
		want     string // the held attribute of the warning; "": none
	}{
		{"a running shard of another count", []string{"shard-1-of-4"}, []string{"shard-0-of-4"}, "shard-1-of-4"},
		{"an ended split of another count", nil, []string{"shard-0-of-4", "shard-1-of-4"}, ""},
		{"shards of its own count", []string{"shard-1-of-3", "shard-2-of-3"}, nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := s3test.Start(t, "calls")
			s3test.SetEnv(t)
			st, err := callstore.OpenURL(t.Context(), srv.URL("calls", "study/b1"), callstore.Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			for _, name := range slices.Concat(tc.held, tc.released) {
				l, err := st.TakeLease(t.Context(), callstore.LeaseOptions{Name: name})
				if err != nil {
					t.Fatal(err)
				}
				if slices.Contains(tc.released, name) {
					l.MarkFinished()
					if err := l.Release(t.Context()); err != nil {
						t.Fatal(err)
					}
				} else {
					defer l.Release(context.Background())
				}
			}
			rec := &records{}
			l, err := takeLease(t.Context(), "benchmark b1 shard 0/3", lockOptions{Bench: "b1", Shard: layout.Shard{Index: 0, Count: 3}, Store: st, Logger: slog.New(rec)})
			if err != nil {
				t.Fatal(err)
			}
			defer l.Release(context.Background())
			rec.mu.Lock()
			defer rec.mu.Unlock()
			var got string
			for i, m := range rec.attrs {
				if strings.Contains(rec.msgs[i], "shards of another count") {
					if !strings.Contains(rec.msgs[i], "IMPACTBENCH_SHARDS") || m["benchmark"] != "b1" || m["shard"] != "0/3" {
						t.Errorf("warning %q %v", rec.msgs[i], m)
					}
					got = m["held"]
				}
			}
			if got != tc.want {
				t.Errorf("warned of held %q, want %q", got, tc.want)
			}
		})
	}
}
