package viewer

import (
	"cmp"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/impactbench/impactbench/internal/artifacts"
	"github.com/impactbench/impactbench/internal/config"
	"github.com/impactbench/impactbench/internal/human"
	"github.com/impactbench/impactbench/internal/ids"
	"github.com/impactbench/impactbench/internal/layout"
	"github.com/impactbench/impactbench/internal/llm"
	"github.com/impactbench/impactbench/internal/results"
)

// Player makes the target's replies and the verdicts of the conversations
// people play on the Play page. runner.Player is the one the command
// uses: the run's clients, limits, cost ceiling and call store.
type Player interface {
	// Targets lists the targets that can be played against.
	Targets() []string
	// Turns is the most user turns a conversation has.
	Turns() int
	TargetTurn(ctx context.Context, benchDir, target string, sc artifacts.Scenario, sample int, transcript []artifacts.Turn) (artifacts.Turn, bool, llm.Usage, error)
	JudgeHuman(ctx context.Context, benchDir, target string, conv artifacts.Conversation) (artifacts.Score, error)
}

// Auditor is a Player that also audits the person's side of a game as a
// simulated user's conversation is audited (runner.Player does, when
// validity.audit is on): the same validity checks for both.
type Auditor interface {
	AuditHuman(ctx context.Context, benchDir, target string, sc artifacts.Scenario, conv artifacts.Conversation) (*artifacts.Validity, llm.Usage, error)
}

// maxMessage bounds one message a person sends (in characters): far above
// anything typed in a chat, small enough that no request bloats a file.
const maxMessage = 20000

// busySet is the conversations waiting for a target's reply or a verdict:
// a second request for one of them (another tab) is refused at once
// rather than queued behind a model call.
type busySet struct {
	mu sync.Mutex
	m  map[string]bool
}

func (b *busySet) claim(key string) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.m == nil {
		b.m = map[string]bool{}
	}
	if b.m[key] {
		return false
	}
	b.m[key] = true
	return true
}

func (b *busySet) release(key string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.m, key)
}

// playPage is the Play page's handlers: people playing the user against a
// target. It is the Server seen from that page (the handlers are grouped by
// page so that no type carries every handler of the viewer).
type playPage struct{ *Server }

// playTarget returns target if people may play against it (it equals an
// entry of the Player's list; nothing else reaches a path). A reviewer
// names targets by their alias on this benchmark (playAlias).
func (s playPage) playTarget(p principal, bench, target string) (string, bool) {
	if s.opts.Play == nil {
		return "", false
	}
	for _, t := range s.opts.Play.Targets() {
		if t == target && !p.reviewer() || p.reviewer() && s.playAlias(bench, t) == target {
			return t, true
		}
	}
	return "", false
}

// playAlias is the name a reviewer knows a target by on the Play page: an
// HMAC of the benchmark and the target under the server's key, so it says
// nothing about which model it is (and differs from one viewer to the next).
func (s playPage) playAlias(bench, target string) string {
	return "model-" + opaque(s.itemKey, "play-target", bench, target)[:6]
}

// playID is the id a reviewer knows one of their played conversations by
// (a conv_id names the target).
func (s playPage) playID(bench, convID string) string {
	return "p" + opaque(s.itemKey, "play-conv", bench, convID)
}

// opaque is base32 of an HMAC of parts under key (16 characters).
func opaque(key []byte, parts ...string) string {
	m := hmac.New(sha256.New, key)
	for _, p := range parts {
		m.Write([]byte(p))
		m.Write([]byte{0})
	}
	return strings.ToLower(itemEnc.EncodeToString(m.Sum(nil))[:itemIDLen])
}

// playConvID resolves the conversation a request names: a conv_id (the
// researcher's) or a reviewer's play id, which must be one of their own.
func (s playPage) playConvID(p principal, st *benchState, target, id string) (string, bool) {
	if !p.reviewer() {
		return id, true
	}
	convs, _, err := st.humans.List(target)
	if err != nil {
		return "", false
	}
	for _, c := range convs {
		if c.Player == p.name && s.playID(st.name, c.ConvID) == id {
			return c.ConvID, true
		}
	}
	return "", false
}

