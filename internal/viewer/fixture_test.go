package viewer

import (
	"bufio"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/impactbench/impactbench/internal/artifacts"
)

// xssPayload is the static report's: every way untrusted text could run
// in a page. Each vector sets window.__xss, which the browser tests assert
// stays unset.
const xssPayload = "<script>window.__xss=1</script> <img src=x onerror=\"window.__xss=1\"> " +
	"</script><script>window.__xss=1</script> [x](javascript:window.__xss=1) <!-- <svg onload=window.__xss=1> \u2028\u2029 &amp; end"

// SynthSpec describes a synthetic benchmark: Metrics × ScensPerMetric
// scenarios, each run Samples times against every target, judged by a
// panel of Judges (a split panel every seventh row). XSS plants the
// payload in the first scenario's goal, its first conversation's replies
// and the judges' justifications.
type SynthSpec struct {
	Name           string
	Metrics        int
	ScensPerMetric int
	Targets        []string
	Samples        int
	Msgs           int // messages per conversation
	MsgLen         int // characters per assistant message (user messages are a quarter)
	Judges         int
	XSS            bool
	Unscored       bool // write conversations.json but no scores.json
	// Evidence makes each verdict quote the last assistant reply's first
	// words (as the judge stage records them).
	Evidence bool
	// Marks makes the first target's first conversation mark messages as
	// a row stores them: its first reply and its second, emptied, refused
	// by the provider (its score row's refused says so too, as the judge
	// stage copies it), its second user message cut short, its first one
	// repaired.
	Marks bool
}

func ptr[T any](v T) *T { return &v }

// mix is a deterministic pseudo-random number from a key.
func mix(parts ...any) uint64 {
	h := fnv.New64a()
	fmt.Fprint(h, parts...)
	return h.Sum64()
}

const lorem = "It sounds like you have been carrying a lot on your own lately, and it makes sense that you want a quick answer. " +
	"Before anything else, is there someone you trust — a friend, a family member, a counsellor — you could talk this through with? " +
	"I can help you think it over here too, but a person who knows you can notice things I cannot, and can be there tomorrow as well. "

func text(n int, salt uint64) string {
	var b strings.Builder
	off := int(salt % uint64(len(lorem)/2))
	for b.Len() < n {
		b.WriteString(lorem[off:])
		off = 0
	}
	return b.String()[:n]
}

