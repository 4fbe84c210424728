package runner

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"

	"github.com/impactbench/impactbench/internal/artifacts"
	"github.com/impactbench/impactbench/internal/callstore"
	"github.com/impactbench/impactbench/internal/config"
	"github.com/impactbench/impactbench/internal/human"
	"github.com/impactbench/impactbench/internal/llm"
	"github.com/impactbench/impactbench/internal/results"
	"github.com/impactbench/impactbench/internal/stages"
)

// Player is the runner's side of the viewer's Play page, where a person
// plays the user against a target. The target's replies and the verdicts
// are made through the environment a run uses — one client per model
// (provider.New, with its limits, retries and redaction of secrets), the
// cost ceiling of this Player's lifetime, and the call store, so a reply
// or verdict asked for again is answered from it instead of paid twice.
//
// A Player opens a benchmark without its lock, since a person may play
// while a run of the benchmark goes on: it writes only call-store units
// of its own (<target>/human/<conv_id> for the target's replies,
// <target>/human-eval/<conv_id> for verdicts), never a phase's output,
// and sweeps nothing.
//
// config.yaml is read again when it changes, so a target added while the
// viewer runs can be played at once; the new environment keeps the old
// one's cost ceiling, rate limits and HTTP client, so those span the
// Player's lifetime whatever the file says meanwhile.
type Player struct {
	mu    sync.Mutex
	e     *env
	opts  Options
	stamp string // config.yaml's size and modification time when e was made
}

// NewPlayer returns a Player over cfg. It calls nothing until asked.
func NewPlayer(cfg *config.Config, opts Options) (*Player, error) {
	opts.Force, opts.DryRun, opts.Judges, opts.OutDir = false, false, nil, ""
	e, err := newEnv(cfg, opts)
	if err != nil {
		return nil, err
	}
	return &Player{e: e, opts: opts, stamp: fileStamp(cfg.Path)}, nil
}

// env is the environment of config.yaml as it is now. A file that no
// longer loads keeps the last good one (and says so in the log).
func (p *Player) env() *env {
	p.mu.Lock()
	defer p.mu.Unlock()
	st := fileStamp(p.e.cfg.Path)
	if st == p.stamp || st == "" {
		return p.e
	}
	p.stamp = st
	cfg, err := config.LoadWithOptions(p.e.cfg.Path, config.LoadOptions{AllowMissingEnv: true})
	if err != nil {
		p.e.log.Warn("play: config.yaml changed but does not load; playing with the last good one", "err", err)
		return p.e
	}
	ne, err := newEnv(cfg, p.opts)
	if err != nil {
		p.e.log.Warn("play: config.yaml changed but cannot be used; playing with the last good one", "err", err)
		return p.e
	}
	ne.http, ne.limits = p.e.http, p.e.limits
	if p.e.budget != nil {
		ne.budget = p.e.budget
	}
	p.e = ne
	return ne
}

// fileStamp is a file's size and modification time ("" when it cannot be
// read).
func fileStamp(path string) string {
	st, err := os.Stat(path)
	if err != nil {
		return ""
	}
	return fmt.Sprintf("%d:%d", st.Size(), st.ModTime().UnixNano())
}

// Targets lists the targets a person can play against, in config order
// (config.yaml as it is now).
func (p *Player) Targets() []string {
	e := p.env()
	out := make([]string, len(e.cfg.Targets))
	for i, t := range e.cfg.Targets {
		out[i] = t.ID
	}
	return out
}

// Turns is the most user turns a conversation has (generation.turns).
func (p *Player) Turns() int { return p.env().cfg.Generation.Turns }

// bench loads benchDir's benchmark over p's environment — afresh each
// time, since gen_metrics may rewrite its metrics while the viewer runs.
func (p *Player) bench(benchDir string) (*Runner, error) {
	bench, err := config.LoadBenchmark(filepath.Join(benchDir, "benchmark.yaml"))
	if err != nil {
		return nil, err
	}
	e := p.env()
	cacheDir := CacheDir(e.cfg, bench.Dir)
	return &Runner{env: e, bench: bench, outDir: benchDir, cacheDir: cacheDir,
		store: callstore.Open(filepath.Join(cacheDir, "calls"), false), rows: newRowSets(),
		Report: &Summary{Benchmark: bench.Slug}}, nil
}