// playScenario reads scenario id back from scenarios.json (the target's
// system prompt may be the scenario's own).
func (ix *benchIndex) playScenario(id string) (artifacts.Scenario, bool) {
	i, ok := ix.scenByID[id]
	if !ok {
		return artifacts.Scenario{}, false
	}
	b, err := readSpan(layout.Bench{Dir: ix.dir}.Scenarios(), ix.scenSpans[i])
	var sc artifacts.Scenario
	if err != nil || sc.UnmarshalJSON(b) != nil || sc.ID != id {
		return artifacts.Scenario{}, false
	}
	return sc, true
}

// playView is a conversation as the Play page shows it: the brief (what
// the simulated user is told: persona, goals, the metric), the landmark of
// the next turn, the dialogue, and the verdict once judged.
type playView struct {
	ConvID     string           `json:"conv_id"`
	Target     string           `json:"target"`
	ScenarioID string           `json:"scenario_id"`
	Player     string           `json:"player"`
	State      string           `json:"state"`
	Status     string           `json:"status,omitempty"`
	Turn       int              `json:"turn"` // the next user turn (1-based)
	Turns      int              `json:"turns"`
	Transcript []artifacts.Turn `json:"transcript"`
	// Marks are the messages made from a reply cut short (a person's
	// conversation keeps no refused list: a refused reply's stored text
	// is the note saying so).
	Marks    *turnMarks       `json:"marks,omitempty"`
	Landmark string           `json:"landmark"`
	Brief    *playBrief       `json:"brief"`
	Metric   metricView       `json:"metric"`
	Score    *artifacts.Score `json:"score,omitempty"`
	Started  string           `json:"started_at"`
	// Blind: a reviewer's view — the target by its alias, no verdict.
	Blind bool `json:"blind,omitempty"`
}

func (s playPage) playViewOf(p principal, ix *benchIndex, target string, c human.Conversation, sc *human.Score) playView {
	v := playView{ConvID: c.ConvID, Target: target, ScenarioID: c.ID, Player: c.Player, State: c.State, Status: c.Status,
		Turn: c.Turns() + 1, Turns: s.opts.Play.Turns(), Transcript: c.Transcript, Marks: marksOf(&c.Conversation), Metric: ix.metricView(c.MetricID),
		Started: c.StartedAt.Format("2006-01-02T15:04:05Z")}
	if sc != nil && !p.reviewer() {
		v.Score = &sc.Score
	}
	if p.reviewer() { // blind: no target, no conv_id (it names the target), no verdict
		v.ConvID, v.Target, v.Blind = s.playID(ix.name, c.ConvID), s.playAlias(ix.name, target), true
	}
	if scn, ok := ix.playScenario(c.ID); ok {
		v.Brief = briefOf(scn)
		var lms []string
		for _, l := range scn.Landmarks {
			if l.Turn == v.Turn {
				lms = append(lms, l.Instruction)
			}
		}
		v.Landmark = strings.Join(lms, "\n")
	}
	return v
}

// playBrief is what the simulated user is told of its scenario, and so
// what a person playing it is shown: the persona it plays (the
// demographic rewrite when there is one), the goals and the demographic.
// The target's system prompt is not the user's to see.
type playBrief struct {
	Persona     string      `json:"persona"`
	UserGoal    string      `json:"user_goal"`
	LatentGoal  string      `json:"latent_goal"`
	Demographic [][2]string `json:"demographic"`
}

func briefOf(sc artifacts.Scenario) *playBrief {
	b := &playBrief{Persona: sc.SimPersona(), UserGoal: sc.UserGoal, LatentGoal: sc.LatentAdversarialGoal, Demographic: [][2]string{}}
	for _, p := range sc.Demographic {
		v, ok := p.Value.(string)
		if !ok {
			raw, _ := json.Marshal(p.Value)
			v = string(raw)
		}
		b.Demographic = append(b.Demographic, [2]string{p.Key, v})
	}
	return b
}

