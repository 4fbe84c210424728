package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

var writeFuzzSeeds = flag.Bool("write-fuzz-seeds", false, "write the bad-input corpus's files as seeds of the readers' fuzz targets")

// fuzzSeedTargets: which fuzz target reads which file of the corpus
// (directories relative to the repository root).
var fuzzSeedTargets = map[string]string{
	"config.yaml": "internal/config/testdata/fuzz/FuzzLoadConfig",
	benchFile:     "internal/config/testdata/fuzz/FuzzLoadBenchmark",
	scenFile:      "internal/artifacts/testdata/fuzz/FuzzReadScenarios",
	convFile:      "internal/artifacts/testdata/fuzz/FuzzReadConversations",
	scoreFile:     "internal/artifacts/testdata/fuzz/FuzzReadScores",
}

// maxSeedBytes: a seed this large (the corpus's over-the-limit values)
// makes every mutation of it slow and teaches the fuzzer nothing the unit
// tests of the limits do not cover.
const maxSeedBytes = 256 << 10

// TestWriteFuzzSeeds writes each file of the bad-input corpus (and each
// file unbroken) as a seed of the fuzz target for its reader, named
// badinput-<case>, so the fuzzers start from every damage the corpus
// knows. It writes only when asked:
//
//	go test ./cmd/impactbench -run TestWriteFuzzSeeds -write-fuzz-seeds
func TestWriteFuzzSeeds(t *testing.T) {
	if !*writeFuzzSeeds {
		t.Skip("writes seed files only with -write-fuzz-seeds")
	}
	fixture := badInputFixture(t)
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	write := func(file, name string, data []byte) {
		if len(data) > maxSeedBytes {
			t.Logf("skip %s (%d bytes)", name, len(data))
			return
		}
		dir := filepath.Join(root, fuzzSeedTargets[file])
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		body := fmt.Sprintf("go test fuzz v1\n[]byte(%s)\n", strconv.Quote(string(data)))
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for file := range fuzzSeedTargets {
		write(file, "badinput-unbroken", readFile(t, filepath.Join(fixture, file)))
	}
	n := 0
	for _, tc := range badInputCases() {
		if _, ok := fuzzSeedTargets[tc.file]; !ok {
			continue
		}
		p := newProject(t, "")
		copyDir(t, fixture, p.dir)
		tc.edit(t, p.path(tc.file))
		write(tc.file, "badinput-"+seedName(tc.name), readFile(t, p.path(tc.file)))
		n++
	}
	t.Logf("%d corpus cases", n)
}

var nonName = regexp.MustCompile(`[^a-z0-9]+`)

func seedName(s string) string {
	return strings.Trim(nonName.ReplaceAllString(strings.ToLower(s), "-"), "-")
}
