package benchharness

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	"github.com/impactbench/impactbench/internal/layout"
)

// Comparison is the merged outputs against one process's.
type Comparison struct {
	Files int   `json:"files"`
	Bytes int64 `json:"bytes"`
	// Differ names each file that differs, or that one side lacks.
	Differ []string `json:"differ,omitempty"`
	// RequestsOnly names the files of Differ that are the same once every
	// "requests" count is set aside: calls retried after a 429 count their
	// attempts in a row's usage.
	RequestsOnly []string `json:"requests_only,omitempty"`
}

// compareOutputs compares, byte for byte, every file under the benchmarks
// of two projects (results.json, each run's conversations, scores and
// cost…) but report.html, which carries the time it was written.
func compareOutputs(want, got string) (Comparison, error) {
	var c Comparison
	seen := map[string]bool{}
	wantB, gotB := layout.BenchmarksDir(want), layout.BenchmarksDir(got)
	err := filepath.WalkDir(wantB, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !comparable(path) {
			return err
		}
		rel, _ := filepath.Rel(wantB, path)
		seen[rel] = true
		a, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		b, err := os.ReadFile(filepath.Join(gotB, rel))
		switch {
		case err != nil:
			c.Differ = append(c.Differ, rel+" (missing)")
		case !bytes.Equal(withoutRunRecord(rel, a), withoutRunRecord(rel, b)):
			c.Differ = append(c.Differ, rel)
			if bytes.Equal(requestCount.ReplaceAll(a, nil), requestCount.ReplaceAll(b, nil)) {
				c.RequestsOnly = append(c.RequestsOnly, rel)
			}
		default:
			c.Files++
			c.Bytes += int64(len(a))
		}
		return nil
	})
	if err != nil {
		return c, err
	}
	err = filepath.WalkDir(gotB, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !comparable(path) {
			return err
		}
		if rel, _ := filepath.Rel(gotB, path); !seen[rel] && !isShardFile(filepath.Base(rel)) {
			c.Differ = append(c.Differ, rel+" (only in the merged project)")
		}
		return nil
	})
	return c, err
}

// requestCount is a usage's count of attempts in an output file.
var requestCount = regexp.MustCompile(`"requests":\s*\d+`)

// isShardFile: a worker's own output on a shared directory, which merge
// combines (conversations.shard-0-of-16.json…).
func isShardFile(name string) bool {
	_, _, ok := layout.CutShard(strings.TrimSuffix(name, filepath.Ext(name)))
	return ok
}

// withoutRunRecord is a file's bytes to compare: run_manifest.json without
// its "concurrency" record, which tells how one process's limiter ran (its
// learned limit, peak in flight, calls) and which a merge, running no
// call, does not write; every other file as it is.
func withoutRunRecord(rel string, b []byte) []byte {
	if filepath.Base(rel) != layout.RunManifestFile {
		return b
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(b, &m) != nil {
		return b
	}
	delete(m, "concurrency")
	out, err := json.Marshal(m)
	if err != nil {
		return b
	}
	return out
}

// comparable: every output file but the report.
func comparable(path string) bool {
	return filepath.Base(path) != layout.ReportFile && !strings.HasPrefix(filepath.Base(path), ".")
}

// clusterText prints a cluster run.
func clusterText(b *bytes.Buffer, r *Result) {
	c := r.Cluster
	share := "divided by " + strconv.Itoa(c.Workers)
	if c.RateBackend != "" {
		share = "shared through " + c.RateBackend
	}
	fmt.Fprintf(b, "cluster       %d indexes, %d workers at once, store %s, limit %s; %d benchmarks, %d conversations × %d turns\n",
		c.Indexes, c.Workers, c.Store, share, c.Benchmarks, r.Options.Conversations, r.Options.Turns)
	fmt.Fprintf(b, "bound         %s (%s) for the %d calls one process needed\n", secs(c.Bound), c.Binding, c.Calls)
	fmt.Fprintf(b, "one process   %s without the limit; %d requests, %d 429s (the reference outputs and calls)\n", secs(c.Reference.Wall), c.Reference.Requests, c.Reference.RateLimited)
	fmt.Fprintf(b, "workers       %s + merge %s = %s; wall ÷ bound %.3f (workers alone %.3f)\n",
		secs(c.Wall), secs(c.Merge), secs(c.Wall+c.Merge), c.Ratio, c.RunRatio)
	fmt.Fprintf(b, "429s          %d of %d requests (%.2f%%)\n", c.RateLimited, c.Requests, 100*c.RateLimitedShare)
	fmt.Fprintf(b, "paid twice    %d (identical requests answered more often than for one process): %d asked while another worker had it in flight, %d answered to a killed worker (at most %s before the kill), %d otherwise (%d of them by the duplicate); %d never made\n",
		c.PaidTwice, c.Why.Raced, c.Why.Killed, secs(c.Why.LastBeforeKill), c.Why.Other, c.Why.OtherByDuplicate, c.Missing)
	if len(c.Why.OtherPairs) > 0 {
		fmt.Fprintf(b, "  otherwise   earlier answer → asked again: %v\n", c.Why.OtherPairs)
	}
	if k := c.Kill; k != nil {
		fmt.Fprintf(b, "kill          at %s: SIGKILL to indexes %v with %d calls in flight (%d in flight in all); duplicate of index %d\n",
			secs(k.At), k.Killed, k.InFlightKilled, k.InFlightAll, k.Duplicate)
	}
	fmt.Fprintf(b, "compared      %d files, %d bytes", c.Compared.Files, c.Compared.Bytes)
	if len(c.Compared.Differ) == 0 {
		b.WriteString(": byte-identical to one process's\n")
	} else {
		fmt.Fprintf(b, "; DIFFER: %s", strings.Join(c.Compared.Differ, ", "))
		if len(c.Compared.RequestsOnly) > 0 {
			fmt.Fprintf(b, " (only in attempts counted, 429s retried: %s)", strings.Join(c.Compared.RequestsOnly, ", "))
		}
		b.WriteString("\n")
	}
	for _, run := range c.Runs {
		note := ""
		switch {
		case run.Killed:
			note = " killed"
		case run.Duplicate:
			note = " duplicate"
		case run.ExitCode != 0:
			note = fmt.Sprintf(" exit %d: %s", run.ExitCode, run.StderrTail)
		}
		fmt.Fprintf(b, "  index %-3d %7s – %7s%s\n", run.Index, secs(run.Start), secs(run.End), note)
	}
	if r.Dir != "" {
		fmt.Fprintf(b, "project       %s\n", r.Dir)
	}
}
