package provider

import (
	"github.com/impactbench/impactbench/internal/config"
	"github.com/impactbench/impactbench/internal/llm"
	"github.com/impactbench/impactbench/internal/llm/offline"
)

// newOffline builds the built-in offline model (source: offline).
func newOffline(cfg config.ModelConfig, seed uint64) llm.Client {
	return offline.New(cfg, seed)
}
