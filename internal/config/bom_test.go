package config

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// withBOM copies src to a temporary file that starts with a UTF-8
// byte-order mark, as some Windows editors save it.
func withBOM(t *testing.T, src, name string) string {
	t.Helper()
	raw, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, append([]byte("\xef\xbb\xbf"), raw...), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// Upstream's YAML reader skips a byte-order mark at the start of a file,
// so config.yaml and benchmark.yaml saved with one load as without it
// (they failed as a syntax error on a later line).
func TestYAMLWithByteOrderMarkLoadsAsWithout(t *testing.T) {
	env := upstreamEnv()
	for i := 0; i < len(env); i += 2 {
		t.Setenv(env[i], env[i+1])
	}
	want, err := Load("testdata/upstream-config.yaml")
	if err != nil {
		t.Fatal(err)
	}
	got, err := Load(withBOM(t, "testdata/upstream-config.yaml", "config.yaml"))
	if err != nil {
		t.Fatalf("config.yaml with a byte-order mark: %v", err)
	}
	if diff := cmp.Diff(want.Run, got.Run); diff != "" {
		t.Errorf("run (-without +with):\n%s", diff)
	}
	if diff := cmp.Diff(want.UserModel, got.UserModel); diff != "" {
		t.Errorf("user_model (-without +with):\n%s", diff)
	}

	wantB, err := LoadBenchmark("testdata/humanebench/benchmark.yaml")
	if err != nil {
		t.Fatal(err)
	}
	gotB, err := LoadBenchmark(withBOM(t, "testdata/humanebench/benchmark.yaml", "benchmark.yaml"))
	if err != nil {
		t.Fatalf("benchmark.yaml with a byte-order mark: %v", err)
	}
	if diff := cmp.Diff(wantB.Metrics, gotB.Metrics); diff != "" || wantB.Name != gotB.Name {
		t.Errorf("benchmark (-without +with):\n%s name %q / %q", diff, wantB.Name, gotB.Name)
	}
}
