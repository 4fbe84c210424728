package callstore

import (
	"fmt"
	"net/http"
	"sync/atomic"
	"testing"

	"github.com/impactbench/impactbench/internal/callstore/s3test"
)

// TestSurveyReadsInOneRoundTrip: a store opened with Survey lists the
// directory once and reads each listed unit with two requests (the
// revision listed and the probe above it), where one without reads it
// with four; both read the same results.
func TestSurveyReadsInOneRoundTrip(t *testing.T) {
	srv := s3test.Start(t, "calls")
	s3test.SetEnv(t)
	const n = 30
	storeResults(t, openS3(t, srv, "p", Options{}), n, func(i int) bool { return i == 7 })
	var requests atomic.Int64
	srv.Hook(func(http.ResponseWriter, *http.Request) bool { requests.Add(1); return false })
	defer srv.Hook(nil)
	for _, tc := range []struct {
		survey bool
		most   int64
	}{{false, 4*n + 1}, {true, 2*n + 2}} {
		s := openS3(t, srv, "p", Options{Survey: tc.survey})
		requests.Store(0)
		for i := range n {
			var v string
			_, ok, err := s.LoadResult(t.Context(), fmt.Sprintf("t/eval/u%03d__s0", i), &v)
			if err != nil || ok != (i != 7) || ok && v != fmt.Sprintf("result %d", i) {
				t.Fatalf("survey %v, unit %d: %q %v %v", tc.survey, i, v, ok, err)
			}
		}
		if got := requests.Load(); got > tc.most {
			t.Errorf("survey %v: %d requests for %d units, want at most %d", tc.survey, got, n, tc.most)
		}
	}
}

// TestSurveyFollowsLaterWrites: what was listed is only where a read
// starts: a revision written after the survey, and a unit first written
// after it, are read as they are now.
func TestSurveyFollowsLaterWrites(t *testing.T) {
	srv := s3test.Start(t, "calls")
	s3test.SetEnv(t)
	w := openS3(t, srv, "p", Options{})
	storeResults(t, w, 3, func(int) bool { return false })
	s := openS3(t, srv, "p", Options{Survey: true})
	read := func(name string) string {
		t.Helper()
		var v string
		if _, ok, err := s.LoadResult(t.Context(), name, &v); err != nil || !ok {
			t.Fatalf("%s: %v %v", name, ok, err)
		}
		return v
	}
	if v := read("t/eval/u001__s0"); v != "result 1" { // surveys t/eval
		t.Fatalf("before: %q", v)
	}
	u, _ := w.Unit("t/eval/u001__s0")
	if err := u.SetResult("k", "newer"); err != nil {
		t.Fatal(err)
	}
	nu, _ := w.Unit("t/eval/new__s0")
	if err := nu.SetResult("k", "new"); err != nil {
		t.Fatal(err)
	}
	if v := read("t/eval/u001__s0"); v != "newer" {
		t.Errorf("a revision written after the survey: read %q, want \"newer\"", v)
	}
	if v := read("t/eval/new__s0"); v != "new" {
		t.Errorf("a unit written after the survey: read %q, want \"new\"", v)
	}
	// A unit opened through the surveyed store sees its latest revision
	// and commits after it.
	su, err := s.Unit("t/eval/u002__s0")
	if err != nil {
		t.Fatal(err)
	}
	var got string
	if !su.Result("k", &got) || got != "result 2" {
		t.Errorf("unit opened after the survey: %q", got)
	}
	if err := su.SetResult("k", "replayed"); err != nil {
		t.Fatal(err)
	}
	if v := read("t/eval/u002__s0"); v != "replayed" {
		t.Errorf("after a commit: %q", v)
	}
}
