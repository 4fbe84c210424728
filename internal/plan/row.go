package plan

import (
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/impactbench/impactbench/internal/phase"
)

// How long one batch of a batch wave may take: providers answer most
// within an hour and promise 24 h at most, so an elapsed time is a range.
const (
	WaveFast    = 5 * time.Minute
	WaveTypical = time.Hour
	WaveMax     = 24 * time.Hour
)

// Row is a dry-run estimate for one phase (and target, and model role).
type Row struct {
	Phase        string `json:"phase"`
	Target       string `json:"target,omitempty"`
	Model        string `json:"model"`
	Rows         int    `json:"rows"`
	Calls        int    `json:"calls"`
	InputTokens  int    `json:"input_tokens"`
	OutputTokens int    `json:"output_tokens"`
	// Cost is the phase sent the way config.yaml says (a `batch: true`
	// role's calls at the batch price), with prompt caching as the
	// providers bill it.
	Cost      float64 `json:"cost_usd"`
	CostKnown bool    `json:"cost_known"`
	// CachedInputTokens and CacheWriteTokens are the parts of InputTokens
	// a provider would read from and write to its prompt cache: each call
	// of a conversation reads the previous call's prompt when that reached
	// the model's cache minimum, and writes its own unless it is the last
	// (writes are billed only where they cost extra: Anthropic).
	CachedInputTokens int `json:"cached_input_tokens"`
	CacheWriteTokens  int `json:"cache_write_tokens"`
	// CostList is every call in real time at list prices without caching,
	// CostCached in real time with caching, CostBatch through the
	// provider's batch API with caching (one-hour cache writes on
	// Anthropic), null when the provider has none.
	CostList   float64  `json:"cost_list_usd"`
	CostCached float64  `json:"cost_cached_usd"`
	CostBatch  *float64 `json:"cost_batch_usd"`
	// RowsNow is how many rows would run now: those whose result the call
	// store does not hold under their current inputs (0 when the phase is
	// up to date); CostNow is their share of Cost.
	RowsNow int     `json:"rows_now"`
	CostNow float64 `json:"cost_now_usd"`
	// WallSecs is the phase's expected wall time in real time (see
	// wallEstimate), CallSecs the time one call is assumed to take.
	WallSecs float64 `json:"wall_s"`
	CallSecs float64 `json:"call_s"`
	// Note says when the phase would be skipped (its output is up to date).
	Note string `json:"note,omitempty"`
	// Batch is set on simulate rows sent in batch waves (`batch: true`);
	// Cost is then the batch price.
	Batch *Batch `json:"batch,omitempty"`
	// Unpriced is the model name no price is known for, "" when the row
	// is priced: the key `pricing:` needs, which Model (a target's id)
	// may not show.
	Unpriced string `json:"-"`
}

// UnpricedModels are the model names of rows without a price, sorted,
// each once.
func UnpricedModels(rows []Row) []string {
	var out []string
	for _, r := range rows {
		if !r.CostKnown && r.Unpriced != "" && !slices.Contains(out, r.Unpriced) {
			out = append(out, r.Unpriced)
		}
	}
	slices.Sort(out)
	return out
}

// Batch estimates one target's batch-wave simulation. Each wave waits
// for its batch: providers answer most within an hour and promise 24 h at
// most, so the elapsed time is a range, not a forecast.
type Batch struct {
	Waves     int     `json:"waves"`      // batches one after another: turns × batched roles
	SavingUSD float64 `json:"saving_usd"` // this row's calls at the real-time price minus the batch price
	// Elapsed time of all waves, in hours, if every batch took 5 min,
	// 1 h (typical) or 24 h (the providers' limit).
	ElapsedFastHours    float64 `json:"elapsed_fast_hours"`
	ElapsedTypicalHours float64 `json:"elapsed_typical_hours"`
	ElapsedMaxHours     float64 `json:"elapsed_max_hours"`
}

