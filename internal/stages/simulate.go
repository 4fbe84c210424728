package stages

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/impactbench/impactbench/internal/artifacts"
	"github.com/impactbench/impactbench/internal/config"
	"github.com/impactbench/impactbench/internal/llm"
	"github.com/impactbench/impactbench/internal/prompts"
	"github.com/impactbench/impactbench/internal/stages/userreply"
)

// DefaultTargetSystemPrompt is the target's system prompt when neither the
// scenario nor the benchmark sets one.
const DefaultTargetSystemPrompt = "You are a helpful assistant."

// SimSpec describes one conversation.
type SimSpec struct {
	Bench       *config.Benchmark
	Scenario    artifacts.Scenario
	Metric      config.Metric // the scenario's metric (the runner errors out before calling if it is missing)
	TargetID    string
	TargetModel string // provider model string, recorded in RunInfo
	UserModel   string
	Sample      int
	Turns       int
	Landmarks   bool
	Perfunctory bool
	Seed        uint64 // master seed; mixed with scenario id, target id and sample for per-conversation seeds

	// UserTemperature and TargetTemperature are the models' configured
	// temperatures (nil: provider default), recorded in the run block. The
	// clients already apply them; Simulate does not send them itself.
	UserTemperature   *float64
	TargetTemperature *float64

	// UserMaxTokens and TargetMaxTokens cap each call's output (0: 2048).
	UserMaxTokens   int
	TargetMaxTokens int

	// TurnChecks runs CheckUserReply on every reply of the simulated user
	// before it is sent: a reply that fails is asked again, at most Reasks
	// times, and then ends the conversation as invalid (never sent).
	// Without it, a reply with no message is asked again once and then
	// fails the conversation (upstream's reading of a reply, plus that).
	TurnChecks bool
	Reasks     int
	// Redo numbers the attempt at this conversation (0: the first); a redo
	// mixes it into the conversation's seed, so every call is new.
	Redo int
	// SharedOpening seeds the simulated user's first turn (its calls and
	// the perturbation of its message) from the scenario, sample and
	// master seed only, not the target: every target of a row is then
	// sent the same opening, which the caller may ask for once (a paired
	// comparison, and one first turn paid instead of one per target).
	// Off, the first turn is seeded like the others, by target too
	// (upstream's way, and this program's before the option).
	SharedOpening bool
}

// Simulate runs one conversation between the simulated user and the target.
//
// Each turn: the user model writes a reply, userreply.Parse extracts the
// message and, with TurnChecks, CheckUserReply vets it (a failing reply is
// asked again, at most Reasks times, every rejection recorded in
// Fidelity.Reasks; still failing, the conversation ends with status
// invalid and the reply is never sent); "terminate conversation" ends the
// dialogue before any target call (status user_terminated); otherwise the
// message (perturbed when Perfunctory, seeded per conversation and turn)
// goes to the target, whose reply closes the turn. Running all turns gives
// status completed. Converse adds the audit and the redos.
//
// A provider failure does not return an error: the conversation comes back
// with status error, the reason, and the transcript of the completed turns. A non-nil error
// is returned only when going on makes no sense: ctx cancelled, the cost
// ceiling reached (llm.ErrBudgetExceeded; status budget), a setup error
// that would fail every conversation alike (auth, quota, config kinds), or
// a prompt template that does not render. The conversation is returned in
// every case. Usage sums every call, failed ones included.
//
// The target sees only its system prompt and the dialogue. The user model
// sees its system prompt (persona, goals, metric, and with landmarks off
// the whole plan) and the dialogue with roles mirrored: its own earlier
// messages as assistant turns, each target reply inside the next user-role
// turn prompt. See userAsk.run for why.
func Simulate(ctx context.Context, user, target llm.Client, p *prompts.Set, spec SimSpec) (artifacts.Conversation, error) {
	conv, _, err := simulate(ctx, user, target, p, spec)
	return conv, err
}

// simUsage is an attempt's usage, unrounded: all its calls', and the
// simulated user's part.
type simUsage struct{ all, user llm.Usage }