// WriteSynth writes the benchmark under project/benchmarks/<Name> and
// returns its directory and the number of conversations.
func WriteSynth(t testing.TB, project string, sp SynthSpec) (string, int) {
	t.Helper()
	dir := filepath.Join(project, "benchmarks", sp.Name)
	must(t, os.MkdirAll(dir, 0o755))
	var yml strings.Builder
	fmt.Fprintf(&yml, "name: %q\ndescription: synthetic\nmetrics:\n", "Synthetic "+sp.Name)
	for m := 1; m <= sp.Metrics; m++ {
		typ := "positive"
		if m%2 == 0 {
			typ = "negative"
		}
		fmt.Fprintf(&yml, "  - id: m%02d\n    name: Metric %d\n    type: %s\n    definition: The assistant does thing %d.\n", m, m, typ, m)
	}
	must(t, os.WriteFile(filepath.Join(dir, "benchmark.yaml"), []byte(yml.String()), 0o644))

	var scens []map[string]any
	for m := 1; m <= sp.Metrics; m++ {
		for s := 1; s <= sp.ScensPerMetric; s++ {
			id := fmt.Sprintf("m%02d_s%03d_v01", m, s)
			goal := fmt.Sprintf("Goal of %s: get a frank answer quickly.", id)
			if sp.XSS && len(scens) == 0 {
				goal += " " + xssPayload
			}
			scens = append(scens, map[string]any{"id": id, "metric_id": fmt.Sprintf("m%02d", m), "persona": "A person. " + id,
				"user_persona": "A person. " + id, "user_goal": goal, "latent_adversarial_goal": "Latent goal of " + id,
				"landmarks": []artifacts.Landmark{{Turn: 1, Instruction: "Open casually"}}, "demographic": map[string]string{"age": "Adult (18+)"}})
		}
	}
	writeJSONFile(t, filepath.Join(dir, "scenarios.json"), scens)

	n := 0
	for ti, target := range sp.Targets {
		rd := filepath.Join(dir, "runs", target)
		must(t, os.MkdirAll(rd, 0o755))
		cw := newArrayFile(t, filepath.Join(rd, "conversations.json"))
		var sw *arrayFile
		if !sp.Unscored {
			sw = newArrayFile(t, filepath.Join(rd, "scores.json"))
		}
		for si, sc := range scens {
			id, metric := sc["id"].(string), sc["metric_id"].(string)
			for s := 0; s < sp.Samples; s++ {
				convID := artifacts.ConvID(id, target, s)
				var tr []artifacts.Turn
				for k := 0; k < sp.Msgs; k++ {
					if k%2 == 0 {
						tr = append(tr, artifacts.Turn{Role: "user", Content: fmt.Sprintf("User turn %d: ", k/2+1) + text(sp.MsgLen/4, mix(convID, k))})
					} else {
						tr = append(tr, artifacts.Turn{Role: "assistant", Content: fmt.Sprintf("Reply %d: ", k/2+1) + text(sp.MsgLen, mix(convID, k))})
					}
				}
				if sp.XSS && si == 0 && s == 0 && ti == 0 && len(tr) > 1 {
					tr[1].Content = xssPayload
				}
				conv := artifacts.Conversation{ID: id, MetricID: metric, ConvID: convID, Sample: s, TargetModel: target,
					Transcript: tr, Status: artifacts.StatusCompleted}
				if sp.Marks && si == 0 && s == 0 && ti == 0 && len(tr) > 3 {
					tr[3].Content = ""
					conv.Refused, conv.Truncated = []int{1, 3}, []int{2}
					conv.Repairs = []string{"message 0: removed quotes or emphasis around the message"}
				}
				cw.add(conv)
				n++
				if sw == nil {
					continue
				}
				r := mix(convID, "verdict")
				present := r%3 != 0
				sc := artifacts.Score{ID: id, MetricID: metric, TargetModel: target, Sample: s, Present: ptr(present),
					Justification: "The assistant did what the metric describes in reply 2.", ConvID: convID, Refused: conv.Refused}
				if sp.XSS {
					sc.Justification = "Quoted: " + xssPayload
				}
				if sp.Evidence && len(tr) >= 2 {
					last := len(tr) - 1
					if tr[last].Role != "assistant" {
						last--
					}
					sc.Evidence = []artifacts.Quote{{Text: tr[last].Content[:min(40, len(tr[last].Content))], Message: ptr(last)}}
				}
				for j := 0; j < sp.Judges; j++ {
					p := present
					if j == sp.Judges-1 && r%7 == 0 {
						p = !p // a split panel
					}
					sc.Judges = append(sc.Judges, artifacts.JudgeVerdict{Judge: fmt.Sprintf("judge-%c", 'a'+j), Present: ptr(p),
						Justification: fmt.Sprintf("Judge %c: %v.", 'a'+j, p)})
				}
				pos := strings.HasSuffix(metric, "1") || strings.HasSuffix(metric, "3") || strings.HasSuffix(metric, "5") ||
					strings.HasSuffix(metric, "7") || strings.HasSuffix(metric, "9")
				sc.Passed = ptr(present == pos)
				sw.add(sc)
			}
		}
		cw.close()
		if sw != nil {
			sw.close()
		}
	}
	return dir, n
}

type arrayFile struct {
	t testing.TB
	f *os.File
	w *bufio.Writer
	n int
}

func newArrayFile(t testing.TB, path string) *arrayFile {
	f, err := os.Create(path)
	must(t, err)
	a := &arrayFile{t: t, f: f, w: bufio.NewWriterSize(f, 1<<20)}
	a.w.WriteString("[\n")
	return a
}

func (a *arrayFile) add(v any) {
	b, err := json.Marshal(v)
	must(a.t, err)
	if a.n > 0 {
		a.w.WriteString(",\n")
	}
	a.w.Write(b)
	a.n++
}

func (a *arrayFile) close() {
	a.w.WriteString("\n]\n")
	must(a.t, a.w.Flush())
	must(a.t, a.f.Close())
}

func writeJSONFile(t testing.TB, path string, v any) {
	t.Helper()
	b, err := json.MarshalIndent(v, "", "  ")
	must(t, err)
	must(t, os.WriteFile(path, b, 0o644))
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// XSSPayload is exported for the external browser tests.
const XSSPayload = xssPayload
