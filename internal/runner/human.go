package runner

import (
	"context"
	"fmt"
	"os"
	"sync"

	"github.com/impactbench/impactbench/internal/artifacts"
	"github.com/impactbench/impactbench/internal/clientset"
	"github.com/impactbench/impactbench/internal/config"
	"github.com/impactbench/impactbench/internal/evaluate"
	"github.com/impactbench/impactbench/internal/fault"
	"github.com/impactbench/impactbench/internal/human"
	"github.com/impactbench/impactbench/internal/layout"
	"github.com/impactbench/impactbench/internal/llm"
	"github.com/impactbench/impactbench/internal/stages"
	"github.com/impactbench/impactbench/internal/work"
)

// Player is the runner's side of the viewer's Play page, where a person
// plays the simulated user: the target's replies and the judges' verdict
// come from the same clients, pools, prompts and call store as a run's.
// It holds no lock: a person may play while a run goes on. Every call goes
// to a call-store unit of its own (<target>/human/<conv_id> for the
// target's replies, <target>/human-eval/<conv_id> for verdicts), never a
// phase's output, and sweeps nothing.
//
// config.yaml is read again when it changes, so a target added while the
// viewer runs can be played at once; the new environment keeps the old
// one's cost ceiling, rate limits and HTTP client, so those span the
// Player's lifetime whatever the file says meanwhile.
type Player struct {
	mu    sync.Mutex
	e     *work.Env
	stamp string // config.yaml's size and modification time when e was made
}

// NewPlayer returns a Player over cfg. It calls nothing until asked.
func NewPlayer(cfg *config.Config, opts Options) (*Player, error) {
	opts.Force, opts.AcceptFewer, opts.DryRun, opts.Judges, opts.OutDir = false, false, false, nil, ""
	// People's games are played on this machine, alone: no shared limit
	// to connect to (so nothing here blocks), their own units in the
	// project's store.
	opts.RateBackend, opts.Store, opts.Workers = "", "", 0
	e, err := work.NewEnv(context.Background(), cfg, opts)
	if err != nil {
		return nil, err
	}
	return &Player{e: e, stamp: fileStamp(cfg.Path)}, nil
}

// env is the environment of config.yaml as it is now. A file that no
// longer loads keeps the last good one (and says so in the log).
func (p *Player) env() *work.Env {
	p.mu.Lock()
	defer p.mu.Unlock()
	st := fileStamp(p.e.Cfg.Path)
	if st == p.stamp || st == "" {
		return p.e
	}
	p.stamp = st
	cfg, err := config.LoadWithOptions(p.e.Cfg.Path, config.LoadOptions{AllowMissingEnv: true})
	if err != nil {
		p.e.Log.Warn("play: config.yaml changed but does not load; playing with the last good one", "err", err)
		return p.e
	}
	ne, err := p.e.Reconfigured(cfg)
	if err != nil {
		p.e.Log.Warn("play: config.yaml changed but cannot be used; playing with the last good one", "err", err)
		return p.e
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

// Targets lists the targets a person can play against, in config order.
func (p *Player) Targets() []string {
	cfg := p.env().Cfg
	out := make([]string, len(cfg.Targets))
	for i, t := range cfg.Targets {
		out[i] = t.ID
	}
	return out
}

// Turns is the most user turns a conversation has (generation.turns).
func (p *Player) Turns() int { return p.env().Cfg.Generation.Turns }

// bench loads benchDir's benchmark over p's environment — afresh each
// time, since gen_metrics may rewrite its metrics while the viewer runs.
func (p *Player) bench(benchDir string) (*work.Bench, error) { return p.env().Peek(benchDir) }

// TargetTurn is target's reply to the dialogue a person is playing in
// scenario sc (their conversation number sample; see human.ConvID): the
// request a simulated conversation's turn sends (stages.TargetReply), made
// through the call store unit of that conversation.
func (p *Player) TargetTurn(ctx context.Context, benchDir, target string, sc artifacts.Scenario, sample int, transcript []artifacts.Turn) (artifacts.Turn, bool, llm.Usage, error) {
	b, err := p.bench(benchDir)
	if err != nil {
		return artifacts.Turn{}, false, llm.Usage{}, err
	}
	m, err := b.TargetConfig(target)
	if err != nil {
		return artifacts.Turn{}, false, llm.Usage{}, err
	}
	field, _ := b.Cfg.TargetField(target)
	c, err := b.Models.Model(field, m)
	if err != nil {
		return artifacts.Turn{}, false, llm.Usage{}, err
	}
	u, err := b.Store.Unit(layout.HumanUnit(target, human.ConvID(sc.ID, target, sample)))
	if err != nil {
		return artifacts.Turn{}, false, llm.Usage{}, err
	}
	defer u.Close()
	// The unit keeps its journal of calls and never a result: each turn is
	// a new execution of it, and a result would prune the earlier turns'.
	spec := stages.SimSpec{Bench: b.Spec, Scenario: sc, TargetID: target, TargetModel: m.Model, Sample: sample,
		Turns: b.Cfg.Generation.Turns, Seed: b.Cfg.Seed, TargetTemperature: m.Temperature}
	return stages.TargetReply(ctx, u.Client(clientset.Identity(m), c), spec, transcript)
}

// JudgeHuman judges a conversation a person played as every conversation
// is judged (evaluate.JudgeOne: the same judges, prompt, evidence checks
// and seeds), stored in the call store unit <target>/human-eval/<conv_id>
// and replayed from it when asked again. The judges see the metric and
// the transcript only, so they are not told a person played.
func (p *Player) JudgeHuman(ctx context.Context, benchDir, target string, conv artifacts.Conversation) (artifacts.Score, error) {
	b, err := p.bench(benchDir)
	if err != nil {
		return artifacts.Score{}, err
	}
	if _, err := b.TargetConfig(target); err != nil {
		return artifacts.Score{}, err
	}
	if _, ok := b.Spec.MetricByID(conv.MetricID); !ok {
		return artifacts.Score{}, fault.Inputf("metric %q of %s is not in %s", conv.MetricID, conv.ConvID, b.Spec.Path)
	}
	return evaluate.JudgeOne(ctx, b, target, layout.HumanEvalUnit(target, conv.ConvID), conv)
}

// AuditHuman audits the person's side of a conversation they played, as a
// simulated user's conversation is audited when it ends (the audit model
// of validity.audit asked stages.AuditConversation's questions: in
// persona, goal pursued, landmarks followed, test kept hidden), stored in
// the call store unit <target>/human-audit/<conv_id> and replayed from it
// when asked again. The turn checks already held every message; the
// result's Checks is "turns+audit". nil when the audit is off.
func (p *Player) AuditHuman(ctx context.Context, benchDir, target string, sc artifacts.Scenario, conv artifacts.Conversation) (*artifacts.Validity, llm.Usage, error) {
	b, err := p.bench(benchDir)
	if err != nil {
		return nil, llm.Usage{}, err
	}
	m, field, ok := b.AuditModel()
	if !ok {
		return nil, llm.Usage{}, nil
	}
	c, err := b.Models.Model(field, m)
	if err != nil {
		return nil, llm.Usage{}, err
	}
	u, err := b.Store.Unit(layout.HumanAuditUnit(target, conv.ConvID))
	if err != nil {
		return nil, llm.Usage{}, err
	}
	defer u.Close()
	v, usage, err := stages.AuditConversation(ctx, u.Client(clientset.Identity(m), c), b.Prompts, sc, conv, work.JudgeLabel(m))
	if err != nil {
		return nil, usage, err
	}
	v.Checks = "turns+audit"
	return &v, usage, nil
}
