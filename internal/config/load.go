package config

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/goccy/go-yaml/ast"
	"github.com/impactbench/impactbench/internal/ids"
	"github.com/impactbench/impactbench/internal/layout"
)

// LoadOptions tunes LoadWithOptions.
type LoadOptions struct {
	// AllowMissingEnv expands a ${VAR} whose variable is unset or empty to ""
	// and lists it in Config.MissingEnv instead of failing, so commands that
	// do not call that model (init, dry runs, aggregate) still work. Call
	// Config.CheckEnv before using a model.
	AllowMissingEnv bool
	// LookupEnv replaces os.LookupEnv (tests, embedding). When set, .env
	// values are only used for ${VAR} expansion and are not exported to the
	// process environment.
	LookupEnv func(string) (string, bool)
}

// Load reads config.yaml (path may also be the project directory), loads
// .env from the same directory without overriding variables already set,
// applies upstream defaults and validates everything. Problems in the file
// come back together as an *Error.
func Load(path string) (*Config, error) {
	return LoadWithOptions(path, LoadOptions{})
}

// LoadWithOptions is Load with options.
//
// Unless opts.LookupEnv is set, the .env values that are not already in the
// environment are exported to it (as upstream's load_dotenv does), so
// provider SDKs that fall back to e.g. OPENAI_API_KEY see them.
func LoadWithOptions(path string, opts LoadOptions) (*Config, error) {
	if st, err := os.Stat(path); err == nil && st.IsDir() {
		path = layout.ConfigPath(path)
	}
	src, err := readCapped(path, MaxConfigBytes)
	if err != nil {
		var ce *Error
		if errors.As(err, &ce) {
			return nil, err
		}
		if errors.Is(err, fs.ErrNotExist) {
			return nil, &Error{File: path, Problems: []Problem{{
				Msg: "config file not found; run `impactbench init` to create a starter project, or pass --config",
				Err: err,
			}}}
		}
		return nil, fmt.Errorf("config: %w", err)
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	dir := filepath.Dir(abs)

	dotenv, err := readDotEnv(filepath.Join(dir, layout.EnvFile))
	if err != nil {
		return nil, err
	}
	base := opts.LookupEnv
	if base == nil {
		base = os.LookupEnv
		for k, v := range dotenv {
			if _, set := os.LookupEnv(k); !set {
				if err := os.Setenv(k, v); err != nil {
					return nil, fmt.Errorf("config: export %s from .env: %w", k, err)
				}
			}
		}
	}
	lookup := func(k string) (string, bool) {
		if v, ok := base(k); ok {
			return v, true
		}
		v, ok := dotenv[k]
		return v, ok
	}

	cfg := defaults()
	cfg.Path, cfg.Dir = abs, dir
	ps := &problems{file: path}
	body, t, ok := parseYAML(src, ps)
	d := &cfgDecoder{
		tree:          t,
		ps:            ps,
		cfg:           cfg,
		lookup:        lookup,
		allowMissing:  opts.AllowMissingEnv,
		missingFields: map[string]bool{},
		targetIDs:     map[string]int{},
	}
	if ok {
		d.decode(body)
	}
	t.checkFileUTF8(src)
	if err := ps.err(); err != nil {
		d.scrub(err.(*Error))
		return nil, err
	}
	cfg.Warnings = d.warnings
	cfg.MissingEnv = d.missing
	return cfg, nil
}

func defaults() *Config {
	return &Config{
		// Run.Concurrency: zero is auto; GenScenariosExpand is derived
		// after decoding when gen_scenarios is a number.

		Generation: Generation{ScenariosPerMetric: 3, Turns: 6, NumSamples: 1},
		Landmarks:  true,
		Validity:   ValidityConfig{Audit: true, TurnChecks: true, Reasks: DefaultReasks, Redos: DefaultRedos},
	}
}

type cfgDecoder struct {
	*tree
	ps  *problems
	cfg *Config

	lookup        func(string) (string, bool)
	allowMissing  bool
	missing       []MissingVar
	missingFields map[string]bool // fields whose value lost a missing ${VAR}
	secrets       []string        // expanded keys, scrubbed from messages
	expanded      int             // bytes ${VAR} references added, in all
	warnings      []string
	targetIDs     map[string]int // target id → line of first use

	// Where generation: and demographics: are, for problems of their product.
	generationAt, demographicsAt ast.Node
	// expandSet: run.concurrency.gen_scenarios_expand was given (a number
	// or auto), so it is not derived from gen_scenarios.
	expandSet bool
}

// Known keys per section, for unknown-key errors and suggestions.
func topKeys() []string {
	return []string{"run", "user_model", "generator_model", "evaluator_model", "landmark_model",
		"targets", "generation", "demographics", "perfunctory", "landmarks", "pinpoint",
		"seed", "max_cost", "pricing", "prompts", "judge", "validity", "store", "rate_backend"}
}
func runKeys() []string      { return []string{"force", "dry_run", "verbose", "concurrency", "adaptive"} }
func adaptiveKeys() []string { return []string{"enabled", "start", "max", "seed"} }
func concurrencyKeys() []string {
	return []string{"gen_scenarios", "gen_scenarios_expand", "simulate", "evaluate"}
}
func generationKeys() []string {
	return []string{"scenarios_per_metric", "turns", "num_samples", "independent_openings"}
}
func modelKeys() []string {
	return []string{"id", "model", "source", "apikey", "base_url", "extra_headers", "temperature",
		"max_tokens", "timeout", "max_retries", "max_concurrency", "rpm", "tpm", "itpm", "otpm",
		"rate_pool", "pricing", "batch", "offline", "cache_min_tokens"}
}
func priceKeys() []string   { return []string{"input", "output", "cached_input", "cache_write"} }
func offlineKeys() []string { return []string{"care", "pressure", "latency"} }
func judgeKeys() []string   { return []string{"show_examples"} }
func validityKeys() []string {
	return []string{"audit", "audit_share", "audit_reply_chars", "turn_checks", "reasks", "redos", "landmark_check", "valid_only"}
}

// homeOf says where a key misplaced at the top level belongs.
func homeOf(key string) string {
	switch {
	case slices.Contains(runKeys(), key):
		return "run"
	case slices.Contains(concurrencyKeys(), key):
		return "run.concurrency"
	case slices.Contains(generationKeys(), key):
		return "generation"
	case slices.Contains(modelKeys(), key):
		return "a model block (user_model, evaluator_model or a target)"
	case slices.Contains(judgeKeys(), key):
		return "judge"
	case slices.Contains(validityKeys(), key):
		return "validity"
	}
	return ""
}

// unknown reports a key that is not in known, with a suggestion when one
// is close.
func (d *cfgDecoder) unknown(e entry, parent string, known []string) {
	field := joinField(parent, e.key)
	if s := suggest(e.key, known); s != "" {
		d.ps.add(e.line(), e.col(), field, "unknown key; did you mean %s?", s)
		return
	}
	if parent == "" {
		if home := homeOf(e.key); home != "" {
			d.ps.add(e.line(), e.col(), field, "unknown top-level key; %s belongs under %s", e.key, home)
			return
		}
	}
	d.ps.add(e.line(), e.col(), field, "unknown key (valid keys: %s)", strings.Join(known, ", "))
}

// str reads a string field and expands ${VAR} references in it.
func (d *cfgDecoder) str(raw ast.Node, field string) string {
	s, ok := d.scalarText(raw, field)
	if !ok {
		return ""
	}
	return d.expand(s, raw, field)
}

func (d *cfgDecoder) expand(s string, raw ast.Node, field string) string {
	if !strings.Contains(s, "${") {
		return s
	}
	line, col := nodePos(raw)
	// The size first: a value of 20,000 references to a 100 KB variable
	// took 7 GB and was accepted as a 2 GB model name.
	size, added := len(s), 0
	for _, m := range envRef.FindAllStringSubmatchIndex(s, -1) {
		if v, ok := d.lookup(s[m[2]:m[3]]); ok && v != "" {
			size += len(v) - (m[1] - m[0])
			added += len(v)
		}
	}
	switch {
	case size > MaxStringBytes:
		d.ps.add(line, col, field, "value is over the %s limit for one value once its ${VAR} references are expanded", mib(MaxStringBytes))
		d.bad[field] = true
		return ""
	case d.expanded+added > MaxConfigBytes:
		d.ps.add(line, col, field, "the values' ${VAR} references expand to more than %s in all", mib(MaxConfigBytes))
		d.bad[field] = true
		return ""
	}
	d.expanded += added
	return envRef.ReplaceAllStringFunc(s, func(ref string) string {
		name := ref[2 : len(ref)-1]
		if v, ok := d.lookup(name); ok && v != "" {
			return v
		}
		d.missingFields[field] = true
		if d.allowMissing {
			d.missing = append(d.missing, MissingVar{Var: name, Field: field, Pos: Position{File: d.ps.file, Line: line, Col: col}})
		} else {
			d.ps.add(line, col, field, "%s", missingVarMsg(name))
		}
		return ""
	})
}

// decode reads config.yaml's top-level mapping into d.cfg, recording every
// problem, then finishes (defaults and cross-field checks).
func (d *cfgDecoder) decode(body ast.Node) {
	if body == nil {
		d.finish()
		return
	}
	if _, isMap := d.deref(body).(*ast.MappingNode); !isMap {
		line, col := nodePos(body)
		d.ps.add(line, col, "", "config.yaml must be a mapping of keys (run:, user_model:, targets:, …), got %s", describe(d.deref(body)))
		return
	}
	entries, _ := d.mapping(body, "")
	if d.foreign(entries, topKeys(), layout.ConfigFile) {
		return
	}
	var landmarksAt, pinpointAt *entry
	for _, e := range entries {
		if strings.HasPrefix(e.key, "x-") {
			continue // extension keys hold shared anchors, as in docker compose
		}
		if !slices.Contains(topKeys(), e.key) {
			d.unknown(e, "", topKeys())
			continue
		}
		if isNull(d.deref(e.value)) {
			continue // null = absent: the default applies
		}
		switch e.key {
		case "landmarks":
			landmarksAt = &e
			d.cfg.Landmarks, _ = d.boolean(e.value, "landmarks")
		case "pinpoint":
			pinpointAt = &e
		default:
			d.topLevel(e)
		}
	}
	if pinpointAt != nil {
		d.pinpoint(*pinpointAt, landmarksAt)
	}
	d.finish()
}

// topLevel decodes top-level entry e of config.yaml: every key but
// landmarks and its old name pinpoint, which decode itself tracks.
func (d *cfgDecoder) topLevel(e entry) {
	cfg := d.cfg
	switch e.key {
	case "run":
		d.run(e.value)
	case "user_model":
		cfg.UserModel = d.model(e.value, "user_model", false)
	case "generator_model":
		m := d.model(e.value, "generator_model", false)
		cfg.GeneratorModel = &m
	case "landmark_model":
		m := d.model(e.value, "landmark_model", false)
		cfg.LandmarkModel = &m
	case "evaluator_model":
		d.evaluators(e.value)
	case "targets":
		d.targets(e.value)
	case "generation":
		d.generation(e.value)
	case "demographics":
		d.demographics(e.value)
	case "perfunctory":
		cfg.Perfunctory, _ = d.boolean(e.value, "perfunctory")
	case "seed":
		cfg.Seed, _ = d.uinteger(e.value, "seed")
	case "max_cost":
		cfg.MaxCost = d.nonNegative(e.value, "max_cost")
	case "pricing":
		d.pricingTable(e.value)
	case "prompts":
		cfg.Prompts = d.str(e.value, "prompts")
	case "judge":
		d.judge(e.value)
	case "validity":
		d.validity(e.value)
	case "store":
		cfg.Store = d.str(e.value, "store")
		if p := StoreURLProblem(cfg.Store); p != "" {
			d.ps.add(e.line(), e.col(), "store", "%s", p)
		}
	case "rate_backend":
		cfg.RateBackend = d.str(e.value, "rate_backend")
		if p := RateBackendProblem(cfg.RateBackend); p != "" {
			d.ps.add(e.line(), e.col(), "rate_backend", "%s", p)
		}
	}
}

// pinpoint applies pinpoint (entry e), the old name of landmarks, with a
// deprecation warning, or reports it when landmarks (landmarksAt) is also
// set.
func (d *cfgDecoder) pinpoint(e entry, landmarksAt *entry) {
	if landmarksAt != nil {
		d.ps.add(e.line(), e.col(), "pinpoint", "pinpoint is the old name of landmarks (line %d); keep only landmarks", landmarksAt.line())
	} else if v, ok := d.boolean(e.value, "pinpoint"); ok {
		d.cfg.Landmarks = v
		d.warnings = append(d.warnings, fmt.Sprintf("%s:%d:%d: pinpoint is deprecated; rename it to landmarks", d.ps.file, e.line(), e.col()))
	}
}

func (d *cfgDecoder) finish() {
	d.checkSize()
	c := &d.cfg.Run.Concurrency
	if !d.expandSet && c.GenScenarios > 0 {
		c.GenScenariosExpand = 2 * c.GenScenarios // upstream's default
	}
}

func (d *cfgDecoder) section(raw ast.Node, field string, known []string, each func(e entry, field string)) {
	entries, ok := d.mapping(raw, field)
	if !ok {
		return
	}
	for _, e := range entries {
		if !slices.Contains(known, e.key) {
			d.unknown(e, field, known)
			continue
		}
		if isNull(d.deref(e.value)) {
			continue
		}
		each(e, joinField(field, e.key))
	}
}

func (d *cfgDecoder) run(raw ast.Node) {
	r := &d.cfg.Run
	d.section(raw, "run", runKeys(), func(e entry, f string) {
		switch e.key {
		case "force":
			r.Force, _ = d.boolean(e.value, f)
		case "dry_run":
			r.DryRun, _ = d.boolean(e.value, f)
		case "verbose":
			r.Verbose, _ = d.boolean(e.value, f)
		case "concurrency":
			d.concurrency(e.value, f)
		case "adaptive":
			d.adaptive(e.value, f)
		}
	})
}

// adaptive reads run.adaptive (ours): a boolean, or a mapping of the
// design's settings, which turns it on unless enabled: false.
func (d *cfgDecoder) adaptive(raw ast.Node, field string) {
	a := &d.cfg.Run.Adaptive
	switch d.deref(raw).(type) {
	case *ast.BoolNode:
		a.Enabled, _ = d.boolean(raw, field)
		return
	case *ast.MappingNode:
	default:
		d.typeProblem(raw, field, "true, false, or a mapping of enabled, start, max and seed")
		return
	}
	a.Enabled = true
	d.section(raw, field, adaptiveKeys(), func(e entry, f string) {
		switch e.key {
		case "enabled":
			a.Enabled, _ = d.boolean(e.value, f)
		case "start":
			a.Start, _ = d.bounded(e.value, f, 1, MaxScenariosPerMetric, "base scenarios every metric gets in the first round")
		case "max":
			a.Max, _ = d.bounded(e.value, f, 1, MaxScenariosPerMetric, "the most base scenarios any metric gets")
		case "seed":
			a.Seed, _ = d.uinteger(e.value, f)
		}
	})
	if a.Start > 0 && a.Max > 0 && a.Start > a.Max {
		line, col := nodePos(raw)
		d.ps.add(line, col, field, "start %d is above max %d: the first round cannot give a metric more base scenarios than the cap", a.Start, a.Max)
	}
}

// concurrency reads run.concurrency: `auto` for every phase, or a mapping
// of phase → `auto` or a worker-pool size.
func (d *cfgDecoder) concurrency(raw ast.Node, field string) {
	if isAuto(d.deref(raw)) {
		d.saw(raw, field)
		d.cfg.Run.Concurrency = Concurrency{}
		d.expandSet = true
		return
	}
	if _, ok := d.deref(raw).(*ast.MappingNode); !ok && !isNull(d.deref(raw)) {
		d.typeProblem(raw, field, "auto or a mapping of phase sizes")
		return
	}
	d.section(raw, field, concurrencyKeys(), func(e entry, f string) {
		c := &d.cfg.Run.Concurrency
		v := 0 // auto
		if isAuto(d.deref(e.value)) {
			d.saw(e.value, f)
		} else if _, ok := d.deref(e.value).(*ast.IntegerNode); ok {
			v, _ = d.bounded(e.value, f, 1, MaxConcurrency, "it is a worker-pool size; auto lets the provider limits decide")
		} else {
			d.typeProblem(e.value, f, "auto or a worker-pool size (an integer)")
		}
		switch e.key {
		case "gen_scenarios":
			c.GenScenarios = v
		case "gen_scenarios_expand":
			c.GenScenariosExpand = v
			d.expandSet = true
		case "simulate":
			c.Simulate = v
		case "evaluate":
			c.Evaluate = v
		}
	})
}

// isAuto reports the scalar `auto` (any case).
func isAuto(n ast.Node) bool {
	s, ok := n.(*ast.StringNode)
	return ok && strings.EqualFold(strings.TrimSpace(s.Value), "auto")
}

func (d *cfgDecoder) generation(raw ast.Node) {
	g := &d.cfg.Generation
	d.section(raw, "generation", generationKeys(), func(e entry, f string) {
		switch e.key {
		case "scenarios_per_metric":
			g.ScenariosPerMetric, _ = d.bounded(e.value, f, 1, MaxScenariosPerMetric, "")
		case "turns":
			g.Turns, _ = d.bounded(e.value, f, 1, MaxTurns, "")
		case "num_samples":
			g.NumSamples, _ = d.bounded(e.value, f, 1, MaxNumSamples, "")
		case "independent_openings":
			g.IndependentOpenings, _ = d.boolean(e.value, f)
		}
	})
	d.generationAt = raw
}

// checkSize refuses a configuration whose parts are each within bounds
// but whose product is not: rows per metric grow as
// scenarios_per_metric × demographic combinations × num_samples.
func (d *cfgDecoder) checkSize() {
	g := d.cfg.Generation
	variants := 1
	for _, a := range d.cfg.Demographics {
		variants *= max(len(a.Values), 1)
		if variants > MaxVariants {
			break
		}
	}
	at := d.demographicsAt
	if at == nil {
		at = d.generationAt
	}
	line, col := nodePos(at)
	switch scen := g.ScenariosPerMetric * variants; {
	case variants > MaxVariants:
		d.ps.add(line, col, "demographics", "the axes give more than %d combinations (each base scenario is rewritten once per combination); use fewer values or axes", MaxVariants)
	case scen > MaxScenariosPerMetricTotal:
		d.ps.add(line, col, "generation.scenarios_per_metric", "%d base scenarios × %d demographic combinations = %d scenarios per metric, over the limit of %d", g.ScenariosPerMetric, variants, scen, MaxScenariosPerMetricTotal)
	case scen*g.NumSamples > MaxConversationsPerMetric:
		d.ps.add(line, col, "generation.num_samples", "%d scenarios per metric × %d samples = %d conversations per metric and target, over the limit of %d", scen, g.NumSamples, scen*g.NumSamples, MaxConversationsPerMetric)
	}
}

func (d *cfgDecoder) nonNegativeInt(raw ast.Node, field string) int {
	v, ok := d.integer(raw, field)
	if ok && v < 0 {
		line, col := nodePos(raw)
		d.ps.add(line, col, field, "must not be negative, got %d (use 0 or remove the key for no limit)", v)
		return 0
	}
	return v
}

func (d *cfgDecoder) nonNegative(raw ast.Node, field string) float64 {
	v, ok := d.number(raw, field)
	if ok && v < 0 {
		line, col := nodePos(raw)
		d.ps.add(line, col, field, "must not be negative, got %v", v)
		return 0
	}
	return v
}

// unit reads a number in [0, 1].
func (d *cfgDecoder) unit(raw ast.Node, field string) *float64 {
	v, ok := d.number(raw, field)
	if !ok {
		return nil
	}
	if v < 0 || v > 1 {
		line, col := nodePos(raw)
		d.ps.add(line, col, field, "must be between 0 and 1, got %v", v)
	}
	return &v
}

func (d *cfgDecoder) evaluators(raw ast.Node) {
	n := d.deref(raw)
	switch n.(type) {
	case *ast.MappingNode:
		d.cfg.EvaluatorModels = []ModelConfig{d.model(raw, "evaluator_model", false)}
	case *ast.SequenceNode:
		items, _ := d.sequence(raw, "evaluator_model")
		if len(items) == 0 {
			line, col := nodePos(raw)
			d.ps.add(line, col, "evaluator_model", "empty list; give one judge model (a mapping) or a list of them")
			return
		}
		for i, it := range items {
			d.cfg.EvaluatorModels = append(d.cfg.EvaluatorModels, d.model(it, indexField("evaluator_model", i), false))
		}
	default:
		d.typeProblem(raw, "evaluator_model", "a model (model:, source:, …) or a list of models")
	}
}

func (d *cfgDecoder) targets(raw ast.Node) {
	items, ok := d.sequence(raw, "targets")
	if !ok {
		d.typeProblem(raw, "targets", "a list of models, each starting with - id:")
		return
	}
	for i, it := range items {
		d.cfg.Targets = append(d.cfg.Targets, d.model(it, indexField("targets", i), true))
	}
}

// model decodes one model block. Targets additionally need a unique id that
// is safe as a directory name.
func (d *cfgDecoder) model(raw ast.Node, field string, isTarget bool) ModelConfig {
	m := ModelConfig{MaxRetries: 4}
	entries, ok := d.mapping(raw, field)
	if !ok {
		return m
	}
	var idNode, sourceNode ast.Node
	hasModel := false
	for _, e := range entries {
		f := joinField(field, e.key)
		if !slices.Contains(modelKeys(), e.key) {
			d.unknown(e, field, modelKeys())
			continue
		}
		if isNull(d.deref(e.value)) {
			continue
		}
		switch e.key {
		case "id":
			m.ID, idNode = d.str(e.value, f), e.value
		case "model":
			m.Model, hasModel = d.str(e.value, f), true
		case "source":
			m.Source, sourceNode = d.str(e.value, f), e.value
		default:
			d.modelSetting(&m, e, f)
		}
	}

	line, col := nodePos(d.deref(raw))
	if m.Source == "" && sourceNode == nil {
		m.Source = "openai"
	}
	if sourceNode != nil && !d.skip(joinField(field, "source")) {
		d.checkSource(m, sourceNode, field)
	}
	if m.Model == "" && !d.skip(joinField(field, "model")) {
		if hasModel {
			d.ps.add(line, col, joinField(field, "model"), "must not be empty (the provider's model name, e.g. gpt-4o)")
		} else {
			d.ps.add(line, col, joinField(field, "model"), "required (the provider's model name, e.g. gpt-4o)")
		}
	}
	if isTarget && !d.skip(joinField(field, "id")) {
		d.checkTargetID(m.ID, idNode, field, line, col)
	}
	return m
}

// modelSetting decodes entry e (field f) of a model block into m: every
// key but id, model and source, which model itself tracks.
func (d *cfgDecoder) modelSetting(m *ModelConfig, e entry, f string) {
	switch e.key {
	case "apikey":
		m.APIKey = d.str(e.value, f)
		d.secret(m.APIKey)
	case "base_url":
		m.BaseURL = d.str(e.value, f)
	case "extra_headers":
		m.ExtraHeaders = d.headers(e.value, f)
	case "temperature":
		if v, ok := d.number(e.value, f); ok {
			if v < 0 || v > 2 {
				line, col := nodePos(e.value)
				d.ps.add(line, col, f, "must be between 0 and 2, got %v", v)
			}
			m.Temperature = &v
		}
	case "max_tokens":
		m.MaxTokens, _ = d.bounded(e.value, f, 0, MaxOutputTokens, "0 = the default, 2048")
	case "timeout":
		m.Timeout = d.nonNegativeDuration(e.value, f)
		if m.Timeout > MaxTimeout {
			line, col := nodePos(e.value)
			d.ps.add(line, col, f, "must be at most %v per call, got %v", MaxTimeout, m.Timeout)
		}
	case "max_retries":
		m.MaxRetries, _ = d.bounded(e.value, f, 0, MaxRetries, "")
	case "max_concurrency":
		m.MaxConcurrency, _ = d.bounded(e.value, f, 0, MaxConcurrency, "0 = no limit of its own")
	case "rpm":
		m.RPM = d.nonNegativeInt(e.value, f)
	case "tpm":
		m.TPM = d.nonNegativeInt(e.value, f)
	case "itpm":
		m.ITPM = d.nonNegativeInt(e.value, f)
	case "otpm":
		m.OTPM = d.nonNegativeInt(e.value, f)
	case "rate_pool":
		m.RatePool = d.str(e.value, f)
	case "pricing":
		p := d.price(e.value, f)
		m.Pricing = &p
	case "batch":
		m.Batch, _ = d.boolean(e.value, f)
	case "cache_min_tokens":
		m.CacheMinTokens, _ = d.bounded(e.value, f, 0, MaxCacheMinTokens, "0 = the model's known minimum")
	case "offline":
		m.Offline = d.offline(e.value, f)
	}
}

// checkSource reports a model block's unknown source (with a suggestion)
// and an openai_compatible source without the base_url it needs, at the
// source's position.
func (d *cfgDecoder) checkSource(m ModelConfig, sourceNode ast.Node, field string) {
	sl, sc := nodePos(sourceNode)
	if !slices.Contains(knownSources(), m.Source) {
		msg := fmt.Sprintf("unknown source %q", m.Source)
		if s := suggest(m.Source, knownSources()); s != "" {
			msg += "; did you mean " + s + "?"
		} else {
			msg += " (known: " + strings.Join(knownSources(), ", ") + "; any other OpenAI-style endpoint: source: openai_compatible with base_url)"
		}
		d.ps.add(sl, sc, joinField(field, "source"), "%s", msg)
	} else if m.Source == "openai_compatible" && m.BaseURL == "" && !d.skip(joinField(field, "base_url")) {
		d.ps.add(sl, sc, joinField(field, "base_url"), "required with source: openai_compatible (the endpoint, e.g. https://host/v1)")
	}
}

func (d *cfgDecoder) checkTargetID(id string, idNode ast.Node, field string, line, col int) {
	f := joinField(field, "id")
	if idNode != nil {
		line, col = nodePos(idNode)
	}
	if idNode == nil || strings.TrimSpace(id) == "" {
		d.ps.add(line, col, f, "required: a short name for this target; it names the run directory %s/", layout.RunDirRel("<bench>", "<id>"))
		return
	}
	if why := ids.Problem(id, ids.MaxName); why != "" {
		d.ps.add(line, col, f, "%q is not safe as a directory name (%s); use letters, digits, '-', '_' and '.'", id, why)
		return
	}
	if first, dup := d.targetIDs[id]; dup {
		d.ps.add(line, col, f, "duplicate target id %q (first at line %d); ids name run directories and must be unique", id, first)
		return
	}
	d.targetIDs[id] = line
}

func (d *cfgDecoder) nonNegativeDuration(raw ast.Node, field string) time.Duration {
	v, ok := d.duration(raw, field)
	if ok && v < 0 {
		line, col := nodePos(raw)
		d.ps.add(line, col, field, "must not be negative, got %v", v)
		return 0
	}
	return v
}

func (d *cfgDecoder) headers(raw ast.Node, field string) map[string]string {
	entries, ok := d.mapping(raw, field)
	if !ok || len(entries) == 0 {
		return nil
	}
	h := make(map[string]string, len(entries))
	for _, e := range entries {
		f := joinField(field, e.key)
		if strings.TrimSpace(e.key) == "" {
			d.ps.add(e.line(), e.col(), f, "empty header name")
			continue
		}
		v := d.str(e.value, f)
		h[e.key] = v
		if isSecretHeader(e.key) {
			d.secret(v)
		}
	}
	return h
}

func (d *cfgDecoder) price(raw ast.Node, field string) Price {
	var p Price
	d.section(raw, field, priceKeys(), func(e entry, f string) {
		v := d.nonNegative(e.value, f)
		switch e.key {
		case "input":
			p.Input = v
		case "output":
			p.Output = v
		case "cached_input":
			p.CachedRead = v
		case "cache_write":
			p.CacheWrite = v
		}
	})
	return p
}

func (d *cfgDecoder) pricingTable(raw ast.Node) {
	entries, ok := d.mapping(raw, "pricing")
	if !ok {
		return
	}
	d.cfg.Pricing = make(map[string]Price, len(entries))
	for _, e := range entries {
		d.cfg.Pricing[e.key] = d.price(e.value, joinField("pricing", e.key))
	}
}

func (d *cfgDecoder) offline(raw ast.Node, field string) *OfflineProfile {
	p := &OfflineProfile{}
	d.section(raw, field, offlineKeys(), func(e entry, f string) {
		switch e.key {
		case "care":
			p.Care = d.unit(e.value, f)
		case "pressure":
			p.Pressure = d.unit(e.value, f)
		case "latency":
			p.Latency = d.nonNegativeDuration(e.value, f)
		}
	})
	return p
}

func (d *cfgDecoder) judge(raw ast.Node) {
	d.section(raw, "judge", judgeKeys(), func(e entry, f string) {
		d.cfg.Judge.ShowExamples, _ = d.boolean(e.value, f)
	})
}

func (d *cfgDecoder) validity(raw ast.Node) {
	v := &d.cfg.Validity
	var audit, legacy *entry
	d.section(raw, "validity", validityKeys(), func(e entry, f string) {
		switch e.key {
		case "audit":
			audit = &e
			v.Audit, _ = d.boolean(e.value, f)
		case "audit_share":
			v.AuditShare = d.unit(e.value, f)
		case "audit_reply_chars":
			n := d.intAtMost(e.value, f, MaxAuditReplyChars)
			v.AuditReplyChars = &n
		case "landmark_check":
			legacy = &e
		case "turn_checks":
			v.TurnChecks, _ = d.boolean(e.value, f)
		case "reasks":
			v.Reasks = d.intAtMost(e.value, f, MaxReasks)
		case "redos":
			v.Redos = d.intAtMost(e.value, f, MaxRedos)
		case "valid_only":
			v.ValidOnly, _ = d.boolean(e.value, f)
		}
	})
	if legacy != nil {
		d.landmarkCheck(*legacy, audit)
	}
}

// landmarkCheck reads validity.landmark_check, the audit's older, opt-in
// form: true asks for the audit (on anyway); false, which starter configs
// used to spell out, no longer turns it off (validity.audit: false does).
func (d *cfgDecoder) landmarkCheck(e entry, audit *entry) {
	on, ok := d.boolean(e.value, "validity.landmark_check")
	switch {
	case !ok:
	case on && audit != nil && !d.cfg.Validity.Audit:
		d.ps.add(e.line(), e.col(), "validity.landmark_check", "true asks for the audit that validity.audit: false (line %d) turns off; keep one of them", audit.line())
	case !on && audit == nil:
		d.warnings = append(d.warnings, fmt.Sprintf("%s:%d:%d: validity.landmark_check: false no longer turns the check of the simulated user off: it is now the audit (validity.audit), on by default; set validity.audit: false to turn it off, and remove landmark_check", d.ps.file, e.line(), e.col()))
	}
}

// intAtMost reads an integer in [0, most].
func (d *cfgDecoder) intAtMost(raw ast.Node, field string, most int) int {
	v, ok := d.integer(raw, field)
	if ok && (v < 0 || v > most) {
		line, col := nodePos(raw)
		d.ps.add(line, col, field, "must be between 0 and %d, got %d (each one is paid for in model calls)", most, v)
		return min(max(v, 0), most)
	}
	return v
}

// demographics keeps axes in YAML order: the order defines variant ids.
func (d *cfgDecoder) demographics(raw ast.Node) {
	d.demographicsAt = raw
	entries, ok := d.mapping(raw, "demographics")
	if !ok {
		return
	}
	for _, e := range entries {
		f := joinField("demographics", e.key)
		items, ok := d.sequence(e.value, f)
		if !ok {
			d.typeProblem(e.value, f, "a list of values, e.g. age: [child, adult]")
			continue
		}
		if len(items) == 0 {
			d.ps.add(e.line(), e.col(), f, "axis has no values, which would produce zero scenarios; list at least one value or remove the axis")
			continue
		}
		axis := Axis{Name: e.key}
		first := map[string]int{}
		for i, it := range items {
			fi := indexField(f, i)
			v := d.str(it, fi)
			line, col := nodePos(it)
			if strings.TrimSpace(v) == "" && !d.skip(fi) {
				d.ps.add(line, col, fi, "empty value")
				continue
			}
			if at, dup := first[v]; dup {
				d.ps.add(line, col, fi, "duplicate value %q (first at line %d)", v, at)
				continue
			}
			first[v] = line
			axis.Values = append(axis.Values, v)
		}
		d.cfg.Demographics = append(d.cfg.Demographics, axis)
	}
}

// skip says a field's emptiness must not be reported: it already has a
// type problem, or a ${VAR} in it was missing (reported or deferred).
func (d *cfgDecoder) skip(field string) bool {
	return d.missingFields[field] || d.bad[field]
}

func (d *cfgDecoder) secret(s string) {
	if len(s) >= 6 {
		d.secrets = append(d.secrets, s)
	}
}

// scrub is the last line of defence: no message may contain a key, whatever
// path it took into the text.
func (d *cfgDecoder) scrub(e *Error) {
	for i := range e.Problems {
		for _, s := range d.secrets {
			e.Problems[i].Msg = strings.ReplaceAll(e.Problems[i].Msg, s, "***")
			e.Problems[i].Field = strings.ReplaceAll(e.Problems[i].Field, s, "***")
		}
	}
}
