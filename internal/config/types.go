// Package config loads and validates config.yaml (upstream ImpactBench's keys
// plus our additions) and benchmark.yaml, and writes generated metrics back
// into benchmark.yaml without losing the user's comments or unknown keys.
package config

import "time"

// Config is a loaded, validated config.yaml. Field names follow upstream's keys.
type Config struct {
	// Path is the absolute path of the file it was loaded from; Dir its directory
	// (the project root: benchmarks/, .cache/ and prompts/ are resolved from it).
	Path string `yaml:"-"`
	Dir  string `yaml:"-"`

	Run RunConfig `yaml:"run"`

	UserModel ModelConfig `yaml:"user_model"`
	// GeneratorModel writes metrics, scenarios and demographic variants.
	// Upstream has no such role (user_model does it); nil means "use UserModel".
	GeneratorModel *ModelConfig `yaml:"generator_model"`
	// EvaluatorModels is upstream's evaluator_model: a single mapping, or (our
	// addition) a list of judges forming a majority-vote panel.
	EvaluatorModels []ModelConfig `yaml:"-"`
	// LandmarkModel judges landmark adherence (optional check); nil = first judge.
	LandmarkModel *ModelConfig `yaml:"landmark_model"`

	Targets []ModelConfig `yaml:"targets"`

	Generation   Generation   `yaml:"generation"`
	Demographics Demographics `yaml:"-"` // axes in YAML order
	Perfunctory  bool         `yaml:"perfunctory"`
	Landmarks    bool         `yaml:"-"` // default true

	// Additions beyond upstream.
	Seed     uint64           `yaml:"seed"`     // master seed for perfunctory noise, offline model, bootstrap
	MaxCost  float64          `yaml:"max_cost"` // USD ceiling for one invocation; 0 = none
	Pricing  map[string]Price `yaml:"pricing"`  // per-model price overrides, key = model name
	Prompts  string           `yaml:"prompts"`  // directory of prompt template overrides (relative to Dir)
	Judge    JudgeConfig      `yaml:"judge"`
	Validity ValidityConfig   `yaml:"validity"`
	// Store is where the call store lives when it is not the project's
	// .cache/<bench>/calls: a directory every worker shares (a path or
	// file:///path) or object storage (s3://, gs://, azblob://bucket/prefix).
	// Each benchmark's calls go under <store>/<bench>.
	Store string `yaml:"store" json:"-"`
	// RateBackend is a Redis URL (redis://, rediss://, unix://) holding every
	// worker's request and token buckets, so workers share provider limits
	// exactly; "" divides the limits by the workers running at once.
	RateBackend string `yaml:"rate_backend" json:"-"`

	// Warnings are non-fatal findings ("file:line:col: message"), e.g. the
	// deprecated pinpoint key. The CLI prints them to stderr.
	Warnings []string `yaml:"-"`
	// MissingEnv lists ${VAR} references left empty because the variable was
	// unset (only with LoadOptions.AllowMissingEnv); see CheckEnv.
	MissingEnv []MissingVar `yaml:"-"`
}

// RunConfig is upstream's run: block.
type RunConfig struct {
	Force       bool        `yaml:"force"`
	DryRun      bool        `yaml:"dry_run"`
	Verbose     bool        `yaml:"verbose"`
	Concurrency Concurrency `yaml:"concurrency"`
	// Adaptive (ours) asks `run all` for the adaptive study design.
	Adaptive Adaptive `yaml:"adaptive"`
}

// Adaptive is run.adaptive (ours): `true`, or a mapping of enabled
// (default true once the mapping is given), start, max and seed, the
// design's --adaptive, --adaptive-start, --adaptive-max and
// --adaptive-seed; a flag typed on the command line wins. Zero Start and
// Max take the flags' defaults.
type Adaptive struct {
	Enabled bool   `yaml:"enabled"`
	Start   int    `yaml:"start"`
	Max     int    `yaml:"max"`
	Seed    uint64 `yaml:"seed"`
}

// Concurrency is upstream's run.concurrency block (pool sizes per phase).
// 0 is auto (our default; `auto` in YAML): the phase's worker pool is sized
// so that the provider pools' adaptive limits, not the workers, bound what
// is in flight. A number is a cap, as upstream (whose defaults were
// gen_scenarios 5, gen_scenarios_expand 2×gen_scenarios, simulate 10,
// evaluate 20). gen_scenarios_expand unset with gen_scenarios a number is
// 2×gen_scenarios, as upstream.
type Concurrency struct {
	GenScenarios       int `yaml:"gen_scenarios"`
	GenScenariosExpand int `yaml:"gen_scenarios_expand"`
	Simulate           int `yaml:"simulate"`
	Evaluate           int `yaml:"evaluate"`
}

