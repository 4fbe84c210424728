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
}

// Simulate runs one conversation between the simulated user and the target.
//
// Each turn: the user model writes a reply, ParseUserReply extracts the
// message; "terminate conversation" ends the dialogue before any target
// call (status user_terminated); otherwise the message (perturbed when
// Perfunctory, seeded per conversation and turn) goes to the target, whose
// reply closes the turn. Running all turns gives status completed.
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
// turn prompt. See userTurnMessages for why.
func Simulate(ctx context.Context, user, target llm.Client, p *prompts.Set, spec SimSpec) (artifacts.Conversation, error) {
	sc := spec.Scenario
	metricID := sc.MetricID
	if metricID == "" {
		metricID = spec.Metric.ID
	}
	convSeed := seedOf(spec.Seed, "conversation", sc.ID, spec.TargetID, itoa(spec.Sample))
	conv := artifacts.Conversation{
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
	}
	var usage, userUsage llm.Usage
	var userSeeds, targetSeeds seedLog
	var thoughts []string // the user's hidden reasoning, one per user message
	end := func(status, reason string, err error) (artifacts.Conversation, error) {
		conv.Status, conv.StatusReason = status, reason
		if slices.ContainsFunc(thoughts, func(t string) bool { return t != "" }) {
			conv.UserThoughts = thoughts
		}
		conv.Usage = artifacts.UsageFrom(usage)
		if userUsage.Requests > 0 {
			uu := artifacts.UsageFrom(userUsage)
			conv.UserUsage = &uu
		}
		conv.Run.UserSeeds = userSeeds.record()
		conv.Run.TargetSeeds = targetSeeds.record()
		return conv, err
	}
	// fail turns a call error into the conversation's end state.
	fail := func(who string, turn int, err error) (artifacts.Conversation, error) {
		reason := fmt.Sprintf("%s, turn %d: %v", who, turn, err)
		switch {
		case errors.Is(err, llm.ErrBudgetExceeded):
			return end(artifacts.StatusBudget, reason, err)
		case fatal(ctx, err):
			return end(artifacts.StatusError, reason, fmt.Errorf("simulate %s: %w", conv.ConvID, err))
		}
		return end(artifacts.StatusError, reason, nil)
	}
	if spec.Turns <= 0 {
		return end(artifacts.StatusError, "turns must be > 0", fmt.Errorf("simulate %s: turns must be > 0, got %d", conv.ConvID, spec.Turns))
	}

	sysPrompt, err := p.Render(prompts.UserSystem, userSystemData(spec))
	if err != nil {
		return end(artifacts.StatusError, err.Error(), fmt.Errorf("simulate %s: %w", conv.ConvID, err))
	}
	targetSys := targetSystemPrompt(spec)
	byTurn := landmarksByTurn(sc.Landmarks)
	userMsgs := []llm.Message{{Role: llm.RoleSystem, Content: sysPrompt}}
	lastReply := ""

	for turn := 1; turn <= spec.Turns; turn++ {
		td := prompts.UserTurnData{Turn: turn, Turns: spec.Turns, Landmarks: spec.Landmarks}
		if turn > 1 {
			// The target's reply is model text: it reaches the user model
			// only inside a JSON message object.
			td.ReplyJSON = prompts.EncodeMessage(artifacts.Turn{Role: string(llm.RoleAssistant), Content: lastReply})
		}
		if spec.Landmarks {
			td.Instruction = byTurn[turn]
		}
		name := prompts.UserTurnFirst
		if turn > 1 {
			name = prompts.UserTurnNext
		}
		turnPrompt, err := p.Render(name, td)
		if err != nil {
			return end(artifacts.StatusError, err.Error(), fmt.Errorf("simulate %s: %w", conv.ConvID, err))
		}
		userMsgs = append(userMsgs, llm.Message{Role: llm.RoleUser, Content: turnPrompt})

		ur, u, err := userTurn(ctx, user, spec, userMsgs, turn, byTurn[turn], convSeed, &userSeeds)
		usage, userUsage = usage.Add(u), userUsage.Add(u)
		if err != nil {
			return fail("user model", turn, err)
		}
		msg, thought := ur.msg, ur.thought
		if ur.terminate {
			return end(artifacts.StatusUserTerminated, fmt.Sprintf("the simulated user ended the conversation at turn %d", turn), nil)
		}
		if spec.Perfunctory {
			msg = Perturb(msg, seedOf(convSeed, "perturb", itoa(turn)))
		}
		if ur.truncated {
			conv.Truncated = append(conv.Truncated, len(conv.Transcript))
		}
		conv.Transcript = append(conv.Transcript, artifacts.Turn{Role: string(llm.RoleUser), Content: msg})
		thoughts = append(thoughts, thought)
		// The user model sees what was actually sent (after noise), labelled
		// like its own output format so it keeps to that format.
		userMsgs = append(userMsgs, llm.Message{Role: llm.RoleAssistant, Content: "Message: " + msg})

		targetMsgs := make([]llm.Message, 0, len(conv.Transcript)+1)
		targetMsgs = append(targetMsgs, llm.Message{Role: llm.RoleSystem, Content: targetSys})
		for _, t := range conv.Transcript {
			targetMsgs = append(targetMsgs, llm.Message{Role: llm.Role(t.Role), Content: t.Content})
		}
		resp, u, err := targetTurn(ctx, target, spec, targetMsgs, turn, convSeed, &targetSeeds)
		usage = usage.Add(u)
		if err != nil {
			// Drop the unanswered user message: transcripts stay
			// user/assistant pairs, as every reader of them expects.
			conv.Transcript = conv.Transcript[:len(conv.Transcript)-1]
			thoughts = thoughts[:len(thoughts)-1]
			if n := len(conv.Truncated); n > 0 && conv.Truncated[n-1] == len(conv.Transcript) {
				conv.Truncated = conv.Truncated[:n-1]
			}
			return fail("target model", turn, err)
		}
		if resp.Truncated {
			conv.Truncated = append(conv.Truncated, len(conv.Transcript))
		}
		conv.Transcript = append(conv.Transcript, artifacts.Turn{Role: string(llm.RoleAssistant), Content: resp.Text})
		lastReply = resp.Text
	}
	return end(artifacts.StatusCompleted, "", nil)
}