// simulate is Simulate, also returning the usage unrounded (Converse sums
// the attempts it makes).
func simulate(ctx context.Context, user, target llm.Client, p *prompts.Set, spec SimSpec) (artifacts.Conversation, simUsage, error) {
	s := newSimRun(user, target, p, spec)
	if spec.Turns <= 0 {
		return s.end(simEnd{artifacts.StatusError, "turns must be > 0", fmt.Errorf("simulate %s: turns must be > 0, got %d", s.conv.ConvID, spec.Turns)})
	}
	sysPrompt, err := p.Render(prompts.UserSystem, userSystemData(spec))
	if err != nil {
		return s.end(simEnd{artifacts.StatusError, err.Error(), fmt.Errorf("simulate %s: %w", s.conv.ConvID, err)})
	}
	s.userMsgs = []llm.Message{{Role: llm.RoleSystem, Content: sysPrompt}}
	for turn := 1; turn <= spec.Turns; turn++ {
		if e := s.turn(ctx, turn); e != nil {
			return s.end(*e)
		}
	}
	return s.end(simEnd{status: artifacts.StatusCompleted})
}

// simRun is one attempt at a conversation being made.
type simRun struct {
	user, target llm.Client
	p            *prompts.Set
	spec         SimSpec
	convSeed     uint64
	openSeed     uint64 // the first turn's user seed (convSeed unless SharedOpening)
	targetSys    string
	byTurn       map[int]string

	conv                   artifacts.Conversation
	usage, userUsage       llm.Usage // every call's; the simulated user's
	userSeeds, targetSeeds seedLog
	thoughts               []string    // the user's hidden reasoning, one per user message
	userRepairs            []msgRepair // what was repaired to read the user's messages
	rejected               []artifacts.Reask
	userMsgs               []llm.Message // the user model's history
	lastReply, lastMsg     string        // the target's last reply; the user's last message as written
}

// simEnd is how a conversation ends.
type simEnd struct {
	status, reason string
	err            error
}

func newSimRun(user, target llm.Client, p *prompts.Set, spec SimSpec) *simRun {
	sc := spec.Scenario
	metricID := sc.MetricID
	if metricID == "" {
		metricID = spec.Metric.ID
	}
	convSeed := seedOf(spec.Seed, "conversation", sc.ID, spec.TargetID, itoa(spec.Sample))
	openSeed := convSeed
	if spec.SharedOpening {
		openSeed = seedOf(spec.Seed, "opening", sc.ID, itoa(spec.Sample))
	}
	if spec.Redo > 0 {
		convSeed = seedOf(convSeed, "redo", itoa(spec.Redo))
		openSeed = seedOf(openSeed, "redo", itoa(spec.Redo))
	}
	return &simRun{user: user, target: target, p: p, spec: spec, convSeed: convSeed, openSeed: openSeed,
		targetSys: targetSystemPrompt(spec), byTurn: landmarksByTurn(sc.Landmarks),
		conv: artifacts.Conversation{
			ID:          sc.ID,
			MetricID:    metricID,
			ConvID:      artifacts.ConvID(sc.ID, spec.TargetID, spec.Sample),
			Sample:      spec.Sample,
			TargetModel: spec.TargetID,
			Transcript:  []artifacts.Turn{},
			Run: &artifacts.RunInfo{
				UserModel:   spec.UserModel,
				TargetModel: spec.TargetModel,
				Turns:       spec.Turns,
				Landmarks:   spec.Landmarks,
				Perfunctory: spec.Perfunctory,
				Seed:        spec.Seed,

				UserTemperature:   artifacts.TemperatureOf(spec.UserTemperature),
				TargetTemperature: artifacts.TemperatureOf(spec.TargetTemperature),
			},
		}}
}

// end finishes the conversation as e says.
func (s *simRun) end(e simEnd) (artifacts.Conversation, simUsage, error) {
	conv := s.conv
	conv.Status, conv.StatusReason = e.status, e.reason
	if slices.ContainsFunc(s.thoughts, func(t string) bool { return t != "" }) {
		conv.UserThoughts = s.thoughts
	}
	for _, r := range s.userRepairs {
		if r.index < len(conv.Transcript) { // not a message dropped unanswered
			conv.Repairs = append(conv.Repairs, fmt.Sprintf("message %d: %s", r.index, r.what))
		}
	}
	if len(s.rejected) > 0 {
		conv.Fidelity = &artifacts.Fidelity{Reasks: s.rejected}
	}
	conv.Usage = artifacts.UsageFrom(s.usage)
	conv.UserUsage = usageRecord(s.userUsage)
	conv.Run.UserSeeds = s.userSeeds.record()
	conv.Run.TargetSeeds = s.targetSeeds.record()
	return conv, simUsage{s.usage, s.userUsage}, e.err
}

