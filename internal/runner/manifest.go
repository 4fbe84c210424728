package runner

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sort"
	"sync"
	"time"

	"github.com/impactbench/impactbench/internal/fsx"
)

// manifest remembers, per phase output, the fingerprints of the inputs it
// was made from, so a rerun can skip an up-to-date phase (upstream's
// semantics) yet notice — and say — when an input changed underneath it.
type manifest struct {
	path string
	mu   sync.Mutex
	m    map[string]phaseRecord
}

type phaseRecord struct {
	Inputs   map[string]string `json:"inputs"`
	Output   string            `json:"output_sha256"`
	Failed   int               `json:"failed"`
	Finished time.Time         `json:"finished"`
	// Pending marks an output being replaced (see beginOutput).
	Pending bool `json:"pending,omitempty"`
}

func loadManifest(path string) *manifest {
	mf := &manifest{path: path, m: map[string]phaseRecord{}}
	if b, err := os.ReadFile(path); err == nil {
		_ = json.Unmarshal(b, &mf.m) // unreadable → treated as empty: phases just rerun (free via the call store)
	}
	return mf
}

func (mf *manifest) get(key string) (phaseRecord, bool) {
	mf.mu.Lock()
	defer mf.mu.Unlock()
	r, ok := mf.m[key]
	return r, ok
}

func (mf *manifest) put(key string, r phaseRecord) error {
	mf.mu.Lock()
	defer mf.mu.Unlock()
	mf.m[key] = r
	b, err := json.MarshalIndent(mf.m, "", "  ")
	if err != nil {
		return err
	}
	return writeAtomic(mf.path, b)
}

// changedInputs names the inputs whose fingerprints differ (sorted).
func changedInputs(old, cur map[string]string) []string {
	var out []string
	for k, v := range cur {
		if old[k] != v {
			out = append(out, k)
		}
	}
	for k := range old {
		if _, ok := cur[k]; !ok {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}

// fingerprint hashes any JSON-encodable value.
func fingerprint(vs ...any) string {
	h := sha256.New()
	enc := json.NewEncoder(h)
	for _, v := range vs {
		_ = enc.Encode(v)
	}
	return hex.EncodeToString(h.Sum(nil))[:32]
}

func fileSHA(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", fmt.Errorf("hash %s: %w", path, err)
	}
	return hex.EncodeToString(h.Sum(nil))[:32], nil
}

// writeAtomic replaces path with data (see package fsx).
func writeAtomic(path string, data []byte) error { return fsx.WriteFile(path, data, fsx.Shared) }
