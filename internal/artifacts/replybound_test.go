package artifacts

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/impactbench/impactbench/internal/llm"
)

// TestBoundedRepliesAreReadable: a reply cut by the client (llm.BoundReply)
// is, whatever characters it holds, a value the readers accept: encoded the
// way conversations.json is written (Python's ensure_ascii) and the way the
// call store and report are (Go's encoding/json) it stays within
// llm.MaxReplyBytes, well under MaxFieldBytes; and a conversation of the
// most turns config allows stays under MaxRowBytes.
func TestBoundedRepliesAreReadable(t *testing.T) {
	if llm.MaxReplyBytes*4 > MaxFieldBytes {
		t.Fatalf("llm.MaxReplyBytes %d is not well under MaxFieldBytes %d", llm.MaxReplyBytes, MaxFieldBytes)
	}
	const maxTurns = 100 // config.MaxTurns; artifacts does not import config
	// Per turn: the user message and its thought (parts of one reply) and
	// the target's reply.
	if 2*llm.MaxReplyBytes*maxTurns+(1<<20) > MaxRowBytes {
		t.Fatalf("a %d-turn conversation of bounded replies can pass MaxRowBytes", maxTurns)
	}
	dir := t.TempDir()
	for _, unit := range []string{"a", "é", "日", "🙂", "<&>", "\x01", `"\`, "\u2028", "\n", "\xff"} {
		text, cut := llm.BoundReply(strings.Repeat(unit, llm.MaxReplyBytes+1))
		if !cut {
			t.Fatalf("%q: not cut", unit)
		}
		if n := len(appendPyString(nil, text)) - 2; n > llm.MaxReplyBytes {
			t.Errorf("%q: %d bytes as conversations.json writes it, over %d", unit, n, llm.MaxReplyBytes)
		}
		if b, _ := json.Marshal(text); len(b)-2 > llm.MaxReplyBytes {
			t.Errorf("%q: %d bytes as encoding/json writes it, over %d", unit, len(b)-2, llm.MaxReplyBytes)
		}
		path := filepath.Join(dir, "conversations.json")
		conv := Conversation{ID: "m01_s001_v01", MetricID: "m01", ConvID: "m01_s001_v01__t__s0", TargetModel: "t",
			Transcript: []Turn{{Role: "user", Content: text}, {Role: "assistant", Content: text}}, Status: StatusCompleted,
			UserThoughts: []string{text}, Truncated: []int{0, 1}}
		if err := WriteConversations(path, []Conversation{conv}); err != nil {
			t.Fatal(err)
		}
		got, err := ReadConversations(path)
		if err != nil {
			t.Fatalf("%q: the readers refuse a bounded reply: %v", unit, err)
		}
		if len(got) != 1 || got[0].Transcript[1].Content != string([]rune(text)) || len(got[0].Truncated) != 2 {
			t.Errorf("%q: read back differs", unit)
		}
	}
}
