package human

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/impactbench/impactbench/internal/artifacts"
	"github.com/impactbench/impactbench/internal/fsx"
	"github.com/impactbench/impactbench/internal/layout"
	"github.com/impactbench/impactbench/internal/llm"
)

// Dir is layout.Run.Human, kept for the runner's tests.
//
// Deprecated: use layout.Run.Human.
func Dir(runDir string) string { return layout.Run{Dir: runDir}.Human() }

// ScoresFile is layout.ScoresFile, kept for the runner's tests.
//
// Deprecated: use layout.Run.HumanScores.
const ScoresFile = layout.ScoresFile

// Store is the human-played conversations of one benchmark directory.
// Its methods are safe for concurrent use (see the package comment).
type Store struct {
	benchDir string
	mu       sync.Mutex
}

// Open returns the store of the benchmark in benchDir (nothing is read
// or created until used).
func Open(benchDir string) *Store { return &Store{benchDir: benchDir} }

// run is target's run directory, whose human/ holds the store's files.
func (s *Store) run(target string) (layout.Run, error) {
	if err := checkTarget(target); err != nil {
		return layout.Run{}, err
	}
	return layout.Bench{Dir: s.benchDir}.Run(target), nil
}

// List returns target's conversations and scores, in the order they
// were started (none when nothing was played).
func (s *Store) List(target string) ([]Conversation, []Score, error) {
	run, err := s.run(target)
	if err != nil {
		return nil, nil, err
	}
	convs, err := ReadConversations(run.HumanConversations(), target)
	if err != nil {
		return nil, nil, err
	}
	scores, err := ReadScores(run.HumanScores(), target)
	return convs, scores, err
}

// Get returns one conversation and its score (nil when not judged).
func (s *Store) Get(target, convID string) (Conversation, *Score, error) {
	convs, scores, err := s.List(target)
	if err != nil {
		return Conversation{}, nil, err
	}
	i := slices.IndexFunc(convs, func(c Conversation) bool { return c.ConvID == convID })
	if i < 0 {
		return Conversation{}, nil, ErrNotFound
	}
	return convs[i], scoreOf(scores, convID), nil
}

func scoreOf(scores []Score, convID string) *Score {
	for i := range scores {
		if scores[i].ConvID == convID {
			return &scores[i]
		}
	}
	return nil
}

// Start begins a conversation of scenario sc against target, played by
// player: the next free number of that scenario and target, no messages
// yet. run describes the target side (its user_model is set to "human").
func (s *Store) Start(target string, sc artifacts.Scenario, player string, run artifacts.RunInfo, now time.Time) (Conversation, error) {
	if p := CheckPlayer(player); p != "" {
		return Conversation{}, fmt.Errorf("player name: %s", p)
	}
	var out Conversation
	err := s.update(target, func(convs []Conversation) ([]Conversation, error) {
		k := 0
		for _, c := range convs {
			if c.ID == sc.ID {
				k = max(k, c.Sample+1)
			}
		}
		run.UserModel = User
		now := stamp(now)
		out = Conversation{
			Conversation: artifacts.Conversation{ID: sc.ID, MetricID: sc.MetricID, ConvID: ConvID(sc.ID, target, k), Sample: k,
				TargetModel: target, Transcript: []artifacts.Turn{}, Run: &run},
			Extra: Extra{User: User, Player: player, State: Playing, StartedAt: now, UpdatedAt: now},
		}
		if err := checkConversation(&out, target); err != nil {
			return nil, err
		}
		return append(convs, out), nil
	})
	return out, err
}

// Reply adds one turn — the person's message and the target's reply — to
// a conversation being played that holds at messages, and at most
// maxTurns-1 turns. A conversation that moved on (another tab) or ended
// is a *StaleError, and the file is left as it was.
func (s *Store) Reply(target, convID string, at int, user, reply artifacts.Turn, truncated bool, usage llm.Usage, maxTurns int, now time.Time) (Conversation, error) {
	var out Conversation
	err := s.change(target, convID, func(c *Conversation) error {
		if err := c.CanReply(at, maxTurns); err != nil {
			return err
		}
		c.Transcript = append(c.Transcript, user, reply)
		if truncated {
			c.Truncated = append(c.Truncated, len(c.Transcript)-1)
		}
		c.Usage = addUsage(c.Usage, usage)
		c.UpdatedAt = stamp(now)
		out = *c
		return nil
	})
	return out, err
}