// Plus adds another benchmark's estimate of the same phase, target and
// model. Benchmarks run at once, so the wall time is the longer one.
func (p Row) Plus(o Row) Row {
	p.Rows, p.Calls, p.RowsNow = p.Rows+o.Rows, p.Calls+o.Calls, p.RowsNow+o.RowsNow
	p.InputTokens, p.OutputTokens = p.InputTokens+o.InputTokens, p.OutputTokens+o.OutputTokens
	p.CachedInputTokens, p.CacheWriteTokens = p.CachedInputTokens+o.CachedInputTokens, p.CacheWriteTokens+o.CacheWriteTokens
	p.Cost, p.CostList, p.CostCached, p.CostNow = p.Cost+o.Cost, p.CostList+o.CostList, p.CostCached+o.CostCached, p.CostNow+o.CostNow
	p.CostKnown = p.CostKnown && o.CostKnown
	if p.Unpriced == "" {
		p.Unpriced = o.Unpriced
	}
	p.WallSecs = max(p.WallSecs, o.WallSecs)
	if p.CostBatch != nil && o.CostBatch != nil {
		b := *p.CostBatch + *o.CostBatch
		p.CostBatch = &b
	} else {
		p.CostBatch = nil
	}
	if p.Note != o.Note {
		p.Note = "skip in some benchmarks"
	}
	if o.Batch != nil && p.Batch != nil {
		b := *p.Batch
		b.SavingUSD += o.Batch.SavingUSD
		p.Batch = &b
	}
	return p
}

// Rank is a plan row's stage, for ordering (9 for none).
func Rank(p Row) int {
	for _, st := range []phase.Stage{phase.StageGenMetrics, phase.StageGenScenarios, phase.StageSimulate, phase.StageEvaluate} {
		if p.Phase == st.String() || strings.HasPrefix(p.Phase, st.String()+" ") {
			return int(st)
		}
	}
	return 9
}

// Total is a plan's bill: a fresh run as configured (with prompt
// caching), in real time at list prices without caching, in real time
// with caching, through the batch APIs where the providers have them, and
// what would run now (rows whose results are not stored).
type Total struct {
	Calls        int     `json:"calls"`
	InputTokens  int     `json:"input_tokens"`
	OutputTokens int     `json:"output_tokens"`
	ConfigUSD    float64 `json:"configured_usd"`
	ListUSD      float64 `json:"list_usd"`
	CachedUSD    float64 `json:"cached_usd"`
	BatchUSD     float64 `json:"batch_usd"`
	NowUSD       float64 `json:"now_usd"`
	// Known is false when some model's price is unknown: the sums are
	// then lower bounds.
	Known bool `json:"known"`
}

// TotalOf adds up a plan.
func TotalOf(plan []Row) Total {
	t := Total{Known: true}
	for _, p := range plan {
		t.Calls, t.InputTokens, t.OutputTokens = t.Calls+p.Calls, t.InputTokens+p.InputTokens, t.OutputTokens+p.OutputTokens
		t.ConfigUSD += p.Cost
		t.ListUSD += p.CostList
		t.CachedUSD += p.CostCached
		if p.CostBatch != nil {
			t.BatchUSD += *p.CostBatch
		} else {
			t.BatchUSD += p.CostCached
		}
		t.NowUSD += p.CostNow
		t.Known = t.Known && p.CostKnown
	}
	return t
}

// PhaseBill is one phase's line of the bill.
type PhaseBill struct {
	Name                     string
	List, Cached, Batch, Cfg float64
	Wall                     float64 // real time, seconds
	Waves                    int     // batch turnarounds one after another with every batchable role batched
}

// BillByPhase adds the plan's rows up per stage, in stage order.
func BillByPhase(plan []Row, turns int) []PhaseBill {
	var out []PhaseBill
	idx := map[int]int{}
	waves := map[int]map[string]int{} // stage → target → waves
	for _, p := range plan {
		rank := Rank(p)
		i, ok := idx[rank]
		if !ok {
			idx[rank], i = len(out), len(out)
			name, _, _ := strings.Cut(p.Phase, " (")
			out = append(out, PhaseBill{Name: name})
			waves[rank] = map[string]int{}
		}
		b := &out[i]
		b.List, b.Cached, b.Cfg = b.List+p.CostList, b.Cached+p.CostCached, b.Cfg+p.Cost
		b.Wall = max(b.Wall, p.WallSecs)
		if p.CostBatch == nil {
			b.Batch += p.CostCached
			continue
		}
		b.Batch += *p.CostBatch
		switch phase.Stage(rank) {
		case phase.StageSimulate:
			waves[rank][p.Target] += turns // this role batched: a wave per turn
		case phase.StageEvaluate:
			waves[rank][p.Target] = 1
		}
	}
	for rank, i := range idx {
		for _, n := range waves[rank] {
			out[i].Waves = max(out[i].Waves, n)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return idx[i] < idx[j] })
	return out
}
