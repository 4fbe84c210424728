// Package human keeps the conversations people played as the user against
// a target (the viewer's Play page) and their verdicts, apart from the
// simulated ones: runs/<target>/human/conversations.json and scores.json.
// conversations.json and scores.json of runs/<target>/ — upstream's files,
// one row per scenario × sample, written by the runner's ordered writers —
// are never touched.
//
// Rows have upstream's conversation and score shapes, followed by what
// only a person's conversation has: "user": "human", the player's name,
// the state (playing, ended) and timestamps. A conversation's conv_id is
// <scenario id>__<target>__h<k> and its sample k: the k-th conversation
// people played of that scenario against that target.
//
// Every change is a read-modify-write of one target's file under an
// exclusive lock — a mutex in this process and a lock file against
// another process — and every file is replaced atomically (package fsx),
// so two browser tabs, or two viewers over one project, cannot interleave
// their writes, and a crash leaves the old file or the new one. A
// conversation being played is stored after every turn, so it survives a
// restart.
package human

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/impactbench/impactbench/internal/artifacts"
	"github.com/impactbench/impactbench/internal/ids"
)

// User is the "user" of every row: a person played the user.
const User = "human"

// Conversation states.
const (
	Playing = "playing" // the person may send another message
	Ended   = "ended"   // finished: judged, or to be judged
)

// MaxPlayer bounds a player's name, as the viewer bounds a labeller's.
const MaxPlayer = 100

// Conversation is one runs/<target>/human/conversations.json row: a
// conversations.json row as upstream shapes it (the dialogue the person
// and the target made; run.user_model is "human"), then who played it and
// when.
type Conversation struct {
	artifacts.Conversation
	Extra
}

// Extra is what a person's conversation adds after upstream's keys.
type Extra struct {
	User      string     `json:"user"`
	Player    string     `json:"player"`
	State     string     `json:"state"`
	StartedAt time.Time  `json:"started_at"`
	UpdatedAt time.Time  `json:"updated_at"`
	EndedAt   *time.Time `json:"ended_at,omitempty"`
}

// Score is one runs/<target>/human/scores.json row: the verdict as every
// scores.json row holds it (the same judges and prompt; they are not told
// a person played), then who played and when it was judged.
type Score struct {
	artifacts.Score
	User     string    `json:"user"`
	Player   string    `json:"player"`
	JudgedAt time.Time `json:"judged_at"`
}

// ConvID is the conv_id of the k-th conversation people played of scenario
// against target.
func ConvID(scenario, target string, k int) string {
	return scenario + "__" + target + "__h" + strconv.Itoa(k)
}

// Turns is how many user turns c holds.
func (c *Conversation) Turns() int { return (len(c.Transcript) + 1) / 2 }

// CheckPlayer says what is wrong with a player's name ("" when nothing).
func CheckPlayer(name string) string {
	switch {
	case strings.TrimSpace(name) == "":
		return "it is empty: say who you are"
	case name != strings.TrimSpace(name):
		return "it starts or ends with a space"
	case !utf8.ValidString(name):
		return "it is not valid UTF-8"
	case utf8.RuneCountInString(name) > MaxPlayer:
		return fmt.Sprintf("it is longer than %d characters", MaxPlayer)
	case strings.IndexFunc(name, unicode.IsControl) >= 0:
		return "it contains a control character"
	}
	return ""
}

// checkTarget refuses a target name that is not an id: it becomes a
// directory name.
func checkTarget(target string) error {
	if p := ids.Problem(target, ids.MaxName); p != "" {
		return fmt.Errorf("target %s: %s", ids.Quote(target), p)
	}
	return nil
}

// checkConversation holds a row to what this package writes.
func checkConversation(c *Conversation, target string) error {
	if err := checkCommon(c.User, c.Player, c.TargetModel, c.ID, c.ConvID, c.Sample, target); err != nil {
		return err
	}
	switch {
	case c.State != Playing && c.State != Ended:
		return artifacts.FieldErrorf("state", "%q: want %q or %q", c.State, Playing, Ended)
	case (c.State == Ended) != (c.EndedAt != nil):
		return artifacts.FieldErrorf("ended_at", "an ended conversation has ended_at, a conversation being played has none")
	case c.StartedAt.IsZero():
		return artifacts.FieldErrorf("started_at", "missing")
	}
	if len(c.Transcript)%2 != 0 {
		return artifacts.FieldErrorf("transcript", "%d messages: a person's conversation is stored in user/assistant pairs", len(c.Transcript))
	}
	for i, t := range c.Transcript {
		want := "user"
		if i%2 == 1 {
			want = "assistant"
		}
		if t.Role != want {
			return artifacts.FieldErrorf(fmt.Sprintf("transcript[%d].role", i), "%q: want %q (user and assistant in turn)", t.Role, want)
		}
	}
	return nil
}

// checkCommon holds what both files' rows share.
func checkCommon(user, player, rowTarget, id, convID string, sample int, target string) error {
	switch {
	case user != User:
		return artifacts.FieldErrorf("user", "%q: every row here was played by a person (%q)", user, User)
	case CheckPlayer(player) != "":
		return artifacts.FieldErrorf("player", "%s", CheckPlayer(player))
	case rowTarget != target:
		return artifacts.FieldErrorf("target_model", "%q: this file belongs to target %q", rowTarget, target)
	case convID != ConvID(id, target, sample):
		return artifacts.FieldErrorf("conv_id", "%q: want %q (scenario, target and the conversation's number)", convID, ConvID(id, target, sample))
	}
	return nil
}

// ErrNotFound: no such conversation.
var ErrNotFound = errors.New("no such conversation")

// StaleError: the conversation is not where the caller thought it was
// (another tab moved it on, or it ended).
type StaleError struct{ Msg string }

func (e *StaleError) Error() string { return e.Msg }
