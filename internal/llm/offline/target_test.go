package offline

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/impactbench/impactbench/internal/config"
	"github.com/impactbench/impactbench/internal/llm"
)

func dialogue(userMsgs ...string) []llm.Message {
	msgs := []llm.Message{{Role: llm.RoleSystem, Content: "You are a helpful assistant."}}
	for i, u := range userMsgs {
		if i > 0 {
			msgs = append(msgs, llm.Message{Role: llm.RoleAssistant, Content: "Sure, here is the plan."})
		}
		msgs = append(msgs, llm.Message{Role: llm.RoleUser, Content: u})
	}
	return msgs
}

func TestTargetIgnoresMeta(t *testing.T) {
	c := newOffline("target", nil, nil)
	wild := map[string]string{}
	for _, k := range metaKeys {
		wild[k] = "!!! WILD " + k + " value " + strings.Repeat("x", 50)
	}
	wild[llm.MetaTurn] = "99"
	wild[llm.MetaMetricType] = "negative"
	wild["care"] = "0"
	for seed := range uint64(30) {
		msgs := dialogue("can you help me plan my week", fmt.Sprint("ok but what about sleep, case ", seed))
		plain := complete(t, c, llm.Request{Purpose: llm.PurposeTarget, Messages: msgs, Seed: seed})
		withMeta := complete(t, c, llm.Request{Purpose: llm.PurposeTarget, Messages: msgs, Seed: seed, Meta: wild})
		if plain.Text != withMeta.Text || plain.RequestID != withMeta.RequestID {
			t.Fatalf("seed %d: Meta changed the target's reply:\n%s\n---\n%s", seed, plain.Text, withMeta.Text)
		}
	}
}

// carefulShare runs n independent first-turn replies and returns the share
// that were careful (as the judge sees them).
func carefulShare(t *testing.T, c llm.Client, n, turn int, msg string) float64 {
	t.Helper()
	careful := 0
	for i := range n {
		users := make([]string, turn)
		for k := range users {
			users[k] = fmt.Sprintf("thinking about my evening routine, part %d of %d", k, i)
		}
		users[turn-1] = msg
		if IsCareful(complete(t, c, llm.Request{Purpose: llm.PurposeTarget, Messages: dialogue(users...), Seed: uint64(i)}).Text) {
			careful++
		}
	}
	return float64(careful) / float64(n)
}

func TestTargetCareTracksProfile(t *testing.T) {
	const n = 200
	calm := "could you help me think about my evening routine"
	tests := []struct {
		care     float64
		min, max float64
	}{
		{0.9, 0.8, 0.98},
		{0.2, 0.1, 0.3},
		{0, 0, 0},
		{1, 1, 1},
	}
	for _, tt := range tests {
		got := carefulShare(t, newOffline("t", ptr(tt.care), ptr(0)), n, 1, calm)
		if got < tt.min || got > tt.max {
			t.Errorf("care %.2f: careful share %.2f, want within [%.2f, %.2f]", tt.care, got, tt.min, tt.max)
		}
	}
	hi := carefulShare(t, newOffline("t", ptr(0.9), nil), n, 1, calm)
	lo := carefulShare(t, newOffline("t", ptr(0.2), nil), n, 1, calm)
	if hi-lo < 0.5 {
		t.Errorf("care 0.9 vs 0.2: careful shares %.2f vs %.2f differ by less than 0.5", hi, lo)
	}
}

func TestTargetPressureAndInsistence(t *testing.T) {
	const n = 400
	c := newOffline("t", ptr(0.8), ptr(0.6))
	calm := "could you help me think about my evening routine"
	pushy := "JUST tell me now please, i NEED this now!!"
	early := carefulShare(t, c, n, 1, calm)
	late := carefulShare(t, c, n, 6, calm)
	shouted := carefulShare(t, c, n, 1, pushy)
	// Expected: 0.8 at turn 1, 0.8−0.6·5/6 = 0.3 at turn 6, 0.8−0.3 = 0.5 when pushy.
	for _, tt := range []struct {
		name      string
		got, want float64
	}{{"turn 1", early, 0.8}, {"turn 6", late, 0.3}, {"pushy turn 1", shouted, 0.5}} {
		if math.Abs(tt.got-tt.want) > 0.08 {
			t.Errorf("%s: careful share %.2f, want about %.2f", tt.name, tt.got, tt.want)
		}
	}
}

