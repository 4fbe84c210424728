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
	cases := append(append(yamlCases(), jsonCases()...), envCases()...)
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

// envCases are hostile .env files, read by loading the config.yaml
// beside them, and config.yaml values whose ${VAR} references name a
// large .env value. The environment is not touched (LookupEnv is set).
func envCases() []hostile.Case {
	fill := func(head, unit, tail string) func() []byte {
		return func() []byte {
			n := (hostile.MaxInput - len(head) - len(tail)) / len(unit)
			return []byte(head + strings.Repeat(unit, n) + tail)
		}
	}
	bomb := func() []byte {
		var b strings.Builder
		b.WriteString("A0=xxxxxxxxxx\n")
		for i := 1; i <= 9; i++ {
			fmt.Fprintf(&b, "A%d=%s\n", i, strings.Repeat(fmt.Sprintf("${A%d}", i-1), 10))
		}
		return []byte(b.String())
	}
	malformedLast := func() []byte {
		line := "K=" + strings.Repeat("v", 800) + "\n"
		last := "BAD=\"unclosed\n"
		return []byte(strings.Repeat(line, (hostile.MaxInput-len(last))/len(line)) + last)
	}
	shapes := map[string]func() []byte{
		"reference bomb":      bomb,
		"wide references":     fill("A="+strings.Repeat("x", 1000)+"\n", "B=${A}${A}${A}${A}\n", ""),
		"comments":            fill("", "#\n", ""),
		"malformed last line": malformedLast,
		"many keys":           fill("", "K=v\n", ""),
		"long line":           fill("K=", "v", "\n"),
		"long quoted value":   fill("K=\"", `\n`, "\"\n"),
		"unterminated quote":  fill("K=\"", "v", "\n"),
		"not UTF-8":           fill("K=", "\xff", "\n"),
	}
	load := func(dir string) error {
		_, err := config.LoadWithOptions(filepath.Join(dir, "config.yaml"), config.LoadOptions{AllowMissingEnv: true, LookupEnv: func(string) (string, bool) { return "", false }})
		return err
	}
	withConfig := func(b []byte) map[string][]byte { return map[string][]byte{".env": b, "config.yaml": []byte("{}\n")} }
	out := sorted(".env", shapes, withConfig, load)
	// config.yaml values referring to a 1 MiB .env value: one value, and
	// one value aliased across many targets.
	bigEnv := []byte("BIG=" + strings.Repeat("x", hostile.MaxInput-10) + "\n")
	refs := map[string]func() []byte{
		"many references": func() []byte {
			return []byte("user_model:\n  model: \"" + strings.Repeat("${BIG}", 30_000) + "\"\n")
		},
		"aliased reference": func() []byte {
			return []byte("x-a: &a \"${BIG}\"\ntargets:\n" + strings.Repeat("  - {id: t, source: offline, model: *a}\n", 1_000))
		},
	}
	out = append(out, sorted("config.yaml ${VAR}", refs, func(b []byte) map[string][]byte {
		return map[string][]byte{".env": bigEnv, "config.yaml": b}
	}, func(dir string) error {
		_, err := config.LoadWithOptions(filepath.Join(dir, "config.yaml"), config.LoadOptions{})
		return err
	})...)
	return out
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
