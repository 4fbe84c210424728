//go:build !unix

package benchharness

import (
	"os"
	"time"
)

// maxRSSMB is not available here: peak RSS is reported as 0.
func maxRSSMB(*os.ProcessState) float64 { return 0 }

// selfCPU is not measured here.
func selfCPU() time.Duration { return 0 }
