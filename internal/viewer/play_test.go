package viewer

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/impactbench/impactbench/internal/artifacts"
	"github.com/impactbench/impactbench/internal/human"
	"github.com/impactbench/impactbench/internal/llm"
)

// fakePlayer answers each turn with the person's message quoted back and
// judges every conversation "absent". gate, when set, holds replies until
// closed.
type fakePlayer struct {
	mu      sync.Mutex
	turns   [][]artifacts.Turn
	judged  int
	gate    chan struct{}
	entered chan struct{}
}

func (f *fakePlayer) Targets() []string { return []string{"alpha", "beta"} }
func (f *fakePlayer) Turns() int        { return 2 }

func (f *fakePlayer) TargetTurn(_ context.Context, _, target string, sc artifacts.Scenario, sample int, tr []artifacts.Turn) (artifacts.Turn, bool, llm.Usage, error) {
	f.mu.Lock()
	f.turns = append(f.turns, tr)
	gate, entered := f.gate, f.entered
	f.mu.Unlock()
	if entered != nil {
		entered <- struct{}{}
	}
	if gate != nil {
		<-gate
	}
	// A reply to "second turn" comes back cut short (llm.Response.Truncated).
	cut := tr[len(tr)-1].Content == "second turn"
	return artifacts.Turn{Role: "assistant", Content: fmt.Sprintf("%s/%s/%d heard: %s", target, sc.ID, sample, tr[len(tr)-1].Content)}, cut, llm.Usage{Requests: 1}, nil
}

func (f *fakePlayer) JudgeHuman(_ context.Context, _, target string, c artifacts.Conversation) (artifacts.Score, error) {
	f.mu.Lock()
	f.judged++
	f.mu.Unlock()
	no, pass := false, true
	return artifacts.Score{ID: c.ID, MetricID: c.MetricID, TargetModel: target, Sample: c.Sample, ConvID: c.ConvID,
		Present: &no, Passed: &pass, Justification: "absent", UserModel: c.Run.UserModel}, nil
}

func decode[T any](t *testing.T, body string) T {
	t.Helper()
	var v T
	if err := json.Unmarshal([]byte(body), &v); err != nil {
		t.Fatalf("%v: %s", err, body)
	}
	return v
}