// CanReply says whether a turn may be added to c by a page that shows at
// messages: nil, or a *StaleError saying why not.
func (c *Conversation) CanReply(at, maxTurns int) error {
	switch {
	case c.State != Playing:
		return &StaleError{Msg: "the conversation has ended"}
	case len(c.Transcript) != at:
		return &StaleError{Msg: fmt.Sprintf("the conversation has %d messages, not %d: it moved on (in another tab?); reload it", len(c.Transcript), at)}
	case c.Turns() >= maxTurns:
		return &StaleError{Msg: fmt.Sprintf("the conversation has its %d turns; end it", maxTurns)}
	}
	return nil
}

// End finishes a conversation: status completed when it used all
// maxTurns turns, user_terminated when the person ended it sooner. An
// ended conversation is returned as it is.
func (s *Store) End(target, convID string, maxTurns int, now time.Time) (Conversation, error) {
	var out Conversation
	err := s.change(target, convID, func(c *Conversation) error {
		if c.State == Ended {
			out = *c
			return errUnchanged
		}
		if len(c.Transcript) == 0 {
			return &StaleError{Msg: "nothing was said yet: send a message before ending"}
		}
		t := stamp(now)
		c.State, c.EndedAt, c.UpdatedAt = Ended, &t, t
		c.Validity = turnChecked()
		c.Status, c.StatusReason = artifacts.StatusUserTerminated, fmt.Sprintf("the person ended the conversation after turn %d", c.Turns())
		if c.Turns() >= maxTurns {
			c.Status, c.StatusReason = artifacts.StatusCompleted, ""
		}
		if c.Run != nil {
			c.Run.Turns = maxTurns
		}
		out = *c
		return nil
	})
	return out, err
}

// SetScore records the verdict on an ended conversation, replacing an
// earlier one.
func (s *Store) SetScore(target string, sc Score) error {
	if err := checkScore(&sc, target); err != nil {
		return err
	}
	return s.locked(target, func(run layout.Run) error {
		convs, err := ReadConversations(run.HumanConversations(), target)
		if err != nil {
			return err
		}
		if !slices.ContainsFunc(convs, func(c Conversation) bool { return c.ConvID == sc.ConvID && c.State == Ended }) {
			return &StaleError{Msg: fmt.Sprintf("%s is not an ended conversation of %s", sc.ConvID, target)}
		}
		path := run.HumanScores()
		scores, err := ReadScores(path, target)
		if err != nil {
			return err
		}
		if i := slices.IndexFunc(scores, func(x Score) bool { return x.ConvID == sc.ConvID }); i >= 0 {
			scores[i] = sc
		} else {
			scores = append(scores, sc)
		}
		return writeRows(path, scores)
	})
}

// errUnchanged makes change leave the file as it is, without an error.
var errUnchanged = errors.New("unchanged")

// change applies fn to one conversation under the lock and writes the file.
func (s *Store) change(target, convID string, fn func(c *Conversation) error) error {
	err := s.update(target, func(convs []Conversation) ([]Conversation, error) {
		i := slices.IndexFunc(convs, func(c Conversation) bool { return c.ConvID == convID })
		if i < 0 {
			return nil, ErrNotFound
		}
		if err := fn(&convs[i]); err != nil {
			return nil, err
		}
		return convs, nil
	})
	if errors.Is(err, errUnchanged) {
		return nil
	}
	return err
}

// update rewrites target's conversations.json with what fn makes of it,
// under the lock; when fn fails the file is left as it was.
func (s *Store) update(target string, fn func([]Conversation) ([]Conversation, error)) error {
	return s.locked(target, func(run layout.Run) error {
		path := run.HumanConversations()
		convs, err := ReadConversations(path, target)
		if err != nil {
			return err
		}
		convs, err = fn(convs)
		if err != nil {
			return err
		}
		return writeRows(path, convs)
	})
}