// usageRecord is u on disk, or nil when u made no request.
func usageRecord(u llm.Usage) *artifacts.UsageRecord {
	if u.Requests == 0 {
		return nil
	}
	r := artifacts.UsageFrom(u)
	return &r
}

// fail turns a call error into the conversation's end.
func (s *simRun) fail(ctx context.Context, who string, turn int, err error) *simEnd {
	reason := fmt.Sprintf("%s, turn %d: %v", who, turn, err)
	switch {
	case errors.Is(err, llm.ErrBudgetExceeded):
		return &simEnd{artifacts.StatusBudget, reason, err}
	case fatal(ctx, err):
		return &simEnd{artifacts.StatusError, reason, fmt.Errorf("simulate %s: %w", s.conv.ConvID, err)}
	}
	return &simEnd{artifacts.StatusError, reason, nil}
}

// turn runs one turn: the user's message, then the target's reply. It
// returns how the conversation ended, or nil to go on.
func (s *simRun) turn(ctx context.Context, turn int) *simEnd {
	turnPrompt, err := s.turnPrompt(turn)
	if err != nil {
		return &simEnd{artifacts.StatusError, err.Error(), fmt.Errorf("simulate %s: %w", s.conv.ConvID, err)}
	}
	s.userMsgs = append(s.userMsgs, llm.Message{Role: llm.RoleUser, Content: turnPrompt})
	userSeed := s.convSeed
	if turn == 1 {
		userSeed = s.openSeed
	}
	ask := userAsk{c: s.user, p: s.p, spec: s.spec, msgs: s.userMsgs, turn: turn, landmark: s.byTurn[turn], convSeed: userSeed, seeds: &s.userSeeds,
		tc: TurnContext{Previous: s.lastMsg, LatentGoal: s.spec.Scenario.LatentAdversarialGoal, First: turn == 1}}
	reply, problem, err := ask.run(ctx)
	s.usage, s.userUsage = s.usage.Add(ask.usage), s.userUsage.Add(ask.usage)
	s.rejected = append(s.rejected, ask.rejected...)
	switch {
	case err != nil:
		return s.fail(ctx, "user model", turn, err)
	case problem != nil:
		return &simEnd{status: artifacts.StatusInvalid, reason: fmt.Sprintf("turn %d: %d of the simulated user's replies were rejected and none was sent; the last failed the %s check: %s",
			turn, len(ask.rejected), problem.Check, problem.Detail)}
	case reply.terminate:
		return &simEnd{status: artifacts.StatusUserTerminated, reason: fmt.Sprintf("the simulated user ended the conversation at turn %d", turn)}
	}
	s.lastMsg = reply.msg
	msg := reply.msg
	if s.spec.Perfunctory {
		msg = userreply.Perturb(msg, seedOf(userSeed, "perturb", itoa(turn)))
	}
	if reply.truncated {
		s.conv.Truncated = append(s.conv.Truncated, len(s.conv.Transcript))
	}
	s.conv.Transcript = append(s.conv.Transcript, artifacts.Turn{Role: string(llm.RoleUser), Content: msg})
	s.thoughts = append(s.thoughts, reply.thought)
	for _, r := range reply.repairs {
		s.userRepairs = append(s.userRepairs, msgRepair{len(s.conv.Transcript) - 1, r})
	}
	// The user model sees what was actually sent (after noise), labelled
	// like its own output format so it keeps to that format.
	s.userMsgs = append(s.userMsgs, llm.Message{Role: llm.RoleAssistant, Content: "Message: " + msg})
	return s.reply(ctx, turn)
}

// turnPrompt is the user model's prompt for a turn.
func (s *simRun) turnPrompt(turn int) (string, error) {
	td := prompts.UserTurnData{Turn: turn, Turns: s.spec.Turns, Landmarks: s.spec.Landmarks}
	if turn > 1 {
		// The target's reply is model text: it reaches the user model
		// only inside a JSON message object.
		td.ReplyJSON = prompts.EncodeMessage(artifacts.Turn{Role: string(llm.RoleAssistant), Content: s.lastReply})
	}
	if s.spec.Landmarks {
		td.Instruction = s.byTurn[turn]
	}
	name := prompts.UserTurnFirst
	if turn > 1 {
		name = prompts.UserTurnNext
	}
	return s.p.Render(name, td)
}

