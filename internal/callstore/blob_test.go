package callstore

import (
	"context"
	"errors"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"gocloud.dev/blob"
	"gocloud.dev/gcerrors"

	"github.com/impactbench/impactbench/internal/callstore/s3test"
)

// openS3 opens the store at bucket/prefix of srv (test credentials set).
func openS3(t *testing.T, srv *s3test.Server, prefix string, o Options) *Store {
	t.Helper()
	s, err := OpenURL(t.Context(), srv.URL("calls", prefix), o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// objects lists every key in the bucket.
func objects(t *testing.T, srv *s3test.Server) []string {
	t.Helper()
	b, err := blob.OpenBucket(t.Context(), srv.BucketURL("calls"))
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	var keys []string
	it := b.List(nil)
	for {
		o, err := it.Next(t.Context())
		if errors.Is(err, io.EOF) {
			return keys
		}
		if err != nil {
			t.Fatal(err)
		}
		keys = append(keys, o.Key)
	}
}

// TestFakeS3RefusesASecondCreate checks the server the other tests rely
// on: a second IfNotExist write of one key fails with FailedPrecondition
// (If-None-Match: *), and the first object stays.
func TestFakeS3RefusesASecondCreate(t *testing.T) {
	srv := s3test.Start(t, "calls")
	s3test.SetEnv(t)
	b, err := blob.OpenBucket(t.Context(), srv.BucketURL("calls"))
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	once := &blob.WriterOptions{IfNotExist: true}
	if err := b.WriteAll(t.Context(), "k", []byte("first"), once); err != nil {
		t.Fatal(err)
	}
	err = b.WriteAll(t.Context(), "k", []byte("second"), once)
	if gcerrors.Code(err) != gcerrors.FailedPrecondition {
		t.Fatalf("second create: %v (code %v), want FailedPrecondition", err, gcerrors.Code(err))
	}
	if got, _ := b.ReadAll(t.Context(), "k"); string(got) != "first" {
		t.Errorf("object holds %q, want the first write", got)
	}
	// Without the condition the write replaces: the refusal above is the
	// condition's doing.
	if err := b.WriteAll(t.Context(), "k", []byte("third"), nil); err != nil {
		t.Fatal(err)
	}
	if got, _ := b.ReadAll(t.Context(), "k"); string(got) != "third" {
		t.Errorf("unconditional write: %q", got)
	}
}

// TestOpenURLRefusesBadInput: each kind of bad store URL is told apart,
// names the key, and shows no secret.
func TestOpenURLRefusesBadInput(t *testing.T) {
	srv := s3test.Start(t, "calls")
	s3test.SetEnv(t)
	const secret = "wJalrXUtnFEMI-SECRET"
	for _, tc := range []struct {
		name, url string
		want      error
		env       []string
	}{
		{"unknown scheme", "ftp://calls/x", ErrUnknownScheme, nil},
		{"bucket that does not exist", srv.URL("no-such-bucket", "x"), ErrNoBucket, nil},
		{"credentials refused", srv.URL("calls", "x"), ErrCredentials, []string{"AWS_ACCESS_KEY_ID", "AKIAWRONGWRONGWRONG1"}},
		// store: s3://bucket/prefix as docs/workers.md writes it, with no
		// region anywhere: a URL to complete, not refused credentials.
		// (AWS's own endpoint: the client refuses before any request.)
		{"no region", "s3://calls/x", ErrBadURL, []string{"AWS_REGION", ""}},
		{"credentials in userinfo", strings.Replace(srv.URL("calls", "x"), "s3://", "s3://AKIA:"+secret+"@", 1), ErrBadURL, nil},
		{"credential in the query", srv.URL("calls", "x") + "&aws_secret_access_key=" + secret, ErrBadURL, nil},
		{"prefix climbing out", strings.Replace(srv.URL("calls", "x"), "/x?", "/a/../../x?", 1), ErrBadURL, nil},
		{"no bucket", "s3:///x", ErrBadURL, nil},
		{"empty", " ", ErrBadURL, nil},
		{"file URL with a host", "file://host/x", ErrBadURL, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := len(objects(t, srv))
			if tc.env != nil {
				t.Setenv(tc.env[0], tc.env[1])
			}
			s, err := OpenURL(t.Context(), tc.url, Options{})
			var ue *URLError
			if err == nil || !errors.As(err, &ue) || !errors.Is(err, tc.want) {
				if s != nil {
					s.Close()
				}
				t.Fatalf("OpenURL: %v, want a URLError of kind %v", err, tc.want)
			}
			for _, other := range []error{ErrUnknownScheme, ErrBadURL, ErrNoBucket, ErrCredentials, ErrUnreachable} {
				if other != tc.want && errors.Is(err, other) {
					t.Errorf("%v also matches %v", err, other)
				}
			}
			if msg := err.Error(); !strings.HasPrefix(msg, "store: ") || strings.Contains(msg, secret) {
				t.Errorf("message %q: want it to start with the key and show no secret", msg)
			}
			says := map[string]string{"no region": "add ?region=… (the bucket's region, e.g. ?region=eu-west-1) to the URL, or set AWS_REGION"}[tc.name]
			if !strings.Contains(err.Error(), says) {
				t.Errorf("message %q: want it to say %q", err, says)
			}
			if tc.env == nil && len(objects(t, srv)) != before {
				t.Error("a refused store wrote something")
			}
		})
	}
}

// TestOpenURLLocal: a path, a Windows-style path and a file URL are the
// local store.
func TestOpenURLLocal(t *testing.T) {
	dir := t.TempDir()
	for _, raw := range []string{dir, "file://" + dir, filepath.Join(dir, `C:\x`)} {
		s, err := OpenURL(t.Context(), raw, Options{})
		if err != nil || s.Dir() == "" {
			t.Errorf("OpenURL(%q): %v", raw, err)
			continue
		}
		s.Close()
	}
}

// TestOpenURLUnreachable: nothing listening is its own kind.
func TestOpenURLUnreachable(t *testing.T) {
	srv := s3test.Start(t, "calls")
	s3test.SetEnv(t)
	u := srv.URL("calls", "x")
	srv.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 30e9)
	defer cancel()
	if _, err := OpenURL(ctx, u, Options{}); !errors.Is(err, ErrUnreachable) {
		t.Fatalf("OpenURL of a closed server: %v, want ErrUnreachable", err)
	}
}