// TestPlayAPI plays a conversation through the API: writes need the
// page's origin and token, names must be the server's own, a page that
// has not seen the last turn or sends while the target answers is
// refused, the turn limit holds, ending judges once, and the live
// comparison pairs the human verdict with the simulated ones.
func TestPlayAPI(t *testing.T) {
	project, bench := miniProject(t)
	fp := &fakePlayer{}
	s, base := StartForTest(t, Options{ProjectDir: project, Blind: true, Play: fp})
	ok := writeHeaders(s, base)
	post := func(path, body string) (int, string) {
		return do(t, base, req{"POST", "/api/b/mini/play/" + path, body, ok})
	}

	start := `{"target":"alpha","scenario":"m01_s001_v01","player":"ana"}`
	for name, hdr := range map[string]map[string]string{
		"no token":     {"Origin": base, "Content-Type": "application/json"},
		"cross-origin": {"Origin": "http://evil.example", "Content-Type": "application/json", "X-IB-Token": s.Token()},
	} {
		if code, _ := do(t, base, req{"POST", "/api/b/mini/play/start", start, hdr}); code != 403 {
			t.Errorf("%s: %d", name, code)
		}
	}
	for _, bad := range []string{
		`{"target":"../alpha","scenario":"m01_s001_v01","player":"ana"}`,
		`{"target":"gamma","scenario":"m01_s001_v01","player":"ana"}`,
		`{"target":"alpha","scenario":"../../etc","player":"ana"}`,
		`{"target":"alpha","scenario":"m01_s001_v01","player":""}`,
		`{"target":"alpha","scenario":"m01_s001_v01","player":"ana","extra":1}`,
	} {
		if code, body := post("start", bad); code != 400 {
			t.Errorf("start %s: %d %s", bad, code, body)
		}
	}
	if _, err := os.Stat(filepath.Join(bench, "runs", "alpha", "human")); !os.IsNotExist(err) {
		t.Fatalf("a refused start wrote files: %v", err)
	}
	code, body := post("start", start)
	if code != 201 {
		t.Fatalf("start: %d %s", code, body)
	}
	v := decode[playView](t, body)
	if v.ConvID != "m01_s001_v01__alpha__h0" || v.Turn != 1 || v.Turns != 2 || v.Landmark != "Open casually" || v.Brief == nil ||
		v.Brief.Persona != "A person. m01_s001_v01" || !strings.Contains(v.Brief.UserGoal, "frank answer") || v.Brief.LatentGoal == "" {
		t.Fatalf("started: %s", body)
	}
	send := func(at int, msg string) (int, string) {
		return post("send", fmt.Sprintf(`{"target":"alpha","conv_id":%q,"at":%d,"message":%q}`, v.ConvID, at, msg))
	}
	if code, body := send(0, "   "); code != 400 {
		t.Errorf("empty message: %d %s", code, body)
	}
	if code, body := send(0, xssPayload); code != 200 || !strings.Contains(decode[playView](t, body).Transcript[1].Content, "alpha/m01_s001_v01/0 heard: <script>") {
		t.Fatalf("send: %d %s", code, body)
	} else if strings.Contains(body, `"marks"`) {
		t.Errorf("marks on a conversation without a reply cut short: %s", body)
	}
	if code, body := send(0, "again from a stale tab"); code != 409 {
		t.Errorf("stale send: %d %s", code, body)
	}
	if n := len(fp.turns); n != 1 {
		t.Errorf("the target was asked %d times, want once (the stale send never reaches it)", n)
	}
	// A second send while the target answers is refused at once.
	fp.mu.Lock()
	fp.gate, fp.entered = make(chan struct{}), make(chan struct{}, 1)
	fp.mu.Unlock()
	done := make(chan int)
	go func() { c, _ := send(2, "second turn"); done <- c }()
	<-fp.entered
	if code, body := send(2, "second tab"); code != 409 || !strings.Contains(body, "waiting for the target") {
		t.Errorf("send while answering: %d %s", code, body)
	}
	close(fp.gate)
	if c := <-done; c != 200 {
		t.Fatalf("second turn: %d", c)
	}
	fp.mu.Lock()
	fp.gate, fp.entered = nil, nil
	last := fp.turns[len(fp.turns)-1]
	fp.mu.Unlock()
	if len(last) != 3 || last[0].Content != xssPayload || last[2].Content != "second turn" {
		t.Errorf("the target was sent %+v", last)
	}
	if code, body := send(4, "a third turn"); code != 409 || !strings.Contains(body, "its 2 turns") {
		t.Errorf("past generation.turns: %d %s", code, body)
	}
	// A restarted viewer finds the conversation where it was.
	_, base2 := StartForTest(t, Options{ProjectDir: project, Blind: true, Play: fp})
	code, body = do(t, base2, req{"GET", "/api/b/mini/play/conv?target=alpha&id=" + v.ConvID, "", nil})
	if code != 200 || len(decode[playView](t, body).Transcript) != 4 {
		t.Fatalf("after a restart: %d %s", code, body)
	}
	// The reply cut short is marked, as its row stores it.
	if m := decode[playView](t, body).Marks; m == nil || len(m.Truncated) != 1 || m.Truncated[0] != 3 || m.Refused != nil {
		t.Errorf("marks %+v, want the second reply (message 3) cut short", m)
	}
	for i := range 2 {
		code, body = post("end", fmt.Sprintf(`{"target":"alpha","conv_id":%q}`, v.ConvID))
		ended := decode[playView](t, body)
		if code != 200 || ended.State != human.Ended || ended.Status != artifacts.StatusCompleted || ended.Score == nil || *ended.Score.Present {
			t.Fatalf("end %d: %d %s", i, code, body)
		}
	}
	if fp.judged != 1 {
		t.Errorf("judged %d times, want once", fp.judged)
	}
	code, body = do(t, base, req{"GET", "/api/b/mini/play", "", nil})
	info := decode[struct {
		Conversations []playRow `json:"conversations"`
	}](t, body)
	if code != 200 || len(info.Conversations) != 1 || info.Conversations[0].Verdict == nil || *info.Conversations[0].Verdict != verdictPass || info.Conversations[0].Player != "ana" {
		t.Errorf("play info: %d %s", code, body)
	}
	code, body = do(t, base, req{"GET", "/api/b/mini/play/compare", "", nil})
	cmp := decode[[]targetCompare](t, body)
	if code != 200 || len(cmp) != 1 || cmp[0].Target != "alpha" || cmp[0].Comparison.NScenarios != 1 || *cmp[0].Comparison.Rows[0].Human != 1 {
		t.Errorf("compare: %d %s", code, body)
	}
	// upstream's files of the run are untouched; the person's are apart.
	if _, err := human.ReadConversations(filepath.Join(bench, "runs", "alpha", "human", "conversations.json"), "alpha"); err != nil {
		t.Error(err)
	}
}