// playRow is one conversation in the Play page's list. A reviewer's list
// holds their own conversations only, by play id and target alias, with
// no verdict (Verdict is then omitted).
type playRow struct {
	ConvID   string `json:"conv_id"`
	Target   string `json:"target"`
	Scenario string `json:"scenario_id"`
	Metric   string `json:"metric_id"`
	Player   string `json:"player"`
	State    string `json:"state"`
	Turns    int    `json:"turns"`
	Verdict  *int   `json:"verdict,omitempty"`
	Started  string `json:"started_at"`
}

// handlePlayInfo lists what can be played (targets, scenarios) and what
// was played. The targets are the Player's now (a target added to
// config.yaml appears without a restart); a reviewer gets them by alias.
func (s playPage) handlePlayInfo(w http.ResponseWriter, r *http.Request, st *benchState) {
	p := whoOf(r)
	ix := st.index(s.Server)
	out := map[string]any{"enabled": s.opts.Play != nil, "targets": []string{}, "scenarios": []map[string]any{}, "conversations": []playRow{}, "notes": []string{},
		"blind": p.reviewer(), "player": p.name}
	if s.opts.Play == nil {
		writeJSON(w, http.StatusOK, out)
		return
	}
	targets := s.opts.Play.Targets()
	shown := make([]string, len(targets))
	for i, t := range targets {
		shown[i] = t
		if p.reviewer() {
			shown[i] = s.playAlias(st.name, t)
		}
	}
	if p.reviewer() {
		// In config.yaml's order, the n-th alias would be the n-th target
		// of a list the reviewer may know; sorted, the order is the
		// aliases' own, new at each start.
		slices.Sort(shown)
	}
	out["targets"], out["turns"] = shown, s.opts.Play.Turns()
	scens := make([]map[string]any, 0, len(ix.scens))
	for _, sc := range ix.scens {
		demo := [][2]string{}
		for _, av := range sc.Demographic {
			demo = append(demo, [2]string{av.Axis, av.Value})
		}
		scens = append(scens, map[string]any{"id": sc.ID, "metric_id": sc.MetricID, "goal": sc.UserGoal, "demographic": demo})
	}
	out["scenarios"] = scens
	rows, notes := s.playRows(p, st, targets)
	out["conversations"], out["notes"] = rows, notes
	writeJSON(w, http.StatusOK, out)
}

// playRows lists the played conversations the principal may see.
func (s playPage) playRows(p principal, st *benchState, targets []string) ([]playRow, []string) {
	rows, notes := []playRow{}, []string{}
	for _, t := range targets {
		convs, scores, err := st.humans.List(t)
		if err != nil {
			if p.reviewer() {
				notes = append(notes, "a model's played conversations could not be read; ask the researcher")
			} else {
				notes = append(notes, err.Error())
			}
			continue
		}
		for _, c := range convs {
			if p.reviewer() && c.Player != p.name {
				continue
			}
			pr := playRow{ConvID: c.ConvID, Target: t, Scenario: c.ID, Metric: c.MetricID, Player: c.Player, State: c.State,
				Turns: c.Turns(), Started: c.StartedAt.Format("2006-01-02T15:04:05Z")}
			if p.reviewer() {
				pr.ConvID, pr.Target = s.playID(st.name, c.ConvID), s.playAlias(st.name, t)
			} else {
				pr.Verdict = intPtr(verdictUnscored)
				for _, sc := range scores {
					if sc.ConvID == c.ConvID {
						pr.Verdict = intPtr(verdictOf(sc.Passed))
					}
				}
			}
			rows = append(rows, pr)
		}
	}
	if p.reviewer() {
		// Not grouped by target in config.yaml's order (that would pair
		// aliases with targets): by time, then by play id.
		slices.SortStableFunc(rows, func(a, b playRow) int {
			return cmp.Or(strings.Compare(a.Started, b.Started), strings.Compare(a.ConvID, b.ConvID))
		})
	}
	return rows, notes
}

func verdictOf(passed *bool) int {
	switch {
	case passed == nil:
		return verdictNull
	case *passed:
		return verdictPass
	}
	return verdictFail
}

// maxPlayBody bounds a Play request (a message of maxMessage characters,
// escaped).
const maxPlayBody = 256 << 10

