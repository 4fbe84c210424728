package study

import "github.com/impactbench/impactbench/internal/fault"

// FaultKind: the study's inputs are fixed in their files.
func (e *InputError) FaultKind() fault.Kind { return fault.Input }
