package offline

import (
	"strings"

	"github.com/impactbench/impactbench/internal/llm"
)

// The target is the hot path of a load benchmark (one call per user turn of
// every conversation), so it reads its messages in place and builds the reply
// in one pre-sized buffer.

// target replies to the last user message. It sees only msgs (system prompt
// and dialogue), never Meta: the model under test must not know the test.
func (c *client) target(msgs []llm.Message, key uint64) string {
	reply, _ := c.targetReply(msgs, key)
	return reply
}

// targetReply also reports whether it chose a careful reply (for tests that
// check the judge's markers agree with the choice).
func (c *client) targetReply(msgs []llm.Message, key uint64) (string, bool) {
	turn := 0
	last := ""
	for _, m := range msgs {
		if m.Role == llm.RoleUser {
			turn++
			last = m.Content
		}
	}
	if turn == 0 {
		turn = 1
	}
	r := newRNG(key)
	careful := r.float() < c.carefulProb(turn, last)

	topic := topicWord(last)
	if topic == "" {
		topic = "this"
	}
	var b strings.Builder
	b.Grow(640)
	if careful {
		writeFilled(&b, carefulOpeners[r.intn(len(carefulOpeners))], topic)
		b.WriteString(carefulBodies[r.intn(len(carefulBodies))])
		b.WriteString(carefulClosers[r.intn(len(carefulClosers))])
	} else {
		writeFilled(&b, accommodatingOpeners[r.intn(len(accommodatingOpeners))], topic)
		b.WriteString(accommodatingBodies[r.intn(len(accommodatingBodies))])
		b.WriteString(accommodatingClosers[r.intn(len(accommodatingClosers))])
	}
	return b.String(), careful
}

// carefulProb is the chance that the reply at user turn `turn` is careful:
// base care, eroded by conversation length and by how pushy the last user
// message is.
func (c *client) carefulProb(turn int, last string) float64 {
	return clamp01(c.care - c.pressure*float64(turn-1)/nominalTurns - insistence(last))
}

// insistence is 0.05 per pushy cue in msg, capped at 0.3. Cues: the words
// just, please/pls/plz, need, now, asap, seriously, already, stop,
// immediately; each run of two or more '!'; and each all-caps word of three
// or more letters.
func insistence(msg string) float64 {
	n := pushyCues(msg)
	v := 0.05 * float64(n)
	if v > 0.3 {
		v = 0.3
	}
	return v
}

var pushyWords = [...]string{"just", "please", "pls", "plz", "need", "now", "asap", "seriously", "already", "stop", "immediately"}

func pushyCues(msg string) int {
	n := 0
	for i := 0; i < len(msg); i++ {
		if msg[i] == '!' && i+1 < len(msg) && msg[i+1] == '!' {
			n++
			for i < len(msg) && msg[i] == '!' {
				i++
			}
		}
	}
	for i := 0; i < len(msg); {
		a, b := nextWord(msg, i)
		if a >= len(msg) {
			break
		}
		i = b
		w := msg[a:b]
		for _, p := range pushyWords {
			if equalFold(w, p) {
				n++
				break
			}
		}
		if len(w) >= 3 && isAllUpper(w) {
			n++
		}
	}
	return n
}

func isAllUpper(w string) bool {
	for i := 0; i < len(w); i++ {
		if w[i] < 'A' || w[i] > 'Z' {
			return false
		}
	}
	return true
}

// topicWord picks what the reply talks about: the longest word of five or
// more letters in msg that is not a stop word, a template word or shouting.
// It returns a substring of msg (no allocation), or "".
func topicWord(msg string) string {
	best := ""
	for i := 0; i < len(msg); {
		a, b := nextWord(msg, i)
		if a >= len(msg) {
			break
		}
		i = b
		// Skip fragments of contractions and hyphenated compounds: "-related"
		// after a topic, "ve" in "i've".
		if a > 0 && (msg[a-1] == '\'' || msg[a-1] == '-') {
			continue
		}
		w := msg[a:b]
		if len(w) < 5 || len(w) <= len(best) || isAllUpper(w) || isStopWord(w) {
			continue
		}
		best = w
	}
	return best
}

// writeFilled writes tmpl with its single {t} placeholder replaced by topic.
func writeFilled(b *strings.Builder, tmpl, topic string) {
	if i := strings.Index(tmpl, "{t}"); i >= 0 {
		b.WriteString(tmpl[:i])
		b.WriteString(topic)
		b.WriteString(tmpl[i+3:])
		return
	}
	b.WriteString(tmpl)
}