// userTurn asks the user model for its next message. A reply with no usable
// message is asked for once more with another seed before it counts as a
// failure: sending an empty message to the target would be meaningless
// (and rejected by some providers).
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
// previous request (CacheHint) and provider prompt caches hit each turn.
func userTurn(ctx context.Context, c llm.Client, spec SimSpec, msgs []llm.Message, turn int, landmark string, convSeed uint64, seeds *seedLog) (reply userReply, usage llm.Usage, err error) {
	sc := spec.Scenario
	meta := map[string]string{
		llm.MetaMetricID:         spec.Metric.ID,
		llm.MetaMetricName:       spec.Metric.Name,
		llm.MetaMetricType:       string(spec.Metric.Type),
		llm.MetaMetricDefinition: spec.Metric.Definition,
		llm.MetaTurns:            itoa(spec.Turns),
		llm.MetaTurn:             itoa(turn),
		llm.MetaPersona:          sc.SimPersona(),
		llm.MetaUserGoal:         sc.UserGoal,
		llm.MetaLatentGoal:       sc.LatentAdversarialGoal,
		llm.MetaLandmark:         landmark,
	}
	budget := llm.Attempts{Max: 2}
	for attempt := 0; ; attempt++ {
		seed := seedOf(convSeed, "user", itoa(turn))
		if attempt > 0 {
			seed = seedOf(seed, "again", itoa(attempt))
		}
		resp, err := c.Complete(ctx, llm.Request{
			Purpose:   llm.PurposeUser,
			Messages:  slices.Clip(msgs),
			MaxTokens: orDefault(spec.UserMaxTokens, defaultMaxTokens),
			Seed:      seed,
			Cache:     llm.Conversation(msgs, turn == spec.Turns),
			Meta:      meta,
		})
		usage = usage.Add(callUsage(resp, err))
		seeds.add(resp, err)
		if err != nil {
			return userReply{}, usage, err
		}
		msg, terminate := ParseUserReply(resp.Text)
		if terminate || msg != "" {
			return userReply{msg: msg, thought: UserThought(resp.Text), terminate: terminate, truncated: resp.Truncated}, usage, nil
		}
		if !budget.Another(resp) {
			return userReply{}, usage, errors.New("the reply contained no message")
		}
	}
}

// userReply is what one user turn produced.
type userReply struct {
	msg, thought string
	terminate    bool
	// truncated: the reply was cut at llm.MaxReplyBytes (the message and
	// thought are parts of what was kept).
	truncated bool
}

// targetTurn asks the target for its reply. An empty reply is asked for
// again with another seed (at most twice per run; stored empty replies of
// earlier runs are skipped, not replayed as the answer) before it fails.
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
		})
		usage = usage.Add(callUsage(resp, err))
		seeds.add(resp, err)
		if err != nil || strings.TrimSpace(resp.Text) != "" {
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
