package clientset

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/impactbench/impactbench/internal/config"
)

// IMPACTBENCH_POOLTRACE makes the process's first client set write its
// pools' occupancy to the file, %p replaced by the process id. (The trace
// runs for the life of the process, so this is the package's only test
// that sets it.)
func TestPoolTraceEnvWritesTheTrace(t *testing.T) {
	dir := t.TempDir()
	t.Setenv(PoolTraceEnv, filepath.Join(dir, "pools-%p.tsv"))
	New(&config.Config{}, Options{})
	path := filepath.Join(dir, "pools-"+strconv.Itoa(os.Getpid())+".tsv")
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		b, err := os.ReadFile(path)
		if err == nil && strings.HasPrefix(string(b), "t_ms\tpool\tin_flight\tqueued\tlimit\n") {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("no trace at %s after 10 s: %q, %v", path, b, err)
		}
	}
}