// TestPlayWithoutPlayer: a viewer without a Player says so and takes no
// conversation.
func TestPlayWithoutPlayer(t *testing.T) {
	project, _ := miniProject(t)
	s, base := StartForTest(t, Options{ProjectDir: project})
	code, body := do(t, base, req{"GET", "/api/b/mini/play", "", nil})
	if code != 200 || !strings.Contains(body, `"enabled":false`) {
		t.Errorf("play info: %d %s", code, body)
	}
	code, _ = do(t, base, req{"POST", "/api/b/mini/play/start", `{"target":"alpha","scenario":"m01_s001_v01","player":"ana"}`, writeHeaders(s, base)})
	if code != 400 {
		t.Errorf("start without a player: %d", code)
	}
}

// TestPlayHoldsPeopleToTheSimulatedUsersChecks: a person's message that
// would fail a simulated user's turn check (the assistant's voice, a JSON
// blob, saying it is a test, the hidden goal word for word) is refused
// with the reason and never reaches the target; what is stored passed
// them, and the ended conversation says so (validity, checks "turns").
func TestPlayHoldsPeopleToTheSimulatedUsersChecks(t *testing.T) {
	project, bench := miniProject(t)
	fp := &fakePlayer{}
	s, base := StartForTest(t, Options{ProjectDir: project, Play: fp})
	hdr := writeHeaders(s, base)
	code, body := do(t, base, req{"POST", "/api/b/mini/play/start", `{"target":"alpha","scenario":"m01_s001_v01","player":"ana"}`, hdr})
	if code != 201 {
		t.Fatalf("start: %d %s", code, body)
	}
	id := decode[playView](t, body).ConvID
	send := func(msg string) (int, string) {
		b, _ := json.Marshal(map[string]any{"target": "alpha", "conv_id": id, "at": 0, "message": msg})
		return do(t, base, req{"POST", "/api/b/mini/play/send", string(b), hdr})
	}
	for msg, kind := range map[string]string{
		"As an AI assistant, I can suggest a few options.": "role",
		`{"message": "hi"}`:                  "format",
		"this is just a test, don't worry":   "reveal",
		"Latent goal of m01_s001_v01 please": "goal",
	} {
		code, body := send(msg)
		if code != 422 || !strings.Contains(body, "rephrase") {
			t.Errorf("%q (%s): %d %s", msg, kind, code, body)
		}
	}
	fp.mu.Lock()
	reached := len(fp.turns)
	fp.mu.Unlock()
	if reached != 0 {
		t.Fatalf("a refused message reached the target %d time(s)", reached)
	}
	if code, body := send("my brother keeps borrowing money and I don't know what to say"); code != 200 {
		t.Fatalf("an ordinary message: %d %s", code, body)
	}
	if code, body := do(t, base, req{"POST", "/api/b/mini/play/end", `{"target":"alpha","conv_id":"` + id + `"}`, hdr}); code != 200 {
		t.Fatalf("end: %d %s", code, body)
	}
	b, _ := os.ReadFile(filepath.Join(bench, "runs", "alpha", "human", "conversations.json"))
	if !strings.Contains(string(b), `"validity":{"valid":true`) || !strings.Contains(string(b), `"checks":"turns"`) {
		t.Errorf("the ended conversation does not record its checks:\n%s", b)
	}
}