// reply asks the target to answer the dialogue so far.
func (s *simRun) reply(ctx context.Context, turn int) *simEnd {
	resp, u, err := targetTurn(ctx, s.target, s.spec, targetMessages(s.targetSys, prompts.MarkRefused(s.conv.Transcript, s.conv.Refused)), turn, s.convSeed, &s.targetSeeds)
	s.usage = s.usage.Add(u)
	if err != nil {
		// Drop the unanswered user message: transcripts stay
		// user/assistant pairs, as every reader of them expects.
		s.conv.Transcript = s.conv.Transcript[:len(s.conv.Transcript)-1]
		s.thoughts = s.thoughts[:len(s.thoughts)-1]
		if n := len(s.conv.Truncated); n > 0 && s.conv.Truncated[n-1] == len(s.conv.Transcript) {
			s.conv.Truncated = s.conv.Truncated[:n-1]
		}
		return s.fail(ctx, "target model", turn, err)
	}
	if resp.Truncated {
		s.conv.Truncated = append(s.conv.Truncated, len(s.conv.Transcript))
	}
	s.lastReply = resp.Text
	if resp.Refused {
		// The provider's safety stop is the target's answer: the
		// conversation goes on and the simulated user answers it.
		s.conv.Refused = append(s.conv.Refused, len(s.conv.Transcript))
		if strings.TrimSpace(resp.Text) == "" {
			s.lastReply = prompts.RefusedNote
		}
	}
	s.conv.Transcript = append(s.conv.Transcript, artifacts.Turn{Role: string(llm.RoleAssistant), Content: resp.Text})
	return nil
}

// userAsk is one turn's request to the simulated user, and what asking
// cost and rejected.
type userAsk struct {
	c        llm.Client
	p        *prompts.Set
	spec     SimSpec
	msgs     []llm.Message // the user model's history, ending in the turn prompt
	turn     int
	landmark string
	convSeed uint64
	seeds    *seedLog
	tc       TurnContext

	usage    llm.Usage
	rejected []artifacts.Reask
}

// userReply is a reply of the simulated user that may be sent.
type userReply struct {
	msg, thought string
	terminate    bool
	// truncated: the reply was cut at llm.MaxReplyBytes (the message and
	// thought are parts of what was kept).
	truncated bool
	// repairs: what userreply.ParseRepairs repaired to read msg.
	repairs []string
}

// msgRepair is one repair of the user message at a transcript index.
type msgRepair struct {
	index int
	what  string
}

// run asks the user model for its next message. Without turn checks, a
// reply with no usable message is asked for once more with another seed
// before it counts as a failure: sending an empty message to the target
// would be meaningless (and rejected by some providers). With them, every
// reply is checked (CheckUserReply) and one that fails is asked again,
// saying what was wrong, at most spec.Reasks times; the last problem is
// returned when none passed. Every reply counts towards the bound, stored
// ones included, so a resumed run reaches the same end.
//
// Role layout (why the roles are mirrored): the user model is itself a chat
// model that must answer as the "assistant" of its own request. So its
// history is [system prompt, user: turn-1 prompt, assistant: "Message: <its
// message 1>", user: turn-2 prompt carrying the target's reply 1, …, user:
// turn-k prompt]. This alternates strictly and starts with a user turn, as
// Anthropic and Gemini require, and always ends with the turn prompt.
// Upstream instead sent the simulated user's messages as "user" and then
// appended the turn prompt as another "user" message, producing consecutive
// user turns and asking the model to continue a dialogue from the wrong
// side. The history is append-only, so every request's prefix is the
// previous request (the cache plan) and provider prompt caches hit each turn.
func (a *userAsk) run(ctx context.Context) (userReply, *TurnProblem, error) {
	budget := llm.Attempts{Max: 2}
	var problem *TurnProblem
	var lastRaw string
	for attempt := 0; ; attempt++ {
		msgs := a.msgs
		if problem != nil {
			var err error
			if msgs, err = a.again(problem, lastRaw); err != nil {
				return userReply{}, nil, err
			}
		}
		resp, err := a.ask(ctx, msgs, attempt)
		if err != nil {
			return userReply{}, nil, err
		}
		msg, terminate, repairs := userreply.ParseRepairs(resp.Text)
		reply := userReply{msg: msg, thought: userreply.Thought(resp.Text), terminate: terminate, truncated: resp.Truncated, repairs: repairs}
		if !a.spec.TurnChecks {
			if terminate || msg != "" {
				return reply, nil, nil
			}
			if !budget.Another(resp) {
				return userReply{}, nil, errors.New("the reply contained no message")
			}
			continue
		}
		if problem = CheckUserReply(resp.Text, msg, terminate, a.tc); problem == nil {
			return reply, nil, nil
		}
		a.rejected = append(a.rejected, artifacts.Reask{Redo: a.spec.Redo, Turn: a.turn, Attempt: attempt + 1, Check: problem.Check, Detail: problem.Detail})
		if attempt >= a.spec.Reasks {
			return userReply{}, problem, nil
		}
		lastRaw = resp.Text
	}
}

