package offline

import (
	"sort"
	"strings"
)

// Small, allocation-conscious text helpers. Everything here treats text as
// ASCII for word boundaries and case: that is enough for the prose the
// offline model writes and reads, and it keeps the hot target path free of
// unicode tables and allocations.

func isLetter(c byte) bool { return c|0x20 >= 'a' && c|0x20 <= 'z' }

func lowerByte(c byte) byte {
	if c >= 'A' && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}

// nextWord returns the bounds of the next run of ASCII letters at or after i,
// or (len(s), len(s)) when there is none.
func nextWord(s string, i int) (int, int) {
	for i < len(s) && !isLetter(s[i]) {
		i++
	}
	j := i
	for j < len(s) && isLetter(s[j]) {
		j++
	}
	return i, j
}

// equalFold reports whether w equals lower (already lower-case) ignoring ASCII case.
func equalFold(w, lower string) bool {
	if len(w) != len(lower) {
		return false
	}
	for i := 0; i < len(w); i++ {
		if lowerByte(w[i]) != lower[i] {
			return false
		}
	}
	return true
}

// containsFold reports whether s contains sub (already lower-case) ignoring
// ASCII case. Typographic apostrophes in s match a plain one in sub, because
// real model replies often use them.
func containsFold(s, sub string) bool {
	if sub == "" {
		return true
	}
	first := sub[0]
	for i := 0; i < len(s); i++ {
		if lowerByte(s[i]) != first {
			continue
		}
		if matchAt(s, i, sub) {
			return true
		}
	}
	return false
}

// matchAt reports whether sub (lower-case) occurs in s at byte i.
func matchAt(s string, i int, sub string) bool {
	k := 0
	for k < len(sub) {
		if i >= len(s) {
			return false
		}
		c := s[i]
		if sub[k] == '\'' && c == 0xe2 && i+2 < len(s) && s[i+1] == 0x80 && (s[i+2] == 0x99 || s[i+2] == 0x98) {
			i += 3 // ’ or ‘
			k++
			continue
		}
		if lowerByte(c) != sub[k] {
			return false
		}
		i++
		k++
	}
	return true
}

// hasWordPrefix reports whether some word of s starts with prefix (lower-case).
func hasWordPrefix(s, prefix string) bool {
	for i := 0; i < len(s); {
		a, b := nextWord(s, i)
		if a >= len(s) {
			return false
		}
		if b-a >= len(prefix) && equalFold(s[a:a+len(prefix)], prefix) {
			return true
		}
		i = b
	}
	return false
}

// isStopWord reports whether w (any case) is too generic, too revealing or
// part of the offline model's own template vocabulary to serve as a topic.
func isStopWord(w string) bool {
	if len(w) > 40 {
		return true
	}
	var buf [40]byte
	for i := 0; i < len(w); i++ {
		buf[i] = lowerByte(w[i])
	}
	lw := buf[:len(w)]
	if _, ok := stopWords[string(lw)]; ok {
		return true
	}
	for _, bad := range revealingStems {
		if bytesContain(lw, bad) {
			return true
		}
	}
	return false
}

// bytesContain is strings.Contains for a byte slice without converting it
// (which could allocate on the target's hot path).
func bytesContain(b []byte, sub string) bool {
	for i := 0; i+len(sub) <= len(b); i++ {
		if string(b[i:i+len(sub)]) == sub {
			return true
		}
	}
	return false
}

// revealingStems would give the test away if a simulated user echoed them
// (the landmark check flags them); careStems would let an accommodating
// reply that echoes the topic look careful to the judge.
var revealingStems = [...]string{
	"test", "bench", "evaluat", "metric", "judg", "adversar", "simulat", "probe",
	"counsel", "therap", "helpline",
}

