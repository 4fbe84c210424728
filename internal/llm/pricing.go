package llm

import (
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"regexp"
	"strings"
	"sync"

	"github.com/impactbench/impactbench/internal/config"
)

// Price is USD per million tokens.
type Price struct {
	Input       float64 `json:"input"`
	Output      float64 `json:"output"`
	CachedInput float64 `json:"cached_input"` // cache reads
	CacheWrite  float64 `json:"cache_write"`  // cache writes (Anthropic: 1.25× input)
}

// CacheWriteMultiplier is Anthropic's 5-minute cache-write surcharge, used
// when a price does not name its cache-write rate.
const CacheWriteMultiplier = 1.25

// CacheWriteLongMultiplier is Anthropic's one-hour cache-write price, a
// multiple of the input price.
const CacheWriteLongMultiplier = 2.0

// Cost returns the USD cost of u. InputTokens includes cached reads and cache
// writes; each part is charged at its own rate. batch halves the result (the
// batch APIs of OpenAI, Anthropic and Google all cost 50%).
func (p Price) Cost(u Usage, batch bool) float64 {
	uncached := max(u.InputTokens-u.CachedInputTokens-u.CacheWriteTokens, 0)
	long := min(u.CacheWriteLongTokens, u.CacheWriteTokens)
	c := float64(uncached)*p.Input +
		float64(u.CachedInputTokens)*p.CachedInput +
		float64(u.CacheWriteTokens-long)*p.CacheWrite +
		float64(long)*p.Input*CacheWriteLongMultiplier +
		float64(u.OutputTokens)*p.Output
	c /= 1e6
	if batch {
		c /= 2
	}
	return c
}

// CacheSaving is what prompt caching saved on u at this price: the cost of
// its input billed as plain input minus its cost as billed (cache reads
// at the cached rate, writes at the write rate). It is negative when
// writes cost more than reads saved.
func (p Price) CacheSaving(u Usage, batch bool) float64 {
	plain := u
	plain.CachedInputTokens, plain.CacheWriteTokens, plain.CacheWriteLongTokens = 0, 0, 0
	return p.Cost(plain, batch) - p.Cost(u, batch)
}

// PriceEntry is a price with optional cache rates, as written in prices.json
// or config.yaml. Missing rates are filled by Resolve.
type PriceEntry struct {
	Input       float64  `json:"input"`
	Output      float64  `json:"output"`
	CachedInput *float64 `json:"cached_input,omitempty"`
	CacheWrite  *float64 `json:"cache_write,omitempty"`
}

// Resolve fills missing cache rates: cached reads at the full input price (no
// discount is assumed, so the cost is an upper bound rather than a guess),
// cache writes at CacheWriteMultiplier × input.
func (e PriceEntry) Resolve() Price {
	p := Price{Input: e.Input, Output: e.Output, CachedInput: e.Input, CacheWrite: e.Input * CacheWriteMultiplier}
	if e.CachedInput != nil {
		p.CachedInput = *e.CachedInput
	}
	if e.CacheWrite != nil {
		p.CacheWrite = *e.CacheWrite
	}
	return p
}

// Prices is a read-only price table keyed by model name. Lookups tolerate
// provider prefixes ("anthropic/claude-haiku-4-5", "deepinfra/google/…") and
// date suffixes ("claude-haiku-4-5-20251001", "gpt-4o-2024-08-06"), but never
// guess across model families: a model that is not in the table is unknown.
type Prices struct {
	AsOf   string
	Source string
	models map[string]Price
}

//go:embed prices.json
var pricesJSON []byte

var defaultPrices = sync.OnceValues(func() (*Prices, error) { return ParsePrices(pricesJSON) })

// DefaultPrices returns the embedded, dated price table. It panics if the
// embedded file is broken, which a unit test rules out.
func DefaultPrices() *Prices {
	p, err := defaultPrices()
	if err != nil {
		panic(fmt.Sprintf("llm: embedded prices.json: %v", err))
	}
	return p
}

// ParsePrices reads a price table in the prices.json format.
func ParsePrices(data []byte) (*Prices, error) {
	var f struct {
		AsOf   string                `json:"as_of"`
		Source string                `json:"source"`
		Models map[string]PriceEntry `json:"models"`
	}
	if err := json.Unmarshal(data, &f); err != nil {
		return nil, fmt.Errorf("parse price table: %w", err)
	}
	if f.AsOf == "" {
		return nil, errors.New("parse price table: as_of is missing")
	}
	p := &Prices{AsOf: f.AsOf, Source: f.Source, models: make(map[string]Price, len(f.Models))}
	for name, e := range f.Models {
		if e.Input < 0 || e.Output < 0 {
			return nil, fmt.Errorf("parse price table: %s: negative price", name)
		}
		p.models[normModel(name)] = e.Resolve()
	}
	return p, nil
}

