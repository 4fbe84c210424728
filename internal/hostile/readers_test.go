package hostile_test

import (
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/impactbench/impactbench/internal/artifacts"
	"github.com/impactbench/impactbench/internal/config"
	"github.com/impactbench/impactbench/internal/hostile"
	"github.com/impactbench/impactbench/internal/labels"
	"github.com/impactbench/impactbench/internal/results"
	"github.com/impactbench/impactbench/internal/study"
)

// TestEveryReaderIsBounded feeds every reader of a file a user writes or
// receives inputs of at most 1 MiB built to cost as much as possible
// (alias bombs, deep nesting, huge flat lists, many keys, duplicate keys,
// many documents, long lines and keys, bytes that are not UTF-8) and
// checks that each is read, or refused, in at most 100 MB of peak memory.
// Each input runs in a child process of the test binary; the table of
// docs/security.md is its -v output:
//
//	go test ./internal/hostile -run TestEveryReaderIsBounded -count=1 -v
func TestEveryReaderIsBounded(t *testing.T) {
	cases := append(yamlCases(), jsonCases()...)
	hostile.Check(t, hostile.Run(t, "TestEveryReaderIsBounded", cases))
}

const (
	modelsHead   = "models:\n  - {run_dir: a, id: a, name: A, provider: P, releaseYear: 2025, surfaces: [full]}\n"
	taxonomyFile = `{"areas": [{"id": "a", "name": "A", "subareas": [{"id": "s", "name": "S", "groups": [{"name": "G", "metric_ids": ["b__m01"]}]}]}]}`
)

// sorted adds one case per shape, in name order.
func sorted(reader string, shapes map[string]func() []byte, files func(data []byte) map[string][]byte, run func(dir string) error) []hostile.Case {
	names := make([]string, 0, len(shapes))
	for n := range shapes {
		names = append(names, n)
	}
	sort.Strings(names)
	var out []hostile.Case
	for _, n := range names {
		gen := shapes[n]
		out = append(out, hostile.Case{Reader: reader, Shape: n, Files: func() map[string][]byte { return files(gen()) }, Run: run})
	}
	return out
}

func one(name string) func([]byte) map[string][]byte {
	return func(b []byte) map[string][]byte { return map[string][]byte{name: b} }
}

func yamlCases() []hostile.Case {
	bench := hostile.YAMLShapes("name: n\ndescription: d\n", "", "scenario", "lol")
	models := hostile.YAMLShapes(modelsHead, "", "", "")
	models["alias bomb (merge keys)"] = modelsMergeBomb
	cfg := hostile.YAMLShapes("", "x-", "user_model", "")
	var out []hostile.Case
	out = append(out, sorted("benchmark.yaml", bench, one("benchmark.yaml"), func(dir string) error {
		_, err := config.LoadBenchmark(filepath.Join(dir, "benchmark.yaml"))
		return err
	})...)
	out = append(out, sorted("models.yaml", models, one("models.yaml"), func(dir string) error {
		_, err := config.LoadStudyModels(filepath.Join(dir, "models.yaml"))
		return err
	})...)
	out = append(out, sorted("config.yaml", cfg, one("config.yaml"), func(dir string) error {
		_, err := config.LoadWithOptions(filepath.Join(dir, "config.yaml"), config.LoadOptions{AllowMissingEnv: true, LookupEnv: func(string) (string, bool) { return "", false }})
		return err
	})...)
	return out
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

func jsonCases() []hostile.Case {
	loadInputs := func(dir string) error { _, err := study.LoadInputs(dir); return err }
	withModels := func(name string, more map[string][]byte) func([]byte) map[string][]byte {
		return func(b []byte) map[string][]byte {
			m := map[string][]byte{name: b, "models.yaml": []byte(modelsHead)}
			for k, v := range more {
				m[k] = v
			}
			return m
		}
	}
	eachRow := func(file string, each func(string) error) func(string) error {
		return func(dir string) error { return each(filepath.Join(dir, file)) }
	}
	var out []hostile.Case
	out = append(out, sorted("taxonomy.json", hostile.JSONShapes(`{"areas": `, "}"), withModels("taxonomy.json", nil), loadInputs)...)
	out = append(out, sorted("nutrition-label.json", hostile.JSONShapes(`[{"id": "c", "label": "C", "metrics": `, "}]"),
		withModels("nutrition-label.json", map[string][]byte{"taxonomy.json": []byte(taxonomyFile)}), loadInputs)...)
	out = append(out, sorted("scenarios.json", hostile.JSONShapes(`[{"id": "m01_s001_v01", "metric_id": "m01", "demographic": `, "}]"), one("scenarios.json"),
		eachRow("scenarios.json", func(p string) error {
			return artifacts.EachScenario(p, func(int, artifacts.Scenario) error { return nil })
		}))...)
	out = append(out, sorted("conversations.json", hostile.JSONShapes(`[{"id": "m01_s001_v01", "metric_id": "m01", "conv_id": "m01_s001_v01__t__s0", "_sample": 0, "target_model": "t", "transcript": `, "}]"), one("conversations.json"),
		eachRow("conversations.json", func(p string) error {
			return artifacts.EachConversation(p, func(int, artifacts.Conversation) error { return nil })
		}))...)
	out = append(out, sorted("scores.json", hostile.JSONShapes("", ""), one("scores.json"),
		eachRow("scores.json", func(p string) error {
			return artifacts.EachScore(p, func(int, artifacts.Score) error { return nil })
		}))...)
	out = append(out, sorted("results.json", hostile.JSONShapes("", ""), one("results.json"),
		eachRow("results.json", func(p string) error { _, err := results.ReadResults(p); return err }))...)
	readStudy := eachRow("study.json", func(p string) error { _, err := study.ReadResult(p); return err })
	out = append(out, sorted("study.json", hostile.JSONShapes(`{"version": 1, "nodes": `, "}"), one("study.json"), readStudy)...)
	out = append(out, sorted("study.json cells", hostile.JSONShapes(`{"version": 1, "cells": `, "}"), one("study.json"), readStudy)...)
	lbl := hostile.JSONShapes(`{"conv_id": "m01_s001_v01__t__s0", "metric_id": "m01", "note": `, "}\n")
	lbl["many bad lines"] = func() []byte { return []byte(strings.Repeat("{}\n", hostile.MaxInput/3)) }
	out = append(out, sorted("labels.jsonl", lbl, one("labels.jsonl"), eachRow("labels.jsonl", func(p string) error {
		_, err := labels.Read(p, labels.Known{Conversations: map[string]string{"m01_s001_v01__t__s0": "m01"}})
		return err
	}))...)
	return out
}