// keywords returns up to max distinct lower-case topic words from the given
// sources, best first. A word scores its source weight for each occurrence,
// so words repeated across name and description win; ties keep first
// appearance order. Words shorter than 4 letters and stop words are skipped.
func keywords(max int, sources ...weighted) []string {
	type cand struct {
		w     string
		score int
		first int
	}
	idx := map[string]int{}
	var cs []cand
	pos := 0
	for _, src := range sources {
		for _, part := range splitCamel(src.text) {
			for i := 0; i < len(part); {
				a, b := nextWord(part, i)
				if a >= len(part) {
					break
				}
				i = b
				w := part[a:b]
				if len(w) < 4 || isStopWord(w) || isAdverb(w) {
					continue
				}
				lw := strings.ToLower(w)
				if k, ok := idx[lw]; ok {
					cs[k].score += src.weight
					continue
				}
				idx[lw] = len(cs)
				cs = append(cs, cand{w: lw, score: src.weight, first: pos})
				pos++
			}
		}
	}
	sort.SliceStable(cs, func(i, j int) bool {
		if cs[i].score != cs[j].score {
			return cs[i].score > cs[j].score
		}
		return cs[i].first < cs[j].first
	})
	out := make([]string, 0, max)
	for _, c := range cs {
		if len(out) == max {
			break
		}
		out = append(out, c.w)
	}
	return out
}

// isAdverb catches "-ly" adverbs ("potentially", "explicitly"), which make
// poor topics; short "-ly" nouns such as "family" pass.
func isAdverb(w string) bool {
	lw := strings.ToLower(w)
	for _, suf := range [...]string{"ally", "ently", "antly", "ively", "ously", "fully", "ately", "ingly", "ctly"} {
		if strings.HasSuffix(lw, suf) {
			return true
		}
	}
	return false
}

type weighted struct {
	text   string
	weight int
}

// splitCamel splits "HumaneBench" into "Humane Bench" so a benchmark's name
// contributes its parts as words.
func splitCamel(s string) []string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if i > 0 && c >= 'A' && c <= 'Z' && s[i-1] >= 'a' && s[i-1] <= 'z' {
			b.WriteByte(' ')
		}
		b.WriteByte(c)
	}
	return []string{b.String()}
}

// quotedParts returns the phrases in double quotes (straight or curly) and in
// single quotes that open after a non-letter and close before one (so that
// apostrophes in "don't" are not taken for quotes).
func quotedParts(s string) []string {
	var out []string
	for i := 0; i < len(s); i++ {
		var closeSeq string
		var width int
		switch {
		case s[i] == '"':
			closeSeq, width = `"`, 1
		case strings.HasPrefix(s[i:], "“"):
			closeSeq, width = "”", len("“")
		case s[i] == '\'' && (i == 0 || !isLetter(s[i-1])):
			closeSeq, width = "'", 1
		default:
			continue
		}
		rest := s[i+width:]
		end := -1
		for j := 0; j < len(rest); j++ {
			if !strings.HasPrefix(rest[j:], closeSeq) {
				continue
			}
			if closeSeq == "'" && j+1 < len(rest) && isLetter(rest[j+1]) {
				continue // an apostrophe inside a word
			}
			end = j
			break
		}
		if end < 0 {
			break
		}
		if q := strings.TrimSpace(rest[:end]); len(q) >= 3 {
			out = append(out, q)
		}
		i += width + end + len(closeSeq) - 1
	}
	return out
}

// lowerFirst lower-cases the first letter (for splicing a sentence into another).
func lowerFirst(s string) string {
	if s == "" || s[0] < 'A' || s[0] > 'Z' {
		return s
	}
	// Keep acronyms ("AP Statistics", "I") as they are.
	if len(s) > 1 && (s[1] >= 'A' && s[1] <= 'Z' || s[1] == ' ') {
		return s
	}
	return string(s[0]+'a'-'A') + s[1:]
}

func upperFirst(s string) string {
	if s == "" || s[0] < 'a' || s[0] > 'z' {
		return s
	}
	return string(s[0]-'a'+'A') + s[1:]
}

// trimSentence drops trailing spaces and sentence punctuation.
func trimSentence(s string) string {
	return strings.TrimRight(strings.TrimSpace(s), ".!?;: ")
}

// truncateWords cuts s to at most max bytes at a word boundary.
func truncateWords(s string, max int) string {
	if len(s) <= max {
		return s
	}
	cut := strings.LastIndexByte(s[:max], ' ')
	if cut < max/2 {
		cut = max
	}
	return strings.TrimRight(s[:cut], " ,;:—-") + "…"
}

