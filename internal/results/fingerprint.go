package results

import (
	"crypto/sha256"
	"encoding/hex"

	"github.com/impactbench/impactbench/internal/artifacts"
)

// Fingerprint lists hashes of what defines a measurement (computed by the
// runner): metric definitions, scenarios, prompts, models and settings.
// Results are comparable only when their fingerprints agree.
type Fingerprint struct {
	Metrics   string `json:"metrics"`
	Scenarios string `json:"scenarios"`
	Prompts   string `json:"prompts"`
	UserModel string `json:"user_model"`
	Generator string `json:"generator"`
	Judges    string `json:"judges"`
	Settings  string `json:"settings"`
	// Targets maps a target id to the hash of its model configuration.
	Targets map[string]string `json:"targets"`
}

// IsZero reports whether no part is set.
func (f Fingerprint) IsZero() bool {
	return f.Metrics == "" && f.Scenarios == "" && f.Prompts == "" && f.UserModel == "" &&
		f.Generator == "" && f.Judges == "" && f.Settings == "" && len(f.Targets) == 0
}

// For returns "sha256:<hex>" over the shared parts and target's own entry,
// so one model's fingerprint does not change when another target's config
// does. It is "" for a zero Fingerprint.
func (f Fingerprint) For(target string) string {
	if f.IsZero() {
		return ""
	}
	// A fixed key order makes the hash independent of map iteration.
	o := artifacts.Object{
		{Key: "metrics", Value: f.Metrics},
		{Key: "scenarios", Value: f.Scenarios},
		{Key: "prompts", Value: f.Prompts},
		{Key: "user_model", Value: f.UserModel},
		{Key: "generator", Value: f.Generator},
		{Key: "judges", Value: f.Judges},
		{Key: "settings", Value: f.Settings},
		{Key: "target", Value: f.Targets[target]},
	}
	data, err := artifacts.MarshalPy(o)
	if err != nil {
		return "" // unreachable: strings only
	}
	sum := sha256.Sum256(data)
	return "sha256:" + hex.EncodeToString(sum[:])
}
