// Command impactbench-bench is the benchmark harness: it measures the
// impactbench command against a local fake provider (docs/performance.md).
package main

import (
	"os"

	"github.com/impactbench/impactbench/internal/benchcli"
)

func main() { os.Exit(benchcli.Main(os.Args[1:], os.Stdout, os.Stderr)) }