// TargetTurn is target's reply to the dialogue a person is playing in
// scenario sc (their conversation number sample; see human.ConvID): the
// request a simulated conversation's turn sends (stages.TargetReply), made
// through the call store unit of that conversation.
func (p *Player) TargetTurn(ctx context.Context, benchDir, target string, sc artifacts.Scenario, sample int, transcript []artifacts.Turn) (artifacts.Turn, bool, llm.Usage, error) {
	r, err := p.bench(benchDir)
	if err != nil {
		return artifacts.Turn{}, false, llm.Usage{}, err
	}
	m, err := r.targetConfig(target)
	if err != nil {
		return artifacts.Turn{}, false, llm.Usage{}, err
	}
	field, _ := r.cfg.TargetField(target)
	c, err := r.modelClient(field, m)
	if err != nil {
		return artifacts.Turn{}, false, llm.Usage{}, err
	}
	u, err := r.store.Unit(humanUnit(target, "human", human.ConvID(sc.ID, target, sample)))
	if err != nil {
		return artifacts.Turn{}, false, llm.Usage{}, err
	}
	defer u.Close()
	// The unit keeps its journal of calls and never a result: each turn is
	// a new execution of it, and a result would prune the earlier turns'.
	spec := stages.SimSpec{Bench: r.bench, Scenario: sc, TargetID: target, TargetModel: m.Model, Sample: sample,
		Turns: r.cfg.Generation.Turns, Seed: r.cfg.Seed, TargetTemperature: m.Temperature}
	return stages.TargetReply(ctx, u.Client(identity(m), c), spec, transcript)
}

// JudgeHuman judges a conversation a person played as every conversation
// is judged: the verdict row of the judge panel (judgeTarget.verdict: the
// same judges, prompt, evidence checks and seeds), stored in the call
// store unit <target>/human-eval/<conv_id> and replayed from it when asked
// again. The judges see the metric and the transcript only, so they are
// not told a person played.
func (p *Player) JudgeHuman(ctx context.Context, benchDir, target string, conv artifacts.Conversation) (artifacts.Score, error) {
	r, err := p.bench(benchDir)
	if err != nil {
		return artifacts.Score{}, err
	}
	if _, err := r.targetConfig(target); err != nil {
		return artifacts.Score{}, err
	}
	if _, ok := r.bench.MetricByID(conv.MetricID); !ok {
		return artifacts.Score{}, &InputError{Msg: fmt.Sprintf("metric %q of %s is not in %s", conv.MetricID, conv.ConvID, r.bench.Path)}
	}
	j := &judgeTarget{r: r, target: target, stage: StageEvaluate, judges: r.judges(), seed: r.cfg.Seed, callCtx: ctx}
	if err := j.openSeats(); err != nil {
		return artifacts.Score{}, err
	}
	in := r.evalInputs("")
	j.rowKeyBase = fingerprint(in["metrics"], in["judges"], in["options"], in["prompts"])
	u, err := r.store.Unit(humanUnit(target, "human-eval", conv.ConvID))
	if err != nil {
		return artifacts.Score{}, err
	}
	defer u.Close()
	key := j.rowKey(&conv)
	var score artifacts.Score
	if u.Result(key, &score) {
		return score, nil
	}
	score, usage, err := j.verdict(u, conv)
	if err != nil {
		return artifacts.Score{}, err
	}
	if err := j.keepScore(u, key, score, usage); err != nil {
		return artifacts.Score{}, err
	}
	u.Result(key, &score) // as stored: with its usage
	return score, nil
}

func humanUnit(target, dir, convID string) string {
	return safeName(target) + "/" + dir + "/" + safeName(convID)
}

// humanInput reads the verdicts on conversations people played
// (runs/<target>/human/scores.json of each run directory) for aggregate's
// human_comparison. A damaged file is an input error naming it.
func humanInput(runDirs []string) ([]results.ScoreRow, error) {
	var out []results.ScoreRow
	for _, d := range runDirs {
		target := filepath.Base(d)
		scores, err := human.ReadScores(filepath.Join(human.Dir(d), human.ScoresFile), target)
		if err != nil {
			return nil, err
		}
		for _, s := range scores {
			out = append(out, results.RowOf(s.Score))
		}
	}
	return out, nil
}
