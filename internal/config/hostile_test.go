package config

import (
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/impactbench/impactbench/internal/hostile"
)

const hostileModelsHead = "models:\n  - {run_dir: a, id: a, name: A, provider: P, releaseYear: 2025, surfaces: [full]}\n"

// yamlReaders are the YAML files a user writes or receives, each with the
// start of a valid file and the keys its hostile inputs use.
var yamlReaders = []struct {
	file, head, free, mapKey, anyKey string
	load                             func(path string) error
}{
	{"benchmark.yaml", "name: n\ndescription: d\n", "", "scenario", "lol", func(p string) error { _, err := LoadBenchmark(p); return err }},
	{"models.yaml", hostileModelsHead, "", "", "", func(p string) error { _, err := LoadStudyModels(p); return err }},
	{"config.yaml", "", "x-", "user_model", "", func(p string) error {
		_, err := LoadWithOptions(p, LoadOptions{AllowMissingEnv: true, LookupEnv: noEnv})
		return err
	}},
}

func hostileYAMLCases() []hostile.Case {
	var cases []hostile.Case
	for _, r := range yamlReaders {
		shapes := hostile.YAMLShapes(r.head, r.free, r.mapKey, r.anyKey)
		if r.file == "models.yaml" {
			shapes["alias bomb (merge keys)"] = modelsMergeBomb
		}
		names := make([]string, 0, len(shapes))
		for n := range shapes {
			names = append(names, n)
		}
		sort.Strings(names)
		for _, name := range names {
			gen, file, load := shapes[name], r.file, r.load
			cases = append(cases, hostile.Case{Reader: file, Shape: name,
				Files: func() map[string][]byte { return map[string][]byte{file: gen()} },
				Run:   func(dir string) error { return load(filepath.Join(dir, file)) }})
		}
	}
	return cases
}

// modelsMergeBomb merges a mapping that stands for 10^10 keys into a
// models.yaml entry.
func modelsMergeBomb() []byte {
	var b strings.Builder
	b.WriteString("m0: &m0 {a: 1, b: 2, c: 3, d: 4, e: 5, f: 6, g: 7, h: 8, i: 9, j: 10}\n")
	for i := 1; i <= 9; i++ {
		fmt.Fprintf(&b, "m%d: &m%d {<<: [%s]}\n", i, i, strings.TrimSuffix(strings.Repeat(fmt.Sprintf("*m%d, ", i-1), 10), ", "))
	}
	b.WriteString("models:\n  - <<: *m9\n")
	return []byte(b.String())
}

// TestHostileYAMLIsBounded feeds every YAML reader inputs of at most
// 1 MiB built to cost as much as possible (alias bombs, deep nesting,
// huge flat lists, many keys and documents, long lines and keys) and
// checks each is read, or refused, in at most 100 MB. Each runs in a
// child process: go test -run TestHostileYAMLIsBounded -v prints the
// table of docs/security.md (peak RSS, time of the read).
func TestHostileYAMLIsBounded(t *testing.T) {
	hostile.Check(t, hostile.Run(t, "TestHostileYAMLIsBounded", hostileYAMLCases()))
}
