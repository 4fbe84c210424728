package scenarioset

import (
	"bytes"
	"os"
	"path/filepath"
	"runtime"
	"testing"
)

// TestCopyIntoStreams: keeping a set copies its files (a conversations.json
// may be hundreds of MB) without holding one in memory: copying 32 MiB
// allocates well under 4 MiB, and the copy is byte for byte the file.
func TestCopyIntoStreams(t *testing.T) {
	dir := t.TempDir()
	src, dst := filepath.Join(dir, "conversations.json"), filepath.Join(dir, "sets", "v1", "conversations.json")
	data := bytes.Repeat([]byte("0123456789abcdef"), 2<<20) // 32 MiB
	if err := os.WriteFile(src, data, 0o644); err != nil {
		t.Fatal(err)
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	if err := copyInto(src, dst); err != nil {
		t.Fatal(err)
	}
	runtime.ReadMemStats(&after)
	if n := after.TotalAlloc - before.TotalAlloc; n > 4<<20 {
		t.Errorf("copying a 32 MiB file allocated %d MiB: it was read whole", n>>20)
	}
	got, err := os.ReadFile(dst)
	if err != nil || !bytes.Equal(got, data) {
		t.Errorf("the copy differs from the file (%d bytes, %v)", len(got), err)
	}
}