// firstPersonLeads are imperative openings of a landmark instruction
// sentence and what the simulated user says instead (usually nothing: the
// rest of the sentence is what is to be said).
var firstPersonLeads = [...][2]string{
	{"say that ", ""}, {"say ", ""}, {"tell the assistant that ", ""}, {"tell the assistant ", ""},
	{"tell them that ", ""}, {"mention that ", ""}, {"mention ", ""}, {"explain that ", ""},
	{"express that ", ""}, {"admit that ", ""}, {"claim that ", ""}, {"insist that ", ""},
	{"add that ", ""}, {"state that ", ""}, {"reveal that ", ""}, {"point out that ", ""},
	{"complain that ", ""}, {"ask the assistant to ", "can you "}, {"ask the ai to ", "can you "},
	{"ask directly", ""}, {"ask whether ", "is it ok if "}, {"ask if ", "is it ok if "},
}

// firstPerson turns a landmark instruction addressed to the simulated user
// ("Say you just want someone to tell you what to do") into something the
// user can say ("i just want someone to tell me what to do"): it rewrites a
// leading "say/mention/ask the assistant to…" of each sentence and swaps
// second-person words for first-person ones and "the assistant" for "you".
// Crude, but it keeps the instruction's content visible in the message.
func firstPerson(instr string) string {
	var out strings.Builder
	for _, sen := range strings.SplitAfter(strings.TrimSpace(instr), ". ") {
		low := strings.ToLower(sen)
		for _, lead := range firstPersonLeads {
			if strings.HasPrefix(low, lead[0]) {
				out.WriteString(lead[1])
				sen = strings.TrimLeft(sen[len(lead[0]):], ":,- ")
				break
			}
		}
		out.WriteString(swapPronouns(sen))
	}
	return strings.TrimRight(out.String(), ". ")
}

// swapPronouns lower-cases s and swaps second-person words for first-person
// ones ("you" becomes "i" where it looks like a subject, "me" elsewhere) and
// "the assistant" for "you".
func swapPronouns(s string) string {
	var b strings.Builder
	b.Grow(len(s) + 8)
	prev := ""
	for i := 0; i < len(s); {
		if !isLetter(s[i]) {
			b.WriteByte(lowerByte(s[i]))
			if s[i] != ' ' && s[i] != '\'' {
				prev = string(s[i])
			}
			i++
			continue
		}
		a, e := nextWord(s, i)
		// Include a contraction suffix ("you're") in the word.
		if e+1 < len(s) && s[e] == '\'' && isLetter(s[e+1]) {
			_, e2 := nextWord(s, e+1)
			e = e2
		}
		w := strings.ToLower(s[a:e])
		switch w {
		case "you":
			if prev == "" || prev == "." || prev == "," || prev == "that" || prev == "and" || prev == "but" ||
				prev == "because" || prev == "if" || prev == "when" || prev == "so" || prev == "as" || prev == "how" ||
				prev == "what" || prev == "why" || prev == "though" {
				w = "i"
			} else {
				w = "me"
			}
		case "your":
			w = "my"
		case "yours":
			w = "mine"
		case "yourself":
			w = "myself"
		case "you're":
			w = "i'm"
		case "you've":
			w = "i've"
		case "you'll":
			w = "i'll"
		case "you'd":
			w = "i'd"
		case "are":
			if prev == "i" {
				w = "am"
			}
		case "were":
			if prev == "i" {
				w = "was"
			}
		case "assistant", "ai":
			if strings.HasSuffix(b.String(), "the ") {
				trimmed := strings.TrimSuffix(b.String(), "the ")
				b.Reset()
				b.WriteString(trimmed)
			}
			w = "you"
		case "assistant's":
			if strings.HasSuffix(b.String(), "the ") {
				trimmed := strings.TrimSuffix(b.String(), "the ")
				b.Reset()
				b.WriteString(trimmed)
			}
			w = "your"
		}
		b.WriteString(w)
		prev = w
		i = e
	}
	return b.String()
}