// TestHostileUnitNamesNeverReachAKey: unit names that would climb out of
// the prefix, be absolute or hide are refused before any request, and the
// bucket holds nothing outside the store's prefix.
func TestHostileUnitNamesNeverReachAKey(t *testing.T) {
	srv := s3test.Start(t, "calls")
	s3test.SetEnv(t)
	s := openS3(t, srv, "study", Options{})
	local := Open(t.TempDir(), false)
	for _, name := range []string{"../x", "/abs", "a/../../b", "a//b", `a\b`, ".hidden", "a/b/", "a b", "x\x00y", "..", "a/./b", "t/sim/" + strings.Repeat("x", 500), "a/!r", "a/b!c"} {
		for _, st := range []*Store{s, local} {
			if u, err := st.Unit(name); err == nil {
				u.Close()
				t.Errorf("%s: unit %q accepted", st.Location(), name)
			}
			var v string
			if _, ok := st.ReadResult(name, &v); ok {
				t.Errorf("ReadResult(%q) succeeded", name)
			}
		}
	}
	for _, k := range objects(t, srv) {
		if !strings.HasPrefix(k, "study/") {
			t.Errorf("object %q outside the store's prefix", k)
		}
	}
}

// TestKilledWriteLeavesNoObject: a PUT whose writer dies mid-body leaves
// no object (the store never sees a partial answer), and the next writer
// pays that one call only.
func TestKilledWriteLeavesNoObject(t *testing.T) {
	srv := s3test.Start(t, "calls")
	s3test.SetEnv(t)
	s := openS3(t, srv, "p", Options{})
	u, _ := s.Unit("t/sim/k__s0")
	inner := &counting{}
	u.Client(id, inner).Complete(t.Context(), req("stored", 0))
	// The next PUT of a call is cut after part of its body, as the
	// server sees a writer killed mid-upload.
	srv.Hook(func(w http.ResponseWriter, r *http.Request) bool {
		if r.Method != http.MethodPut || !strings.Contains(r.URL.Path, "/!c") {
			return false
		}
		io.CopyN(io.Discard, r.Body, 10)
		hj, ok := w.(http.Hijacker)
		if !ok {
			t.Error("cannot hijack")
			return true
		}
		conn, _, _ := hj.Hijack()
		conn.Close()
		return true
	})
	ctx, cancel := context.WithTimeout(t.Context(), 30e9)
	defer cancel()
	if _, err := u.Client(id, inner).Complete(ctx, req("cut", 0)); err == nil {
		t.Fatal("a write cut mid-body reported success")
	}
	srv.Hook(nil)
	for _, k := range objects(t, srv) {
		if strings.Contains(k, Key(id, req("cut", 0))) {
			t.Errorf("partial object %q is visible", k)
		}
	}
	paid := inner.n.Load()
	u2, _ := openS3(t, srv, "p", Options{}).Unit("t/sim/k__s0")
	for _, p := range []string{"stored", "cut"} {
		u2.Client(id, inner).Complete(t.Context(), req(p, 0))
	}
	if n := inner.n.Load() - paid; n != 1 {
		t.Errorf("the next writer paid %d calls, want 1 (the one in flight)", n)
	}
}

// TestOversizedCallObjectIsPaidAgain: a call object over maxObject is not
// read whole, and, like a damaged one, is never trusted: the call is made
// again instead of failing the run.
func TestOversizedCallObjectIsPaidAgain(t *testing.T) {
	srv := s3test.Start(t, "calls")
	s3test.SetEnv(t)
	u, err := openS3(t, srv, "p", Options{}).Unit("t/sim/a")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := u.Client(id, &counting{}).Complete(t.Context(), req("hi", 0)); err != nil {
		t.Fatal(err)
	}
	u.Close()
	old := maxObject
	maxObject = 16
	t.Cleanup(func() { maxObject = old })
	u2, err := openS3(t, srv, "p", Options{}).Unit("t/sim/a")
	if err != nil {
		t.Fatal(err)
	}
	defer u2.Close()
	inner := &counting{}
	r, err := u2.Client(id, inner).Complete(t.Context(), req("hi", 0))
	if err != nil || r.Cached || inner.n.Load() != 1 {
		t.Errorf("a call object over the bound: cached %v, %d calls, %v; want the call made again", r.Cached, inner.n.Load(), err)
	}
}