// Generation is upstream's generation: block. scenarios_per_metric and turns
// are required upstream; we default them to 3 and 6 but reject non-positive values.
type Generation struct {
	ScenariosPerMetric int `yaml:"scenarios_per_metric"`
	Turns              int `yaml:"turns"`
	NumSamples         int `yaml:"num_samples"` // default 1
	// IndependentOpenings asks the simulated user's first turn once per
	// target, as upstream did; by default it is asked once per scenario
	// and sample and every target gets that opening. Left out of the JSON
	// that results' settings fingerprint hashes: each conversation is drawn
	// alike either way (only the draws' pairing across targets differs),
	// so the results stay comparable, and a project that asks for
	// independent openings keeps the fingerprints of before the option.
	IndependentOpenings bool `yaml:"independent_openings" json:"-"`
}

// Axis is one demographic axis, e.g. age: [child, adult].
type Axis struct {
	Name   string
	Values []string
}

// Demographics are the axes in YAML key order (the order defines variant ids).
type Demographics []Axis

// ModelConfig is the shape shared by user_model, evaluator_model, generator_model and targets.
type ModelConfig struct {
	ID           string            `yaml:"id"` // targets only: run directory name
	Model        string            `yaml:"model"`
	Source       string            `yaml:"source"` // default "openai"
	APIKey       string            `yaml:"apikey"` // after ${VAR} expansion; never logged or written
	BaseURL      string            `yaml:"base_url"`
	ExtraHeaders map[string]string `yaml:"extra_headers"`

	// Additions beyond upstream (all optional).
	Temperature    *float64      `yaml:"temperature"`
	MaxTokens      int           `yaml:"max_tokens"`
	Timeout        time.Duration `yaml:"-"`               // from "timeout: 90s"
	MaxRetries     int           `yaml:"max_retries"`     // default 4
	MaxConcurrency int           `yaml:"max_concurrency"` // max in-flight calls for this provider+model
	RPM            int           `yaml:"rpm"`             // requests per minute
	TPM            int           `yaml:"tpm"`             // input+output tokens per minute
	ITPM           int           `yaml:"itpm"`            // input tokens per minute
	OTPM           int           `yaml:"otpm"`            // output tokens per minute
	// RatePool names a limit pool shared with every model that names the
	// same pool (and key): model names that share one provider quota, e.g.
	// one model family, one Azure deployment quota, or one vLLM server.
	// Empty: the pool is this provider + endpoint + model + key.
	RatePool string `yaml:"rate_pool"`
	Pricing  *Price `yaml:"pricing"`
	// Batch sends the model's calls through the provider's batch API (50 %
	// price; OpenAI and Anthropic): a judge's in one batch, user_model's and
	// a target's in simulation waves. Other providers run in real time
	// (said once in the log); generator and landmark models ignore it.
	Batch bool `yaml:"batch"`
	// CacheMinTokens is the model's shortest cacheable prompt prefix in
	// tokens (0: the minimum known for the model name, see
	// llm.CacheMinTokens; 1,024 for unknown models). Anthropic models get
	// no cache breakpoint on a shorter prefix, and the dry run's estimate
	// with caching counts no shorter one.
	CacheMinTokens int `yaml:"cache_min_tokens"`
	// Offline tunes the built-in offline model (source: offline).
	Offline *OfflineProfile `yaml:"offline"`
}

// Price is USD per million tokens.
type Price struct {
	Input      float64 `yaml:"input" json:"input"`
	Output     float64 `yaml:"output" json:"output"`
	CachedRead float64 `yaml:"cached_input" json:"cached_input"`
	CacheWrite float64 `yaml:"cache_write" json:"cache_write"`
}

// OfflineProfile makes offline targets differ. Care is the base probability
// that an offline target reply shows careful, boundary-keeping behaviour;
// Pressure is how much that care erodes per turn of adversarial pressure.
type OfflineProfile struct {
	Care     *float64      `yaml:"care"`
	Pressure *float64      `yaml:"pressure"`
	Latency  time.Duration `yaml:"-"` // simulated latency per call ("latency: 50ms")
}

// JudgeConfig holds judge-prompt options beyond upstream.
type JudgeConfig struct {
	// ShowExamples adds the metric examples to the judge prompt (upstream
	// docs promise it, upstream code does not; it changes results, so off by default).
	ShowExamples bool `yaml:"show_examples"`
}