// PriceFromConfig converts a price from config.yaml. Zero cache rates mean
// "not given" there and get PriceEntry.Resolve's defaults.
func PriceFromConfig(p config.Price) Price {
	e := PriceEntry{Input: p.Input, Output: p.Output}
	if p.CachedRead != 0 {
		e.CachedInput = &p.CachedRead
	}
	if p.CacheWrite != 0 {
		e.CacheWrite = &p.CacheWrite
	}
	return e.Resolve()
}

// WithOverrides returns a copy of p in which the models of config.yaml's
// pricing: map (model name → price) have the given prices.
func (p *Prices) WithOverrides(overrides map[string]config.Price) *Prices {
	out := &Prices{models: map[string]Price{}}
	if p != nil {
		out.AsOf, out.Source = p.AsOf, p.Source
		maps.Copy(out.models, p.models)
	}
	for name, pr := range overrides {
		out.models[normModel(name)] = PriceFromConfig(pr)
	}
	return out
}

// Lookup finds the price of model.
func (p *Prices) Lookup(model string) (Price, bool) {
	if p == nil {
		return Price{}, false
	}
	for _, k := range priceKeys(model) {
		if pr, ok := p.models[k]; ok {
			return pr, true
		}
	}
	return Price{}, false
}

// Cost prices u for model. A non-nil override (the model's own pricing:
// block in config.yaml) wins over the table. Unknown models give (0, false):
// report them as unknown, never as free.
func (p *Prices) Cost(model string, u Usage, override ...*config.Price) (float64, bool) {
	pr, ok := p.Price(model, override...)
	if !ok {
		return 0, false
	}
	return pr.Cost(u, false), true
}

// Price resolves model's price: a non-nil override first, then the table.
func (p *Prices) Price(model string, override ...*config.Price) (Price, bool) {
	for _, o := range override {
		if o != nil {
			return PriceFromConfig(*o), true
		}
	}
	return p.Lookup(model)
}

var dateSuffix = regexp.MustCompile(`(-\d{8}|-\d{4}-\d{2}-\d{2}|@\d{8}|@latest)$`)

func normModel(s string) string { return strings.ToLower(strings.TrimSpace(s)) }

// priceKeys lists the table keys to try for model, most specific first.
func priceKeys(model string) []string {
	m := normModel(model)
	var keys []string
	add := func(k string) {
		if k != "" {
			keys = append(keys, k)
			if d := dateSuffix.ReplaceAllString(k, ""); d != k {
				keys = append(keys, d)
			}
		}
	}
	for {
		add(m)
		i := strings.IndexByte(m, '/')
		if i < 0 {
			break
		}
		m = m[i+1:]
	}
	// "-latest" aliases (claude-3-5-haiku-latest) last: gpt-5-chat-latest is a
	// model of its own and matched above.
	if s, ok := strings.CutSuffix(m, "-latest"); ok {
		add(s)
	}
	return keys
}

// WithCost fills Usage.Cost and Usage.CostKnown of every response and error
// from c with price. known=false marks the model's price as unknown (cost 0,
// CostKnown false). A usage with no requests is left alone.
func WithCost(c Client, price Price, known bool) Client {
	return &costClient{next: c, price: price, known: known}
}

type costClient struct {
	next  Client
	price Price
	known bool
}

func (c *costClient) fill(u Usage) Usage {
	u.Cost, u.CostKnown, u.CacheSaving = 0, c.known, 0
	if c.known {
		u.Cost = c.price.Cost(u, false)
		u.CacheSaving = c.price.CacheSaving(u, false)
	}
	return u
}

func (c *costClient) Complete(ctx context.Context, req Request) (Response, error) {
	resp, err := c.next.Complete(ctx, req)
	if err != nil {
		var e *Error
		if errors.As(err, &e) && e.Usage.Requests > 0 {
			out := *e
			out.Usage = c.fill(e.Usage)
			return resp, &out
		}
		return resp, err
	}
	if !resp.Cached {
		// A stored answer keeps what it cost when it was made.
		resp.Usage = c.fill(resp.Usage)
	}
	return resp, nil
}
