// Command impactbench runs behavioural benchmarks of AI assistants.
package main

import (
	"os"

	"github.com/impactbench/impactbench/internal/cli"
)

func main() {
	os.Exit(cli.Main(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}