// ValidityConfig sets how the simulated user is checked.
type ValidityConfig struct {
	// Audit has landmark_model (else the first judge) audit every finished
	// conversation's simulated user: persona kept, goal pursued, landmarks
	// followed, test not revealed. On unless set to false. The older key
	// landmark_check: true means the same.
	Audit bool `yaml:"audit"`
	// AuditShare is the share of conversations the turn checks did not
	// flag that the audit still reads, drawn per conversation from the
	// seed (resume and shards draw alike); every flagged conversation (a
	// reply re-asked, or an earlier attempt found invalid) is audited.
	// nil: DefaultAuditShare, or 1 when the audit model is the built-in
	// offline one (it costs nothing). 1 audits every conversation. The
	// json tag keeps the fingerprints of configs without the key.
	AuditShare *float64 `yaml:"audit_share" json:"AuditShare,omitempty"`
	// AuditReplyChars is how much of each of the target's replies the
	// audit reads: the first that many characters, then a marker
	// "[… N characters omitted]"; the simulated user's messages are read
	// whole (they are what it checks). 0 reads every reply whole. nil:
	// DefaultAuditReplyChars, or 0 when the audit model is the built-in
	// offline one (free). The json tag keeps the fingerprints of configs
	// without the key.
	AuditReplyChars *int `yaml:"audit_reply_chars" json:"AuditReplyChars,omitempty"`
	// TurnChecks runs the deterministic checks on every user turn before it
	// is sent (format, reasoning, role, refusal, reveal, empty, repeat, goal
	// leak). On unless set to false.
	TurnChecks bool `yaml:"turn_checks"`
	// Reasks is how many times a user turn that fails a check is asked
	// again before the conversation ends as invalid (default 2).
	Reasks int `yaml:"reasks"`
	// Redos is how many times an invalid conversation is made again with a
	// fresh seed before it is kept, marked invalid (default 2).
	Redos int `yaml:"redos"`
	// ValidOnly computes results on conversations checked and found valid
	// only (rows never checked are left out too).
	ValidOnly bool `yaml:"valid_only"`
}

// Defaults of the validity settings.
const (
	DefaultReasks = 2
	DefaultRedos  = 2
	// MaxReasks and MaxRedos bound what a config may ask for: each is paid
	// for in calls.
	MaxReasks = 5
	MaxRedos  = 5
	// DefaultAuditShare is the audit's random share of the conversations
	// neither the turn checks nor the suspect check singled out: with the
	// suspect check, 20 % catches ≥ 95 % of broken conversations on the
	// cost benchmark's break mix while the audit, reading compact
	// transcripts (DefaultAuditReplyChars), stays under 2 % of a clean
	// run's bill (docs/performance.md), and it estimates the
	// valid-rollout rate with an interval (docs/statistics.md).
	DefaultAuditShare = 0.20
	// DefaultAuditReplyChars is the head of each target reply the audit
	// reads: its first two or three sentences, enough for the reply's
	// stance (refused, complied, asked back), which is what the simulated
	// user reacts to. On the cost benchmark 400 puts the audit at 1.5 %
	// (OpenAI) / 1.7 % (Anthropic) of the bill at share 0.20, against
	// 2.4 % / 2.8 % with whole replies (docs/performance.md).
	DefaultAuditReplyChars = 400
	// MaxAuditReplyChars bounds validity.audit_reply_chars.
	MaxAuditReplyChars = 1 << 20
)

// EffectiveAuditReplyChars is the head of each target reply the audit
// reads (0: whole): the configured one, else 0 for the built-in offline
// audit model (free, so nothing is saved) and DefaultAuditReplyChars
// otherwise.
func (v ValidityConfig) EffectiveAuditReplyChars(auditModel ModelConfig) int {
	switch {
	case v.AuditReplyChars != nil:
		return *v.AuditReplyChars
	case auditModel.Source == "offline":
		return 0
	}
	return DefaultAuditReplyChars
}

// EffectiveAuditShare is the share of unflagged conversations audited:
// the configured one, else 1 for the built-in offline audit model (free,
// so nothing is saved by sampling) and DefaultAuditShare otherwise.
func (v ValidityConfig) EffectiveAuditShare(auditModel ModelConfig) float64 {
	switch {
	case v.AuditShare != nil:
		return *v.AuditShare
	case auditModel.Source == "offline":
		return 1
	}
	return DefaultAuditShare
}

// Generator returns the model that writes metrics, scenarios and variants.
func (c *Config) Generator() ModelConfig {
	if c.GeneratorModel != nil {
		return *c.GeneratorModel
	}
	return c.UserModel
}

// Target returns the target with the given id.
func (c *Config) Target(id string) (ModelConfig, bool) {
	for _, t := range c.Targets {
		if t.ID == id {
			return t, true
		}
	}
	return ModelConfig{}, false
}

// Size is the number of variants per base scenario (product of axis sizes; 1 with no axes).
func (d Demographics) Size() int {
	n := 1
	for _, a := range d {
		n *= len(a.Values)
	}
	return n
}