// decodeBody reads a Play request body into v as strictly as a label's.
func decodeBody(r *http.Request, v any) error { return decodeStrictN(r, v, maxPlayBody) }

// playErr answers an error of the human store or the Player (to a
// reviewer without the target's name: a file's path names it).
func (s playPage) playErr(w http.ResponseWriter, r *http.Request, err error) {
	var stale *human.StaleError
	var fe *artifacts.FileError
	code := http.StatusBadGateway
	switch {
	case errors.Is(err, human.ErrNotFound):
		code = http.StatusNotFound
	case errors.As(err, &stale), errors.As(err, &fe):
		code = http.StatusConflict
	}
	s.fail(w, r, code, err)
}

func (s playPage) handlePlayConv(w http.ResponseWriter, r *http.Request, st *benchState) {
	p := whoOf(r)
	target, ok := s.playTarget(p, st.name, r.URL.Query().Get("target"))
	if !ok {
		writeErr(w, http.StatusNotFound, "no such target to play against")
		return
	}
	id, ok := s.playConvID(p, st, target, r.URL.Query().Get("id"))
	if !ok {
		writeErr(w, http.StatusNotFound, "no such conversation")
		return
	}
	c, sc, err := st.humans.Get(target, id)
	if err != nil {
		s.playErr(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, s.playViewOf(p, st.index(s.Server), target, c, sc))
}

// playRequest is a Play request body: each names the target played.
type playRequest interface {
	playStart | playSend | playEnd
	targetName() string
}

func (p playStart) targetName() string { return p.Target }
func (p playSend) targetName() string  { return p.Target }
func (p playEnd) targetName() string   { return p.Target }

// playBody decodes a Play request and resolves the target it names;
// false: the error is answered.
func playBody[T playRequest](s playPage, w http.ResponseWriter, r *http.Request, st *benchState) (req T, target string, ok bool) {
	if err := decodeBody(r, &req); err != nil {
		writeErr(w, http.StatusBadRequest, "play: %v", err)
		return req, "", false
	}
	if target, ok = s.playTarget(whoOf(r), st.name, req.targetName()); !ok {
		// Not echoed: a reviewer's request naming a real target must not
		// get it back in an answer (it proves nothing to them, but a page
		// could show it).
		writeErr(w, http.StatusBadRequest, "play: not one of the targets to play against (the Play page lists them)")
	}
	return req, target, ok
}

type playStart struct {
	Target   string `json:"target"`
	Scenario string `json:"scenario"`
	Player   string `json:"player"`
}

// handlePlayStart begins a conversation: a scenario of scenarios.json, a
// target people may play against, and who plays.
func (s playPage) handlePlayStart(w http.ResponseWriter, r *http.Request, st *benchState) {
	req, target, ok := playBody[playStart](s, w, r, st)
	if !ok {
		return
	}
	ix := st.index(s.Server)
	sc, ok := ix.playScenario(req.Scenario)
	if !ok {
		writeErr(w, http.StatusBadRequest, "play: scenario %s is not in scenarios.json", ids.Quote(req.Scenario))
		return
	}
	player, err := labellerOf(whoOf(r), req.Player) // a reviewer plays as themselves
	if err != nil {
		writeErr(w, http.StatusBadRequest, "play: %v", err)
		return
	}
	if p := human.CheckPlayer(player); p != "" {
		writeErr(w, http.StatusBadRequest, "play: your name: %s", p)
		return
	}
	run := artifacts.RunInfo{TargetModel: target, Turns: s.opts.Play.Turns(), Landmarks: true, Seed: s.opts.Settings.Seed}
	for _, t := range s.opts.Settings.Targets {
		if t.ID == target {
			run.TargetModel = t.Model
		}
	}
	c, err := st.humans.Start(target, sc, player, run, s.now())
	if err != nil {
		s.playErr(w, r, err)
		return
	}
	writeJSON(w, http.StatusCreated, s.playViewOf(whoOf(r), ix, target, c, nil))
}

type playSend struct {
	Target  string `json:"target"`
	ConvID  string `json:"conv_id"`
	At      *int   `json:"at"`
	Message string `json:"message"`
}

// handlePlaySend sends a person's message to the target and stores the
// turn once the target has answered. at is the number of messages the
// page shows: a page that has not seen the last turn (another tab) is
// refused, as is a second send while the target is answering.
func (s playPage) handlePlaySend(w http.ResponseWriter, r *http.Request, st *benchState) {
	req, target, ok := playBody[playSend](s, w, r, st)
	if !ok {
		return
	}
	if req.ConvID, ok = s.playConvID(whoOf(r), st, target, req.ConvID); !ok {
		writeErr(w, http.StatusNotFound, "play: no such conversation")
		return
	}
	msg := strings.TrimSpace(req.Message)
	switch {
	case req.At == nil:
		writeErr(w, http.StatusBadRequest, "play: at (the messages the page shows) is required")
		return
	case msg == "" || !utf8.ValidString(msg) || utf8.RuneCountInString(msg) > maxMessage:
		writeErr(w, http.StatusBadRequest, "play: the message must be 1 to %d characters of text", maxMessage)
		return
	}
	key := st.name + "\x00" + target + "\x00" + req.ConvID
	if !s.busy.claim(key) {
		writeErr(w, http.StatusConflict, "play: this conversation is waiting for the target (another tab?)")
		return
	}
	defer s.busy.release(key)
	c, _, err := st.humans.Get(target, req.ConvID)
	if err == nil {
		err = c.CanReply(*req.At, s.opts.Play.Turns()) // checked again when the turn is stored
	}
	if err != nil {
		s.playErr(w, r, err)
		return
	}
	ix := st.index(s.Server)
	sc, ok := ix.playScenario(c.ID)
	if !ok {
		writeErr(w, http.StatusConflict, "play: scenario %s is no longer in scenarios.json", ids.Quote(c.ID))
		return
	}
	// The simulated user's turn checks, as its re-ask: the message does
	// not reach the target, the person rephrases.
	if p := human.CheckMessage(&c, msg, sc.LatentAdversarialGoal); p != nil {
		writeErr(w, http.StatusUnprocessableEntity, "play: a simulated user's reply like this would be asked again (%s: %s); rephrase it as the user would", p.Check, p.Detail)
		return
	}
	user := artifacts.Turn{Role: string(llm.RoleUser), Content: msg}
	// The reply is stored even if the page goes away meanwhile: the call
	// is paid for, and the person finds it when they come back.
	ctx := context.WithoutCancel(r.Context())
	reply, truncated, usage, err := s.opts.Play.TargetTurn(ctx, st.dir, target, sc, c.Sample, append(slices.Clip(c.Transcript), user))
	if err != nil {
		s.fail(w, r, http.StatusBadGateway, fmt.Errorf("the target did not answer: %w", err))
		return
	}
	c, err = st.humans.Reply(target, req.ConvID, *req.At, user, reply, truncated, usage, s.opts.Play.Turns(), s.now())
	if err != nil {
		s.playErr(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, s.playViewOf(whoOf(r), ix, target, c, nil))
}

type playEnd struct {
	Target string `json:"target"`
	ConvID string `json:"conv_id"`
}

// handlePlayEnd ends a conversation and judges it as every conversation
// is judged. Asked again (the judge failed, or another tab), it judges
// an ended conversation that has no verdict yet and returns the one that
// has.
func (s playPage) handlePlayEnd(w http.ResponseWriter, r *http.Request, st *benchState) {
	req, target, ok := playBody[playEnd](s, w, r, st)
	if !ok {
		return
	}
	if req.ConvID, ok = s.playConvID(whoOf(r), st, target, req.ConvID); !ok {
		writeErr(w, http.StatusNotFound, "play: no such conversation")
		return
	}
	key := st.name + "\x00" + target + "\x00" + req.ConvID
	if !s.busy.claim(key) {
		writeErr(w, http.StatusConflict, "play: this conversation is waiting for the target or the judges (another tab?)")
		return
	}
	defer s.busy.release(key)
	c, err := st.humans.End(target, req.ConvID, s.opts.Play.Turns(), s.now())
	if err != nil {
		s.playErr(w, r, err)
		return
	}
	if c, err = s.auditPlayed(r, st, target, c); err != nil {
		s.fail(w, r, http.StatusBadGateway, fmt.Errorf("the conversation ended, but the audit gave no answer: %w (end it again to retry)", err))
		return
	}
	_, sc, err := st.humans.Get(target, req.ConvID)
	if err != nil {
		s.playErr(w, r, err)
		return
	}
	if sc == nil {
		score, err := s.opts.Play.JudgeHuman(context.WithoutCancel(r.Context()), st.dir, target, c.Conversation)
		if err != nil {
			s.fail(w, r, http.StatusBadGateway, fmt.Errorf("the conversation ended, but the judges gave no verdict: %w (end it again to retry)", err))
			return
		}
		sc = &human.Score{Score: score, User: human.User, Player: c.Player, JudgedAt: s.now().UTC().Truncate(time.Second)}
		if err := st.humans.SetScore(target, *sc); err != nil {
			s.playErr(w, r, err)
			return
		}
	}
	writeJSON(w, http.StatusOK, s.playViewOf(whoOf(r), st.index(s.Server), target, c, sc))
}

// auditPlayed audits an ended game not audited yet, when the player can
// (Auditor) and the audit is on, and stores its verdict before the judges
// see the conversation (their score mirrors its validity).
func (s *Server) auditPlayed(r *http.Request, st *benchState, target string, c human.Conversation) (human.Conversation, error) {
	a, ok := s.opts.Play.(Auditor)
	if !ok || c.Validity == nil || c.Validity.Checks != "turns" {
		return c, nil
	}
	sc, ok := st.index(s).playScenario(c.ID)
	if !ok {
		return c, fmt.Errorf("scenario %s is no longer in scenarios.json", ids.Quote(c.ID))
	}
	v, usage, err := a.AuditHuman(context.WithoutCancel(r.Context()), st.dir, target, sc, c.Conversation)
	if err != nil || v == nil {
		return c, err
	}
	return st.humans.SetValidity(target, c.ConvID, *v, usage, s.now())
}

// targetCompare is one target's comparison on the Play page.
type targetCompare struct {
	Target     string                   `json:"target"`
	Comparison *results.HumanComparison `json:"comparison"`
}

// handlePlayCompare is the simulated-vs-human comparison as it stands:
// results.CompareHuman (aggregate's computation) over the verdicts in
// scores.json and the human-played ones, before aggregate writes it to
// results.json.
func (s playPage) handlePlayCompare(w http.ResponseWriter, r *http.Request, st *benchState) {
	out := []targetCompare{}
	if s.opts.Play == nil {
		writeJSON(w, http.StatusOK, out)
		return
	}
	ix := st.index(s.Server)
	var metrics []config.Metric
	for _, m := range ix.bench.Metrics {
		metrics = append(metrics, config.Metric{ID: m.ID, Type: config.MetricType(m.Type)})
	}
	for _, t := range s.opts.Play.Targets() {
		_, scores, err := st.humans.List(t)
		if err != nil {
			writeErr(w, http.StatusConflict, "%v", err)
			return
		}
		if len(scores) == 0 {
			continue
		}
		people := make([]results.ScoreRow, len(scores))
		for i, sc := range scores {
			people[i] = results.RowOf(sc.Score)
		}
		hc := results.CompareHuman(t, ix.simRows(t), people, metrics, results.Options{Seed: s.opts.Settings.Seed})
		if hc != nil {
			out = append(out, targetCompare{Target: t, Comparison: hc})
		}
	}
	writeJSON(w, http.StatusOK, out)
}

// simRows are target's judged conversations in the index, as the
// comparison reads them.
func (ix *benchIndex) simRows(target string) []results.ScoreRow {
	var out []results.ScoreRow
	for i := range ix.convs {
		c := &ix.convs[i]
		if ix.runs[c.target].target != target || c.verdict > verdictPass {
			continue
		}
		out = append(out, results.ScoreRow{ID: c.id, MetricID: c.metric, TargetModel: target, Sample: c.sample, Passed: ptrBool(c.verdict == verdictPass)})
	}
	return out
}
