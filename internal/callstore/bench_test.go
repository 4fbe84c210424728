package callstore

import (
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/impactbench/impactbench/internal/callstore/s3test"
	"github.com/impactbench/impactbench/internal/fsx"
	"github.com/impactbench/impactbench/internal/llm"
)

// studyUnits is the study preset's unit count: 17 benchmarks' worth of
// conversations, spread here over 16 targets' sim directories.
const studyUnits = 17280

func unitName(i int) string {
	return fmt.Sprintf("t%02d/sim/m%02d_s%03d_v01__s0", i%16, i/16%17, i/16/17)
}

// benchDir is where the benchmarks write: IMPACTBENCH_BENCH_DIR (to
// measure a given disk), else the test's temporary directory.
func benchDir(b *testing.B) string {
	if d := os.Getenv("IMPACTBENCH_BENCH_DIR"); d != "" {
		dir, err := os.MkdirTemp(d, "callstore-bench-")
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { os.RemoveAll(dir) })
		return dir
	}
	return b.TempDir()
}

func countFiles(b *testing.B, dir string) int {
	n := 0
	filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			n++
		}
		return nil
	})
	return n
}

var tinyModel = llm.ClientFunc(func(_ context.Context, r llm.Request) (llm.Response, error) {
	return llm.Response{Text: "a short answer to " + r.Messages[0].Content, Usage: llm.Usage{Requests: 1, InputTokens: 10, OutputTokens: 5}}, nil
})

// BenchmarkWriteStudyUnits writes 17,280 units of one call and a result
// each, per op, in the per-unit-file layout this package had (its file
// operations: a journal opened per unit, the call and a trailer appended,
// the journal renamed into place) and in segments (this package).
func BenchmarkWriteStudyUnits(b *testing.B) {
	entry, _ := json.Marshal(Entry{Key: Key(id, req("q", 0)), Response: llm.Response{Text: "a short answer"}})
	trailerLine, _ := json.Marshal(map[string]any{"version": formatVersion, "result": "r", "result_key": "k"})
	b.Run("per-unit-files", func(b *testing.B) {
		for b.Loop() {
			b.StopTimer()
			root := benchDir(b)
			cpu := cpuTime()
			b.StartTimer()
			for i := range studyUnits {
				p := filepath.Join(root, filepath.FromSlash(unitName(i)))
				if err := fsx.MkdirAll(filepath.Dir(p), fsx.Private); err != nil {
					b.Fatal(err)
				}
				f, err := fsx.OpenAppend(p+".jsonl", fsx.Private)
				if err != nil {
					b.Fatal(err)
				}
				f.Write(append(entry, '\n'))
				f.Write(append(trailerLine, '\n'))
				f.Close()
				if err := os.Rename(p+".jsonl", p+".json"); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			b.ReportMetric(float64(cpuTime()-cpu)/1e6, "cpu-ms/op")
			b.ReportMetric(float64(countFiles(b, root)), "files/op")
			b.StartTimer()
		}
	})
	b.Run("segments", func(b *testing.B) {
		for b.Loop() {
			b.StopTimer()
			root := benchDir(b)
			s := Open(root, false)
			cpu := cpuTime()
			b.StartTimer()
			for i := range studyUnits {
				u, err := s.Unit(unitName(i))
				if err != nil {
					b.Fatal(err)
				}
				if _, err := u.Client(id, tinyModel).Complete(context.Background(), req("q", 0)); err != nil {
					b.Fatal(err)
				}
				if err := u.SetResult("k", "r"); err != nil {
					b.Fatal(err)
				}
				u.Close()
			}
			b.StopTimer()
			s.Close()
			b.ReportMetric(float64(cpuTime()-cpu)/1e6, "cpu-ms/op")
			b.ReportMetric(float64(countFiles(b, root)), "files/op")
			b.StartTimer()
		}
	})
}

// BenchmarkBlobStoreUnit stores one unit (one call and its result) per op
// in the object store, against gofakes3 on loopback: the store's own
// cost per unit (a probe, a create-once call, a revision) over HTTP.
func BenchmarkBlobStoreUnit(b *testing.B) {
	srv := s3test.Start(b, "calls")
	for _, kv := range s3test.Env(b.TempDir()) {
		k, v, _ := strings.Cut(kv, "=")
		b.Setenv(k, v)
	}
	s, err := OpenURL(context.Background(), srv.URL("calls", "bench"), Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	var requests, n atomic.Int64 // n numbers units across runs: each op stores a new one
	srv.Hook(func(http.ResponseWriter, *http.Request) bool { requests.Add(1); return false })
	for _, par := range []int{1, 16} {
		b.Run(fmt.Sprintf("parallel-%d", par), func(b *testing.B) {
			b.SetParallelism(par)
			requests.Store(0)
			cpu := cpuTime()
			defer func() {
				b.ReportMetric(float64(cpuTime()-cpu)/1e3/float64(b.N), "cpu-µs/op")
				b.ReportMetric(float64(requests.Load())/float64(b.N), "requests/op")
			}()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					i := n.Add(1)
					u, err := s.Unit(fmt.Sprintf("p%d/sim/u%07d__s0", par, i))
					if err != nil {
						b.Error(err)
						return
					}
					u.Client(id, tinyModel).Complete(context.Background(), req("q", 0))
					if err := u.SetResult("k", "r"); err != nil {
						b.Error(err)
					}
					u.Close()
				}
			})
		})
	}
}

// BenchmarkBlobReplayRead reads back the results of 256 units per op, as
// a replay (merge --from-store) assembles an output, against gofakes3 on
// loopback: with and without Survey, requests and wall per unit.
func BenchmarkBlobReplayRead(b *testing.B) {
	srv := s3test.Start(b, "calls")
	for _, kv := range s3test.Env(b.TempDir()) {
		k, v, _ := strings.Cut(kv, "=")
		b.Setenv(k, v)
	}
	const n = 256
	name := func(i int) string { return fmt.Sprintf("t/eval/u%04d__s0", i) }
	w, err := OpenURL(context.Background(), srv.URL("calls", "replay"), Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer w.Close()
	for i := range n {
		u, _ := w.Unit(name(i))
		if err := u.SetResult("k", i); err != nil {
			b.Fatal(err)
		}
	}
	var requests atomic.Int64
	srv.Hook(func(http.ResponseWriter, *http.Request) bool { requests.Add(1); return false })
	for _, survey := range []bool{false, true} {
		b.Run(fmt.Sprintf("survey-%v", survey), func(b *testing.B) {
			requests.Store(0)
			start := time.Now()
			for range b.N {
				s, err := OpenURL(context.Background(), srv.URL("calls", "replay"), Options{Survey: survey})
				if err != nil {
					b.Fatal(err)
				}
				err = EachResult(context.Background(), s, n, name, func(i int, v *int, ok bool) error {
					if !ok || *v != i {
						return fmt.Errorf("unit %d: %d %v", i, *v, ok)
					}
					return nil
				})
				s.Close()
				if err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(requests.Load())/float64(b.N*n), "requests/unit")
			b.ReportMetric(float64(time.Since(start).Microseconds())/float64(b.N*n), "µs/unit")
		})
	}
}
