package config

import (
	"fmt"

	"github.com/goccy/go-yaml/token"
)

// Bounds on the shape of a YAML file, checked before the parser builds
// its tree. goccy/go-yaml's costs grow faster than the file: each token
// costs a few hundred bytes, the parser gives every node the path of its
// keys (so memory grows with depth × nodes, and with the keys' lengths),
// and a mapping's keys and a stream's documents cost time quadratic in
// their number. Measured on 1 MiB or smaller files before these bounds:
// 40,000 nested flow lists took 2.5 GB, 16,000 keys in one mapping 3.6 s,
// 116,000 documents 52 GB and 4 minutes. Within them, any YAML file of
// 1 MiB or less is read in well under 100 MB and 2 s (docs/security.md).
// Real files are far inside: upstream's benchmark.yaml has a few hundred
// tokens, one with MaxMetrics metrics a few tens of thousands.
const (
	// MaxYAMLMarks bounds the punctuation and lines of a file (the bytes
	// that can start a token: []{},:-?&*!|>#'"%@`< and line breaks),
	// counted before the tokenizer runs, so that it never makes more than
	// about this many tokens.
	MaxYAMLMarks = 120_000
	// MaxYAMLTokens bounds the tokens (keys, values, indicators, comments)
	// the parser is given.
	MaxYAMLTokens = 50_000
	// MaxYAMLDepth bounds nesting: block indentation, "- - -" and flow
	// brackets together.
	MaxYAMLDepth = 64
	// MaxYAMLKeys bounds the keys of one mapping.
	MaxYAMLKeys = 2_000
	// MaxYAMLDocuments bounds the "---" document markers.
	MaxYAMLDocuments = 64
	// MaxYAMLPathBytes bounds the parser's node paths: the sum, over the
	// tokens, of the lengths of the keys they sit under.
	MaxYAMLPathBytes = 8 << 20
	// MaxYAMLExpanded bounds the nodes the decoder visits, an alias
	// counting as every node it stands for ("billion laughs").
	MaxYAMLExpanded = 100_000
)

// countMarks checks MaxYAMLMarks on the raw bytes and returns the line
// where the count passes it (0 when it does not). Linear, no allocation.
func countMarks(src []byte) int {
	n, line := 0, 1
	for _, c := range src {
		switch c {
		case '\n':
			line++
			n++
		case '[', ']', '{', '}', ',', ':', '-', '?', '&', '*', '!', '|', '>', '#', '\'', '"', '%', '@', '`', '<':
			n++
		default:
			continue
		}
		if n > MaxYAMLMarks {
			return line
		}
	}
	return 0
}

// shapeLevel is one open collection while tokens are walked: a block
// mapping key or sequence entry at column col, or a flow collection.
type shapeLevel struct {
	col    int
	seq    bool // a block sequence entry
	flow   bool
	keyLen int // what the level adds to a node's path
	keys   int // keys of the mapping it holds
}

// shapeCheck walks tokens once and reports the first bound they pass.
type shapeCheck struct {
	stack    []shapeLevel
	rootKeys int
	pathLen  int
	pathSum  int
	docs     int
	flow     int // open flow collections
	pending  int // length of the flow key just read
}

// checkShape checks the token bounds; on a violation it records a problem
// at the offending token and returns false.
func checkShape(tokens token.Tokens, ps *problems) bool {
	if len(tokens) > MaxYAMLTokens {
		tk := tokens[MaxYAMLTokens]
		ps.add(tk.Position.Line, tk.Position.Column, "", "the file has more than %d YAML tokens (keys, values, indicators, comments): over the limit for one file", MaxYAMLTokens)
		return false
	}
	var c shapeCheck
	for i, tk := range tokens {
		if msg := c.step(tokens, i); msg != "" {
			ps.add(tk.Position.Line, tk.Position.Column, "", "%s", msg)
			return false
		}
	}
	return true
}

// step accounts for token i; it returns a message when a bound is passed.
func (c *shapeCheck) step(tokens token.Tokens, i int) string {
	tk := tokens[i]
	switch tk.Type {
	case token.DocumentHeaderType:
		c.docs++
		c.stack, c.flow, c.pathLen = c.stack[:0], 0, 0
		if c.docs > MaxYAMLDocuments {
			return fmt.Sprintf("more than %d documents (---): over the limit for one file", MaxYAMLDocuments)
		}
	case token.SequenceStartType, token.MappingStartType:
		c.push(shapeLevel{flow: true, keyLen: max(c.pending, 3)})
		c.flow++
		c.pending = 0
	case token.SequenceEndType, token.MappingEndType:
		if c.flow > 0 {
			c.pop()
			c.flow--
		}
	case token.SequenceEntryType, token.MappingKeyType:
		if c.flow == 0 {
			col := tk.Position.Column
			for len(c.stack) > 0 && !c.top().flow && (c.top().col > col || c.top().col == col && c.top().seq) {
				c.pop()
			}
			c.push(shapeLevel{col: col, seq: true, keyLen: 3})
		}
	case token.MappingValueType:
		if msg := c.key(prevToken(tokens, i)); msg != "" {
			return msg
		}
	}
	if len(c.stack) > MaxYAMLDepth {
		return fmt.Sprintf("values nested more than %d levels deep: over the limit for one file", MaxYAMLDepth)
	}
	c.pathSum += c.pathLen
	if c.pathSum > MaxYAMLPathBytes {
		return fmt.Sprintf("keys too long for how deep and how many the values under them are (their paths add up to more than %s): over the limit for one file", mib(MaxYAMLPathBytes))
	}
	return ""
}

// key accounts for the key before a ':' (nil: none).
func (c *shapeCheck) key(k *token.Token) string {
	n := 1
	if k != nil {
		n = len(k.Value) + 1
	}
	if c.flow > 0 {
		c.pending = n
		return c.countKey(&c.stack[len(c.stack)-1].keys)
	}
	col := 0
	if k != nil {
		col = k.Position.Column
	}
	for len(c.stack) > 0 && !c.top().flow && c.top().col >= col {
		c.pop()
	}
	counter := &c.rootKeys
	if len(c.stack) > 0 {
		counter = &c.stack[len(c.stack)-1].keys
	}
	if msg := c.countKey(counter); msg != "" {
		return msg
	}
	c.push(shapeLevel{col: col, keyLen: n})
	return ""
}

func (c *shapeCheck) countKey(counter *int) string {
	*counter++
	if *counter > MaxYAMLKeys {
		return fmt.Sprintf("a mapping with more than %d keys: over the limit for one mapping", MaxYAMLKeys)
	}
	return ""
}

func (c *shapeCheck) top() *shapeLevel { return &c.stack[len(c.stack)-1] }

func (c *shapeCheck) push(l shapeLevel) {
	c.stack = append(c.stack, l)
	c.pathLen += l.keyLen
}

func (c *shapeCheck) pop() {
	c.pathLen -= c.top().keyLen
	c.stack = c.stack[:len(c.stack)-1]
}

// prevToken is the token before i that is not a comment, or nil.
func prevToken(tokens token.Tokens, i int) *token.Token {
	for j := i - 1; j >= 0; j-- {
		if tokens[j].Type != token.CommentType {
			return tokens[j]
		}
	}
	return nil
}
