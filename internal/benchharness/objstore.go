package benchharness

import (
	"fmt"
	"net/http/httptest"
	"net/url"
	"path/filepath"

	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"
)

// objectStore is an S3 API in the harness's process on loopback (gofakes3
// with its in-memory backend: real S3 requests, conditional PUT with
// If-None-Match included), the store the cluster-s3 presets' workers
// share. Its credentials are static and fake.
type objectStore struct {
	srv    *httptest.Server
	bucket string
}

const (
	storeAccessKey = "AKIAIMPACTBENCHBENCH1"
	storeSecretKey = "impactbench-bench-secret-not-real-00000"
	storeRegion    = "us-east-1"
)

func startObjectStore(bucket string) (*objectStore, error) {
	be := s3mem.New()
	if err := be.CreateBucket(bucket); err != nil {
		return nil, fmt.Errorf("benchharness: object store bucket: %w", err)
	}
	srv := httptest.NewServer(gofakes3.New(be, gofakes3.WithLogger(gofakes3.DiscardLog())).Server())
	return &objectStore{srv: srv, bucket: bucket}, nil
}

func (s *objectStore) Close() { s.srv.Close() }

// url is the store URL of prefix in the bucket (the config's store:).
func (s *objectStore) url(prefix string) string {
	q := url.Values{"endpoint": {s.srv.URL}, "region": {storeRegion}, "use_path_style": {"true"}, "disable_https": {"true"}}
	return (&url.URL{Scheme: "s3", Host: s.bucket, Path: "/" + prefix, RawQuery: q.Encode()}).String()
}

// env gives a worker the store and the credentials, and the AWS SDK
// nothing from the machine (no shared config, no instance metadata).
func (s *objectStore) env(dir, prefix string) []string {
	return []string{
		"IMPACTBENCH_STORE=" + s.url(prefix),
		"AWS_ACCESS_KEY_ID=" + storeAccessKey,
		"AWS_SECRET_ACCESS_KEY=" + storeSecretKey,
		"AWS_SESSION_TOKEN=",
		"AWS_PROFILE=",
		"AWS_REGION=" + storeRegion,
		"AWS_EC2_METADATA_DISABLED=true",
		"AWS_CONFIG_FILE=" + filepath.Join(dir, "aws-config-none"),
		"AWS_SHARED_CREDENTIALS_FILE=" + filepath.Join(dir, "aws-credentials-none"),
	}
}
