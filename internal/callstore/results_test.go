package callstore

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/impactbench/impactbench/internal/callstore/s3test"
)

// inFlight counts the requests the server is answering at once (each held
// for delay, so that overlapping requests are seen to overlap) and the
// most it saw.
type inFlight struct {
	now, most atomic.Int64
}

func (f *inFlight) hook(delay time.Duration) func(http.ResponseWriter, *http.Request) bool {
	return func(http.ResponseWriter, *http.Request) bool {
		n := f.now.Add(1)
		for m := f.most.Load(); n > m && !f.most.CompareAndSwap(m, n); m = f.most.Load() {
		}
		time.Sleep(delay)
		f.now.Add(-1)
		return false
	}
}

// storeResults stores result i as the result of unit i for every i in
// 0..n-1 but those skip says, giving some units a later revision than
// their first.
func storeResults(t *testing.T, s *Store, n int, skip func(i int) bool) {
	t.Helper()
	for i := range n {
		if skip(i) {
			continue
		}
		u, err := s.Unit(fmt.Sprintf("t/eval/u%03d__s0", i))
		if err != nil {
			t.Fatal(err)
		}
		if i%10 == 0 { // an earlier result, replaced by the one read back
			if err := u.SetResult("k", "stale"); err != nil {
				t.Fatal(err)
			}
		}
		if err := u.SetResult("k", fmt.Sprintf("result %d", i)); err != nil {
			t.Fatal(err)
		}
	}
}

// TestEachResultInOrder: on both stores EachResult hands out every unit's
// latest result in order across several read-ahead windows, says which
// units have none, and stops at the first error of fn.
func TestEachResultInOrder(t *testing.T) {
	const n = 2*readAheadWindow + 7
	skip := func(i int) bool { return i%13 == 5 }
	for _, tc := range []struct {
		name string
		open func(t *testing.T) *Store
	}{
		{"dir", func(t *testing.T) *Store { return Open(t.TempDir(), false) }},
		{"s3", func(t *testing.T) *Store {
			srv := s3test.Start(t, "calls")
			s3test.SetEnv(t)
			return openS3(t, srv, "p", Options{})
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := tc.open(t)
			storeResults(t, s, n, skip)
			name := func(i int) string { return fmt.Sprintf("t/eval/u%03d__s0", i) }
			next := 0
			err := EachResult(t.Context(), s, n, name, func(i int, v *string, ok bool) error {
				if i != next {
					t.Fatalf("row %d handed out when row %d was due", i, next)
				}
				next++
				if ok == skip(i) {
					t.Errorf("row %d: ok %v, want %v", i, ok, !skip(i))
				}
				if want := fmt.Sprintf("result %d", i); ok && *v != want {
					t.Errorf("row %d: %q, want %q", i, *v, want)
				}
				if !ok && *v != "" {
					t.Errorf("row %d: no result, but %q handed out", i, *v)
				}
				return nil
			})
			if err != nil || next != n {
				t.Fatalf("EachResult: %v after %d of %d rows", err, next, n)
			}
			stop := errors.New("stop")
			next = 0
			err = EachResult(t.Context(), s, n, name, func(i int, v *string, ok bool) error {
				next++
				if i == 3 {
					return stop
				}
				return nil
			})
			if !errors.Is(err, stop) || next != 4 {
				t.Errorf("fn's error at row 3: got %v after %d rows, want stop after 4", err, next)
			}
		})
	}
}

// TestEachResultReadsAhead: on an object store the reads of a window go
// out together, a bounded number at a time; one at a time, a replay's
// assembly of a study's scores waited a round trip after another.
func TestEachResultReadsAhead(t *testing.T) {
	srv := s3test.Start(t, "calls")
	s3test.SetEnv(t)
	s := openS3(t, srv, "p", Options{})
	const n = 40
	storeResults(t, s, n, func(int) bool { return false })
	var f inFlight
	srv.Hook(f.hook(5 * time.Millisecond))
	defer srv.Hook(nil)
	err := EachResult(t.Context(), s, n, func(i int) string { return fmt.Sprintf("t/eval/u%03d__s0", i) },
		func(int, *string, bool) error { return nil })
	if err != nil {
		t.Fatal(err)
	}
	// Each read has up to two requests out at once (latestEvent).
	if m := f.most.Load(); m < 4 || m > 2*readAheadInFlight {
		t.Errorf("at most %d requests in flight, want between 4 and %d", m, 2*readAheadInFlight)
	}
}

// TestLatestOverlapsRoundTrips: reading a unit's result sends the probe of
// revision 0 with the listing, then the read of the revision listed with
// the probe above it: two round trips, not four.
func TestLatestOverlapsRoundTrips(t *testing.T) {
	srv := s3test.Start(t, "calls")
	s3test.SetEnv(t)
	s := openS3(t, srv, "p", Options{})
	storeResults(t, s, 1, func(int) bool { return false })
	var f inFlight
	srv.Hook(f.hook(20 * time.Millisecond))
	defer srv.Hook(nil)
	var v string
	if _, ok, err := s.LoadResult(t.Context(), "t/eval/u000__s0", &v); err != nil || !ok || v != "result 0" {
		t.Fatalf("LoadResult: %q %v %v", v, ok, err)
	}
	if m := f.most.Load(); m != 2 {
		t.Errorf("%d requests in flight at most, want 2 (each pair overlapped)", m)
	}
}

// TestLatestPastALaggingListing: a listing that does not show the newest
// revisions yet (eventual consistency) still yields the latest result:
// the keys above the one listed are probed, and the one found is read.
func TestLatestPastALaggingListing(t *testing.T) {
	srv := s3test.Start(t, "calls")
	s3test.SetEnv(t)
	s := openS3(t, srv, "p", Options{})
	u, err := s.Unit("t/eval/lag__s0")
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range []string{"first", "second", "third"} {
		if err := u.SetResult("k", r); err != nil {
			t.Fatal(err)
		}
	}
	// Every listing is empty, as a listing that lags behind every write.
	srv.Hook(func(w http.ResponseWriter, r *http.Request) bool {
		if r.Method != http.MethodGet || !r.URL.Query().Has("list-type") && !r.URL.Query().Has("prefix") {
			return false
		}
		w.Header().Set("Content-Type", "application/xml")
		bucket := strings.Split(strings.TrimPrefix(r.URL.Path, "/"), "/")[0]
		fmt.Fprintf(w, `<?xml version="1.0" encoding="UTF-8"?><ListBucketResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Name>%s</Name><Prefix>%s</Prefix><KeyCount>0</KeyCount><MaxKeys>1000</MaxKeys><IsTruncated>false</IsTruncated></ListBucketResult>`,
			bucket, r.URL.Query().Get("prefix"))
		return true
	})
	defer srv.Hook(nil)
	var v string
	if _, ok, err := s.LoadResult(t.Context(), "t/eval/lag__s0", &v); err != nil || !ok || v != "third" {
		t.Errorf("LoadResult past a lagging listing: %q %v %v, want \"third\"", v, ok, err)
	}
}