// locked runs fn holding this store's mutex and the lock file of target's
// directory (created as needed).
func (s *Store) locked(target string, fn func(run layout.Run) error) error {
	run, err := s.run(target)
	if err != nil {
		return err
	}
	dir := run.Human()
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := fsx.MkdirAll(dir, fsx.Shared); err != nil {
		return err
	}
	f, err := fsx.OpenLockFile(run.HumanLock())
	if err != nil {
		return fmt.Errorf("open lock: %w", err)
	}
	defer f.Close()
	if err := fsx.Lock(f); err != nil {
		return fmt.Errorf("lock %s: %w", dir, err)
	}
	return fn(run)
}

// writeRows replaces path with rows, one JSON object a line inside an
// array, atomically.
func writeRows[T any](path string, rows []T) error {
	b := []byte("[")
	for i, r := range rows {
		row, err := json.Marshal(r)
		if err != nil {
			return fmt.Errorf("write %s: %w", path, err)
		}
		if i > 0 {
			b = append(b, ',')
		}
		b = append(append(b, "\n"...), row...)
	}
	b = append(b, "\n]\n"...)
	return fsx.WriteFile(path, b, fsx.Shared)
}

// ReadConversations reads a human conversations.json of target, checking
// every row (a *artifacts.FileError names the file, row and field); a
// missing file is no conversations.
func ReadConversations(path, target string) ([]Conversation, error) {
	var out []Conversation
	seen := map[string]int{}
	err := readRows(path, func(i int, raw json.RawMessage) error {
		c, err := artifacts.DecodeConversation(raw)
		if err != nil {
			return err
		}
		row := Conversation{Conversation: c}
		if err := json.Unmarshal(raw, &row.Extra); err != nil {
			return err
		}
		if err := checkConversation(&row, target); err != nil {
			return err
		}
		if j, dup := seen[row.ConvID]; dup {
			return artifacts.FieldErrorf("conv_id", "duplicate conversation %q (first in row %d)", row.ConvID, j)
		}
		seen[row.ConvID] = i
		out = append(out, row)
		return nil
	})
	return out, err
}

// ReadScores reads a human scores.json of target, checking every row; a
// missing file is no scores.
func ReadScores(path, target string) ([]Score, error) {
	var out []Score
	seen := map[string]int{}
	err := readRows(path, func(i int, raw json.RawMessage) error {
		s, err := artifacts.DecodeScore(raw)
		if err != nil {
			return err
		}
		row := Score{Score: s}
		var extra struct {
			User     string    `json:"user"`
			Player   string    `json:"player"`
			JudgedAt time.Time `json:"judged_at"`
		}
		if err := json.Unmarshal(raw, &extra); err != nil {
			return err
		}
		row.User, row.Player, row.JudgedAt = extra.User, extra.Player, extra.JudgedAt
		if err := checkScore(&row, target); err != nil {
			return err
		}
		if j, dup := seen[row.ConvID]; dup {
			return artifacts.FieldErrorf("conv_id", "conversation %q is scored twice (first in row %d)", row.ConvID, j)
		}
		seen[row.ConvID] = i
		out = append(out, row)
		return nil
	})
	return out, err
}

func checkScore(s *Score, target string) error {
	if err := checkCommon(s.User, s.Player, s.TargetModel, s.ID, s.ConvID, s.Sample, target); err != nil {
		return err
	}
	if s.JudgedAt.IsZero() {
		return artifacts.FieldErrorf("judged_at", "missing")
	}
	return nil
}

func readRows(path string, fn func(i int, raw json.RawMessage) error) error {
	if _, err := os.Lstat(path); errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	return artifacts.EachRawRow(path, fn)
}

// stamp is a time as the files record it: UTC, to the second.
func stamp(t time.Time) time.Time { return t.UTC().Truncate(time.Second) }

// addUsage adds one call's usage to a conversation's record.
func addUsage(rec artifacts.UsageRecord, u llm.Usage) artifacts.UsageRecord {
	add := artifacts.UsageFrom(u)
	rec.Cost = artifacts.Round(rec.Cost+add.Cost, 6)
	rec.InputTokens += add.InputTokens
	rec.OutputTokens += add.OutputTokens
	rec.CachedInputTokens += add.CachedInputTokens
	rec.CacheWriteTokens += add.CacheWriteTokens
	rec.ReasoningTokens += add.ReasoningTokens
	rec.Requests += add.Requests
	if add.CostKnown != nil {
		rec.CostKnown = add.CostKnown
	}
	return rec
}
