package config

import "github.com/impactbench/impactbench/internal/fault"

// FaultKind: config.yaml and benchmark.yaml problems are fixed in the file.
func (e *Error) FaultKind() fault.Kind { return fault.Config }
