// Package s3test runs an S3 API for tests, in process on loopback:
// gofakes3 with its in-memory backend behind httptest, which answers
// real S3 requests (conditional PUT with If-None-Match included). It
// accepts only the test access key, answering any other with S3's own
// 403 InvalidAccessKeyId, so that refused credentials can be tested too.
// It is for tests only; nothing in the tool imports it.
package s3test

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"
)

// The test credentials; static and fake.
const (
	AccessKey = "AKIAIMPACTBENCHTEST1"
	SecretKey = "impactbench-test-secret-key-not-real-0000"
	Region    = "us-east-1"
)

// Server is a running S3 API.
type Server struct {
	*httptest.Server
	Backend *s3mem.Backend

	mu   sync.Mutex
	hook func(w http.ResponseWriter, r *http.Request) bool
}

var credential = regexp.MustCompile(`Credential=([^/,\s]+)/`)

// Start starts a server on loopback with the given buckets and stops it
// when the test ends.
func Start(t testing.TB, buckets ...string) *Server {
	t.Helper()
	be := s3mem.New()
	for _, b := range buckets {
		if err := be.CreateBucket(b); err != nil {
			t.Fatal(err)
		}
	}
	s := &Server{Backend: be}
	fake := gofakes3.New(be).Server()
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if m := credential.FindStringSubmatch(r.Header.Get("Authorization")); m == nil || m[1] != AccessKey {
			w.Header().Set("Content-Type", "application/xml")
			w.WriteHeader(http.StatusForbidden)
			_, _ = w.Write([]byte(`<?xml version="1.0" encoding="UTF-8"?><Error><Code>InvalidAccessKeyId</Code><Message>The AWS Access Key Id you provided does not exist in our records.</Message></Error>`))
			return
		}
		s.mu.Lock()
		hook := s.hook
		s.mu.Unlock()
		if hook != nil && hook(w, r) {
			return
		}
		fake.ServeHTTP(w, r)
	}))
	t.Cleanup(s.Close)
	return s
}

// Hook sees every authenticated request first; when it returns true it
// has answered the request itself.
func (s *Server) Hook(h func(w http.ResponseWriter, r *http.Request) bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.hook = h
}

// URL is the store URL of bucket/prefix on this server.
func (s *Server) URL(bucket, prefix string) string {
	return s.url(bucket, "/"+prefix)
}

// BucketURL is the URL of bucket itself on this server, for
// blob.OpenBucket: no path, so no prefix at all.
func (s *Server) BucketURL(bucket string) string {
	return s.url(bucket, "")
}

func (s *Server) url(bucket, path string) string {
	q := url.Values{"endpoint": {s.Server.URL}, "region": {Region}, "use_path_style": {"true"}, "disable_https": {"true"}}
	return (&url.URL{Scheme: "s3", Host: bucket, Path: path, RawQuery: q.Encode()}).String()
}

// Env is the environment that gives the AWS SDK the test credentials
// and nothing from the machine (no shared config, no instance metadata).
func Env(dir string) []string {
	return []string{
		"AWS_ACCESS_KEY_ID=" + AccessKey,
		"AWS_SECRET_ACCESS_KEY=" + SecretKey,
		"AWS_SESSION_TOKEN=",
		"AWS_PROFILE=",
		"AWS_REGION=" + Region,
		"AWS_EC2_METADATA_DISABLED=true",
		"AWS_CONFIG_FILE=" + filepath.Join(dir, "aws-config-none"),
		"AWS_SHARED_CREDENTIALS_FILE=" + filepath.Join(dir, "aws-credentials-none"),
	}
}

// SetEnv sets Env for the rest of the test.
func SetEnv(t *testing.T) {
	dir := t.TempDir()
	for _, kv := range Env(dir) {
		k, v, _ := strings.Cut(kv, "=")
		t.Setenv(k, v)
	}
}
