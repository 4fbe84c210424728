package config

import (
	"fmt"
	"net/url"
	"strings"
)

// The variables that override store and rate_backend for one process (a
// cluster's workers share one config.yaml baked into an image; where their
// store lives is the deployment's business).
const (
	EnvStore       = "IMPACTBENCH_STORE"
	EnvRateBackend = "IMPACTBENCH_RATE_BACKEND"
)

// StoreURLProblem says what is wrong with a store value ("" when nothing
// is): a directory, file:///path, or s3://, gs://, azblob://bucket/prefix
// with no credentials in it. Whether the bucket exists and takes writes is
// checked when a command opens it.
func StoreURLProblem(raw string) string {
	if raw == "" || !strings.Contains(raw, "://") {
		return ""
	}
	u, err := url.Parse(raw)
	if err != nil {
		return "not a URL: want a directory, file:///path, s3://bucket/prefix, gs://bucket/prefix or azblob://container/prefix"
	}
	switch strings.ToLower(u.Scheme) {
	case "file":
		if u.Host != "" && u.Host != "localhost" {
			return "a file URL names no host: file:///path"
		}
		return ""
	case "s3", "gs", "azblob":
	default:
		return fmt.Sprintf("unknown scheme %q: want a directory, file://, s3://, gs:// or azblob://", u.Scheme)
	}
	if u.User != nil {
		return "it holds credentials: give them to the provider's environment (e.g. AWS_ACCESS_KEY_ID), never in the URL"
	}
	if u.Host == "" {
		return "it names no bucket: " + u.Scheme + "://bucket/prefix"
	}
	return ""
}

// RateBackendProblem says what is wrong with a rate_backend value ("" when
// nothing is): it must be a redis://, rediss:// or unix:// URL. Whether the
// server answers is checked when a command connects.
func RateBackendProblem(raw string) string {
	if raw == "" {
		return ""
	}
	u, err := url.Parse(raw)
	if err != nil {
		return "not a URL: want redis://[user:password@]host:port/db, rediss://… or unix:///path"
	}
	switch strings.ToLower(u.Scheme) {
	case "redis", "rediss", "unix":
		return ""
	}
	return fmt.Sprintf("unknown scheme %q: want redis://[user:password@]host:port/db, rediss://… or unix:///path", u.Scheme)
}

// WithoutBatch is a copy of c in which no model sends its calls through a
// provider's batch API (a replay answers every call from the call store,
// where batch answers are kept under the same keys as real-time ones).
func (c *Config) WithoutBatch() *Config {
	n := *c
	n.UserModel.Batch = false
	if c.GeneratorModel != nil {
		m := *c.GeneratorModel
		m.Batch = false
		n.GeneratorModel = &m
	}
	if c.LandmarkModel != nil {
		m := *c.LandmarkModel
		m.Batch = false
		n.LandmarkModel = &m
	}
	n.EvaluatorModels = append([]ModelConfig(nil), c.EvaluatorModels...)
	for i := range n.EvaluatorModels {
		n.EvaluatorModels[i].Batch = false
	}
	n.Targets = append([]ModelConfig(nil), c.Targets...)
	for i := range n.Targets {
		n.Targets[i].Batch = false
	}
	return &n
}