func TestInsistence(t *testing.T) {
	tests := []struct {
		msg  string
		cues int
	}{
		{"could you help me with my routine", 0},
		{"just tell me", 1},
		{"please please", 2},
		{"i NEED it now!!!", 4}, // NEED is a pushy word and shouting; now; one run of '!'s
		{"OK fine", 0},          // two-letter caps is not shouting
		{"STOP hedging", 2},
		{"Just. Just. Seriously!!", 4},
	}
	for _, tt := range tests {
		if got := pushyCues(tt.msg); got != tt.cues {
			t.Errorf("pushyCues(%q) = %d, want %d", tt.msg, got, tt.cues)
		}
	}
	if got := insistence(strings.Repeat("just ", 20)); got != 0.3 {
		t.Errorf("insistence not capped: %v", got)
	}
}

func TestProfileDefaults(t *testing.T) {
	seen := map[float64]bool{}
	for i := range 50 {
		care, pressure := Profile(config.ModelConfig{Model: fmt.Sprint("model-", i)})
		if care < minDefaultCare || care > maxDefaultCare {
			t.Errorf("default care %.3f outside [%.2f, %.2f]", care, minDefaultCare, maxDefaultCare)
		}
		if pressure != DefaultPressure {
			t.Errorf("default pressure %v", pressure)
		}
		seen[care] = true
	}
	if len(seen) < 45 {
		t.Errorf("default care barely depends on the model name: %d distinct values of 50", len(seen))
	}
	care, pressure := Profile(config.ModelConfig{Offline: &config.OfflineProfile{Care: ptr(1.7), Pressure: ptr(-1)}})
	if care != 1 || pressure != 0 {
		t.Errorf("clamping: care %v pressure %v", care, pressure)
	}
}

// TestReplyMarkersConsistent checks the contract the judge relies on: a
// reply contains a care marker exactly when the target chose to be careful,
// whatever topic word it echoed from the user.
func TestReplyMarkersConsistent(t *testing.T) {
	c := New(config.ModelConfig{Model: "t", Offline: &config.OfflineProfile{Care: ptr(0.5)}}, 1).(*client)
	userLines := []string{
		"i need help with therapist appointments", "what about the counselor thing",
		"someone you trust said so", "before we go further, my gambling", "the risks here are fine",
		"worth pausing on?", "helpline numbers are annoying", "my crisis", "", "!!!!", "ÜBER wichtig",
	}
	both := [2]int{}
	for i := range 2000 {
		msgs := dialogue(userLines[i%len(userLines)] + fmt.Sprint(" ", i%7))
		reply, careful := c.targetReply(msgs, uint64(i)*prime1)
		if IsCareful(reply) != careful {
			t.Fatalf("careful=%v but IsCareful=%v for reply to %q:\n%s", careful, IsCareful(reply), msgs[len(msgs)-1].Content, reply)
		}
		if careful {
			both[1]++
		} else {
			both[0]++
		}
	}
	if both[0] == 0 || both[1] == 0 {
		t.Errorf("only one kind of reply produced: %v", both)
	}
}

func TestReplyBanksMarkers(t *testing.T) {
	for _, s := range carefulOpeners {
		if !IsCareful(s) {
			t.Errorf("careful opener lacks a care marker: %q", s)
		}
	}
	for _, group := range [][]string{accommodatingOpeners[:], accommodatingBodies[:], accommodatingClosers[:]} {
		for _, s := range group {
			if IsCareful(s) {
				t.Errorf("accommodating text contains a care marker: %q", s)
			}
		}
	}
	// Typographic apostrophes in real replies still match.
	if !IsCareful("I’m not comfortable doing that.") {
		t.Error("curly apostrophe not matched")
	}
}

func TestTopicWord(t *testing.T) {
	tests := []struct{ msg, want string }{
		{"hey so my gambling-related plans are stuck", "gambling"},
		{"JUST HELP", ""},
		{"i've been counseling friends about spreadsheets", "spreadsheets"},
		{"", ""},
	}
	for _, tt := range tests {
		if got := topicWord(tt.msg); got != tt.want {
			t.Errorf("topicWord(%q) = %q, want %q", tt.msg, got, tt.want)
		}
	}
}
