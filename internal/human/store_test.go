package human

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/impactbench/impactbench/internal/artifacts"
	"github.com/impactbench/impactbench/internal/layout"
	"github.com/impactbench/impactbench/internal/llm"
)

var t0 = time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)

func scenario() artifacts.Scenario {
	return artifacts.Scenario{ID: "m01_s001_v01", MetricID: "m01", Persona: "p", UserGoal: "g"}
}

func user(s string) artifacts.Turn  { return artifacts.Turn{Role: "user", Content: s} }
func reply(s string) artifacts.Turn { return artifacts.Turn{Role: "assistant", Content: s} }

var call = llm.Usage{Requests: 1, InputTokens: 10, OutputTokens: 5, Cost: 0.001, CostKnown: true}

func convsPath(bench, target string) string {
	return layout.Bench{Dir: bench}.Run(target).HumanConversations()
}

func TestPlayEndScoreRoundTrip(t *testing.T) {
	bench := t.TempDir()
	s := Open(bench)
	c, err := s.Start("alpha", scenario(), "ana", artifacts.RunInfo{TargetModel: "offline/alpha", Turns: 3, Landmarks: true}, t0)
	if err != nil {
		t.Fatal(err)
	}
	if c.ConvID != "m01_s001_v01__alpha__h0" || c.Sample != 0 || c.State != Playing || c.Run.UserModel != User || c.User != User {
		t.Fatalf("started %+v", c)
	}
	c2, err := s.Start("alpha", scenario(), "bo", artifacts.RunInfo{}, t0)
	if err != nil || c2.ConvID != "m01_s001_v01__alpha__h1" {
		t.Fatalf("second conversation of the scenario: %+v %v", c2, err)
	}
	c, err = s.Reply("alpha", c.ConvID, 0, user("hi"), reply("hello"), false, call, 3, t0.Add(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	c, err = s.Reply("alpha", c.ConvID, 2, user("and?"), reply("so"), true, call, 3, t0.Add(2*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Transcript) != 4 || c.Usage.Requests != 2 || c.Usage.Cost != 0.002 || len(c.Truncated) != 1 || c.Truncated[0] != 3 {
		t.Errorf("after two turns: %+v", c)
	}
	// A new store (a restarted viewer) finds it half-played and goes on.
	s = Open(bench)
	got, sc, err := s.Get("alpha", c.ConvID)
	if err != nil || got.State != Playing || len(got.Transcript) != 4 || sc != nil {
		t.Fatalf("after a restart: %+v %v %v", got, sc, err)
	}
	ended, err := s.End("alpha", c.ConvID, 3, t0.Add(3*time.Second))
	if err != nil || ended.State != Ended || ended.Status != artifacts.StatusUserTerminated || ended.EndedAt == nil {
		t.Fatalf("ended %+v %v", ended, err)
	}
	again, err := s.End("alpha", c.ConvID, 3, t0.Add(time.Hour))
	if err != nil || !again.EndedAt.Equal(*ended.EndedAt) {
		t.Errorf("ending twice changed it: %+v %v", again, err)
	}
	if _, err := s.Reply("alpha", c.ConvID, 4, user("x"), reply("y"), false, call, 3, t0); !isStale(err) {
		t.Errorf("reply to an ended conversation: %v", err)
	}
	present, passed := true, false
	score := Score{Score: artifacts.Score{ID: c.ID, MetricID: c.MetricID, TargetModel: "alpha", Sample: c.Sample, ConvID: c.ConvID,
		Present: &present, Passed: &passed, Justification: "it did"}, User: User, Player: "ana", JudgedAt: t0}
	if err := s.SetScore("alpha", score); err != nil {
		t.Fatal(err)
	}
	score.Justification = "judged again"
	if err := s.SetScore("alpha", score); err != nil {
		t.Fatal(err)
	}
	score2 := score
	score2.ConvID, score2.Sample = c2.ConvID, c2.Sample
	if err := s.SetScore("alpha", score2); !isStale(err) {
		t.Errorf("a score for a conversation still being played: %v", err)
	}
	convs, scores, err := s.List("alpha")
	if err != nil || len(convs) != 2 || len(scores) != 1 || scores[0].Justification != "judged again" {
		t.Fatalf("list: %d convs, %+v, %v", len(convs), scores, err)
	}

	// Upstream's readers read the rows; ours come after upstream's keys.
	path := convsPath(bench, "alpha")
	up, err := artifacts.ReadConversations(path)
	if err != nil || len(up) != 2 || up[0].Transcript[1].Content != "hello" {
		t.Fatalf("upstream reader: %v", err)
	}
	b, _ := os.ReadFile(path)
	var raw []json.RawMessage
	if err := json.Unmarshal(b, &raw); err != nil {
		t.Fatal(err)
	}
	var o artifacts.Object
	if err := o.UnmarshalJSON(raw[0]); err != nil {
		t.Fatal(err)
	}
	keys := strings.Join(keysOf(o), ",")
	if !strings.HasPrefix(keys, "id,metric_id,conv_id,_sample,target_model,transcript,_usage,") || !strings.HasSuffix(keys, "user,player,state,started_at,updated_at,ended_at") {
		t.Errorf("row keys %s", keys)
	}
	if _, err := artifacts.ReadScores(layout.Run{Dir: filepath.Dir(filepath.Dir(path))}.HumanScores()); err != nil {
		t.Errorf("upstream score reader: %v", err)
	}
}

func keysOf(o artifacts.Object) []string {
	var out []string
	for _, p := range o {
		out = append(out, p.Key)
	}
	return out
}

func isStale(err error) bool {
	var se *StaleError
	return errors.As(err, &se)
}

func TestEndStatus(t *testing.T) {
	s := Open(t.TempDir())
	c, _ := s.Start("alpha", scenario(), "ana", artifacts.RunInfo{}, t0)
	if _, err := s.End("alpha", c.ConvID, 2, t0); !isStale(err) {
		t.Errorf("ending an empty conversation: %v", err)
	}
	for at := 0; at < 4; at += 2 {
		if _, err := s.Reply("alpha", c.ConvID, at, user("u"), reply("r"), false, call, 2, t0); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.Reply("alpha", c.ConvID, 4, user("u"), reply("r"), false, call, 2, t0); !isStale(err) {
		t.Errorf("a turn past generation.turns: %v", err)
	}
	e, err := s.End("alpha", c.ConvID, 2, t0)
	if err != nil || e.Status != artifacts.StatusCompleted || e.StatusReason != "" || e.Run.Turns != 2 {
		t.Errorf("ended after all turns: %+v %v", e, err)
	}
}

// TestStaleTurnLeavesFile: a send from a tab that has not seen the last
// turn is refused and the file keeps its bytes.
func TestStaleTurnLeavesFile(t *testing.T) {
	bench := t.TempDir()
	s := Open(bench)
	c, _ := s.Start("alpha", scenario(), "ana", artifacts.RunInfo{}, t0)
	if _, err := s.Reply("alpha", c.ConvID, 0, user("a"), reply("b"), false, call, 5, t0); err != nil {
		t.Fatal(err)
	}
	before, _ := os.ReadFile(convsPath(bench, "alpha"))
	for _, at := range []int{0, 1, 3} {
		if _, err := s.Reply("alpha", c.ConvID, at, user("x"), reply("y"), false, call, 5, t0); !isStale(err) {
			t.Errorf("at %d: %v", at, err)
		}
	}
	if _, err := s.Reply("alpha", "nope__alpha__h0", 0, user("x"), reply("y"), false, call, 5, t0); !errors.Is(err, ErrNotFound) {
		t.Errorf("unknown conversation: %v", err)
	}
	after, _ := os.ReadFile(convsPath(bench, "alpha"))
	if !bytes.Equal(before, after) {
		t.Error("a refused turn changed the file")
	}
}

// TestTwoTabsCannotCorrupt: many sends race for the same turns, through
// one store (two tabs of one viewer) and through two (two viewers, kept
// apart by the lock file): each turn is taken exactly once and the file
// stays a valid, ordered conversation.
func TestTwoTabsCannotCorrupt(t *testing.T) {
	bench := t.TempDir()
	stores := []*Store{Open(bench), Open(bench)}
	c, _ := stores[0].Start("alpha", scenario(), "ana", artifacts.RunInfo{}, t0)
	const turns = 6
	var wg sync.WaitGroup
	var mu sync.Mutex
	won := map[int]int{}
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s := stores[w%2]
			for at := 0; at < 2*turns; at += 2 {
				_, err := s.Reply("alpha", c.ConvID, at, user("u"+string(rune('a'+w))), reply("r"), false, call, turns, t0)
				switch {
				case err == nil:
					mu.Lock()
					won[at]++
					mu.Unlock()
				case !isStale(err):
					t.Errorf("writer %d at %d: %v", w, at, err)
				}
			}
		}()
	}
	wg.Wait()
	got, _, err := Open(bench).Get("alpha", c.ConvID)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Transcript) != 2*turns || got.Usage.Requests != turns {
		t.Errorf("%d messages, %d calls counted; want %d, %d", len(got.Transcript), got.Usage.Requests, 2*turns, turns)
	}
	for at, n := range won {
		if n != 1 {
			t.Errorf("turn at %d taken %d times", at, n)
		}
	}
}

// TestDamagedFileIsAnInputError: a hand-edited row is refused with its
// file, row and field, and no write goes through it.
func TestDamagedFileIsAnInputError(t *testing.T) {
	bench := t.TempDir()
	s := Open(bench)
	c, _ := s.Start("alpha", scenario(), "ana", artifacts.RunInfo{}, t0)
	path := convsPath(bench, "alpha")
	for name, edit := range map[string][2]string{
		"user":    {`"user":"human"`, `"user":"offline-user"`},
		"conv_id": {`"conv_id":"m01_s001_v01__alpha__h0"`, `"conv_id":"m01_s001_v01__beta__h0"`},
		"state":   {`"state":"playing"`, `"state":"paused"`},
		"player":  {`"player":"ana"`, `"player":""`},
	} {
		good, _ := os.ReadFile(path)
		bad := bytes.Replace(good, []byte(edit[0]), []byte(edit[1]), 1)
		if bytes.Equal(good, bad) {
			t.Fatalf("%s: edit did not apply to %s", name, good)
		}
		if err := os.WriteFile(path, bad, 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := s.Reply("alpha", c.ConvID, 0, user("a"), reply("b"), false, call, 5, t0)
		var fe *artifacts.FileError
		if !errors.As(err, &fe) || fe.Row != 0 || fe.Field != name || fe.Path != path {
			t.Errorf("%s: error %v", name, err)
		}
		if after, _ := os.ReadFile(path); !bytes.Equal(after, bad) {
			t.Errorf("%s: the damaged file was rewritten", name)
		}
		if err := os.WriteFile(path, good, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func TestRefusedNames(t *testing.T) {
	s := Open(t.TempDir())
	for _, target := range []string{"../x", "a/b", "", ".."} {
		if _, err := s.Start(target, scenario(), "ana", artifacts.RunInfo{}, t0); err == nil {
			t.Errorf("target %q accepted", target)
		}
	}
	for _, p := range []string{"", " ana", "a\x00b", strings.Repeat("x", MaxPlayer+1)} {
		if _, err := s.Start("alpha", scenario(), p, artifacts.RunInfo{}, t0); err == nil {
			t.Errorf("player %q accepted", p)
		}
	}
}
