package artifacts

import "github.com/impactbench/impactbench/internal/layout"

// ListRunDirs is layout.ListRunDirs, kept for the runner until it calls
// layout itself.
//
// Deprecated: use layout.ListRunDirs.
func ListRunDirs(benchDir string) ([]string, error) { return layout.ListRunDirs(benchDir) }