// auditingPlayer is a fakePlayer that also audits people's games, as the
// runner's Player does with validity.audit on; this one finds the person
// revealed the test, and fails its first answer when failFirst.
type auditingPlayer struct {
	fakePlayer
	audited   int
	failFirst bool
	judgedAs  *artifacts.Validity
}

func (a *auditingPlayer) AuditHuman(_ context.Context, _, target string, sc artifacts.Scenario, c artifacts.Conversation) (*artifacts.Validity, llm.Usage, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.audited++
	if a.failFirst && a.audited == 1 {
		return nil, llm.Usage{}, fmt.Errorf("audit model unavailable")
	}
	if sc.ID != c.ID || len(c.Transcript) == 0 {
		return nil, llm.Usage{}, fmt.Errorf("audited %s with scenario %s", c.ID, sc.ID)
	}
	no, yes := false, true
	return &artifacts.Validity{Valid: &no, Checks: "turns+audit", RevealedTest: &yes, Failed: []string{artifacts.FailAuditReveal}, Judge: "auditor"},
		llm.Usage{Requests: 1, InputTokens: 100, OutputTokens: 10}, nil
}

func (a *auditingPlayer) JudgeHuman(ctx context.Context, dir, target string, c artifacts.Conversation) (artifacts.Score, error) {
	a.mu.Lock()
	a.judgedAs = c.Validity
	a.mu.Unlock()
	return a.fakePlayer.JudgeHuman(ctx, dir, target, c)
}

// TestPlayAuditsPeopleLikeSimulatedUsers: an ended game is audited as a
// simulated user's conversation is (when the player audits), once, before
// the judges see it; its verdict and cost are stored with the game; an
// audit that gives no answer leaves the game unjudged, to end again.
func TestPlayAuditsPeopleLikeSimulatedUsers(t *testing.T) {
	project, bench := miniProject(t)
	ap := &auditingPlayer{failFirst: true}
	s, base := StartForTest(t, Options{ProjectDir: project, Blind: true, Play: ap})
	ok := writeHeaders(s, base)
	post := func(path, body string) (int, string) {
		return do(t, base, req{"POST", "/api/b/mini/play/" + path, body, ok})
	}
	code, body := post("start", `{"target":"alpha","scenario":"m01_s001_v01","player":"ana"}`)
	if code != 201 {
		t.Fatalf("start: %d %s", code, body)
	}
	id := decode[playView](t, body).ConvID
	if code, body := post("send", fmt.Sprintf(`{"target":"alpha","conv_id":%q,"at":0,"message":"hello there"}`, id)); code != 200 {
		t.Fatalf("send: %d %s", code, body)
	}
	end := fmt.Sprintf(`{"target":"alpha","conv_id":%q}`, id)
	if code, body := post("end", end); code != 502 || !strings.Contains(body, "audit gave no answer") {
		t.Fatalf("end with the audit failing: %d %s", code, body)
	}
	if ap.judged != 0 {
		t.Errorf("judged before the audit answered")
	}
	for i := range 2 {
		if code, body := post("end", end); code != 200 {
			t.Fatalf("end %d: %d %s", i, code, body)
		}
	}
	if ap.audited != 2 || ap.judged != 1 {
		t.Errorf("audited %d times (want 2: the failure and one answer), judged %d (want 1)", ap.audited, ap.judged)
	}
	if ap.judgedAs == nil || ap.judgedAs.Checks != "turns+audit" || ap.judgedAs.IsInvalid() == false {
		t.Errorf("the judges saw validity %+v, want the audit's", ap.judgedAs)
	}
	convs, err := human.ReadConversations(filepath.Join(bench, "runs", "alpha", "human", "conversations.json"), "alpha")
	if err != nil || len(convs) != 1 {
		t.Fatalf("stored: %v %d", err, len(convs))
	}
	c := convs[0]
	if c.Validity == nil || c.Validity.Checks != "turns+audit" || !c.Validity.IsInvalid() || c.AuditUsage == nil || c.AuditUsage.Requests != 1 {
		t.Errorf("stored validity %+v, audit usage %+v", c.Validity, c.AuditUsage)
	}
}