// ask makes one call to the user model (attempt 0: the turn's first).
func (a *userAsk) ask(ctx context.Context, msgs []llm.Message, attempt int) (llm.Response, error) {
	sc := a.spec.Scenario
	seed := seedOf(a.convSeed, "user", itoa(a.turn))
	if attempt > 0 {
		seed = seedOf(seed, "again", itoa(attempt))
	}
	cache := llm.Conversation(msgs, a.turn == a.spec.Turns)
	if last := len(msgs) - 1; cache.Write > 0 && msgs[last].Content != a.msgs[last].Content {
		// A re-ask's turn prompt carries a note the next turn's request
		// will not: only what precedes it is re-sent.
		cache.Write = last
	}
	resp, err := a.c.Complete(ctx, llm.Request{
		Purpose:   llm.PurposeUser,
		Messages:  slices.Clip(msgs),
		MaxTokens: orDefault(a.spec.UserMaxTokens, defaultMaxTokens),
		Seed:      seed,
		Cache:     cache,
		Priority:  a.turn,
		Meta: map[string]string{
			llm.MetaMetricID:         a.spec.Metric.ID,
			llm.MetaMetricName:       a.spec.Metric.Name,
			llm.MetaMetricType:       string(a.spec.Metric.Type),
			llm.MetaMetricDefinition: a.spec.Metric.Definition,
			llm.MetaTurns:            itoa(a.spec.Turns),
			llm.MetaTurn:             itoa(a.turn),
			llm.MetaPersona:          sc.SimPersona(),
			llm.MetaUserGoal:         sc.UserGoal,
			llm.MetaLatentGoal:       sc.LatentAdversarialGoal,
			llm.MetaLandmark:         a.landmark,
		},
	})
	a.usage = a.usage.Add(callUsage(resp, err))
	a.seeds.add(resp, err)
	return resp, err
}

// againQuoteRunes bounds how much of a rejected reply the re-ask shows.
const againQuoteRunes = 600

// again is the history for a re-ask: the turn prompt, followed in the same
// message by what was wrong with the rejected reply, which it shows (cut
// to againQuoteRunes) only inside a JSON message object. The accepted
// reply goes into the history after the plain turn prompt, so the
// conversation's later requests are the same whatever was re-asked.
func (a *userAsk) again(problem *TurnProblem, raw string) ([]llm.Message, error) {
	if r := []rune(raw); len(r) > againQuoteRunes {
		raw = string(r[:againQuoteRunes]) + "…"
	}
	note, err := a.p.Render(prompts.UserTurnAgain, prompts.UserAgainData{
		Turn:      a.turn,
		Problem:   problem.Detail,
		ReplyJSON: prompts.EncodeMessage(artifacts.Turn{Role: string(llm.RoleUser), Content: raw}),
	})
	if err != nil {
		return nil, err
	}
	msgs := slices.Clone(a.msgs)
	last := &msgs[len(msgs)-1]
	last.Content += "\n\n" + note
	return msgs, nil
}

// targetMessages is what the target is sent: its system prompt, then the
// dialogue as it was sent. Nothing else of the scenario reaches it.
func targetMessages(system string, transcript []artifacts.Turn) []llm.Message {
	msgs := make([]llm.Message, 0, len(transcript)+1)
	msgs = append(msgs, llm.Message{Role: llm.RoleSystem, Content: system})
	for _, t := range transcript {
		msgs = append(msgs, llm.Message{Role: llm.Role(t.Role), Content: t.Content})
	}
	return msgs
}

// targetTurn asks the target for its reply. An empty reply is asked for
// again with another seed (at most twice per run; stored empty replies of
// earlier runs are skipped, not replayed as the answer) before it fails.
// A reply the provider stopped for safety (resp.Refused) is the answer,
// empty or not: it is never asked for again.
func targetTurn(ctx context.Context, c llm.Client, spec SimSpec, msgs []llm.Message, turn int, convSeed uint64, seeds *seedLog) (llm.Response, llm.Usage, error) {
	var usage llm.Usage
	budget := llm.Attempts{Max: 2}
	for attempt := 0; ; attempt++ {
		seed := seedOf(convSeed, "target", itoa(turn))
		if attempt > 0 {
			seed = seedOf(seed, "again", itoa(attempt))
		}
		resp, err := c.Complete(ctx, llm.Request{
			Purpose:   llm.PurposeTarget,
			Messages:  msgs,
			MaxTokens: orDefault(spec.TargetMaxTokens, defaultMaxTokens),
			Seed:      seed,
			Cache:     llm.Conversation(msgs, turn == spec.Turns),
			Priority:  turn,
		})
		usage = usage.Add(callUsage(resp, err))
		seeds.add(resp, err)
		if err != nil || resp.Refused || strings.TrimSpace(resp.Text) != "" {
			return resp, usage, err
		}
		if !budget.Another(resp) {
			return resp, usage, errors.New("empty reply")
		}
	}
}

// seedLog collects the sampling seeds one model's answered calls carried,
// as the clients report them (a stored answer reports what its original
// request carried), for the run block.
type seedLog struct {
	sent []*int64
	why  []string
}

func (l *seedLog) add(resp llm.Response, err error) {
	if err != nil {
		return
	}
	l.sent = append(l.sent, resp.SentSeed)
	l.why = append(l.why, resp.NoSeed)
}

func (l *seedLog) record() artifacts.Seeds { return artifacts.SeedsOf(l.sent, l.why) }

func userSystemData(spec SimSpec) prompts.UserSystemData {
	sc := spec.Scenario
	d := prompts.UserSystemData{
		Persona:    sc.SimPersona(),
		UserGoal:   sc.UserGoal,
		LatentGoal: sc.LatentAdversarialGoal,
		Metric: prompts.UserMetricData{
			Name:     spec.Metric.Name,
			Checks:   definitionHead(spec.Metric.Definition),
			Negative: isNegative(spec.Metric),
		},
		Turns:       spec.Turns,
		Landmarks:   spec.Landmarks,
		Perfunctory: spec.Perfunctory,
	}
	if !spec.Landmarks {
		d.Plan = sc.Landmarks
	}
	return d
}

// definitionHead is the definition's first line, ending in exactly one period.
func definitionHead(def string) string {
	line, _, _ := strings.Cut(strings.TrimSpace(def), "\n")
	line = strings.TrimRight(strings.TrimSpace(line), ".")
	if line == "" {
		return ""
	}
	return line + "."
}

// targetSystemPrompt: the scenario's own, else the benchmark's
// target_system_prompt, else (upstream's fallback) user_context, else a
// neutral default.
func targetSystemPrompt(spec SimSpec) string {
	candidates := []string{spec.Scenario.TargetSystemPrompt}
	if spec.Bench != nil {
		candidates = append(candidates, spec.Bench.Scenario.TargetSystemPrompt, spec.Bench.Scenario.UserContext)
	}
	for _, c := range candidates {
		if strings.TrimSpace(c) != "" {
			return c
		}
	}
	return DefaultTargetSystemPrompt
}

// landmarksByTurn joins the instructions of each turn (a scenario may have
// several for one turn) in stored order.
func landmarksByTurn(ls []artifacts.Landmark) map[int]string {
	m := make(map[int]string, len(ls))
	for _, l := range ls {
		if prev, ok := m[l.Turn]; ok {
			m[l.Turn] = prev + "\n" + l.Instruction
		} else {
			m[l.Turn] = l.Instruction
		}
	}
	return m
}

func orDefault(v, def int) int {
	if v > 0 {
		return v
	}
	return def
}
