package report

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"runtime"
	"sort"

	"golang.org/x/sync/errgroup"

	"github.com/impactbench/impactbench/internal/artifacts"
)

// Chunk sizes. A conversation chunk of 100 rows is ≈1 MB of JSON (≈350 KB
// gzipped): big enough for gzip to find repeats across conversations of the
// same scenario, small enough to inflate in a few milliseconds on click.
const (
	chunkConvs     = 100
	chunkScenarios = 200
)

// Verdict codes in the index (compact ints instead of strings).
const (
	verdictFail     = 0
	verdictPass     = 1
	verdictNull     = 2 // judged, but no verdict (judge failed or abstained)
	verdictUnscored = 3 // not judged yet
)

// convIndex is the "ib-index" island: one column entry per conversation
// (struct of arrays, so 20,000 rows stay ≈ 300 KB), plus scenario columns.
// Everything heavy lives in gzip chunks.
type convIndex struct {
	Targets    []string `json:"targets"`
	Statuses   []string `json:"statuses"`
	ChunkSize  int      `json:"chunk"`
	SChunkSize int      `json:"schunk"`
	NChunks    int      `json:"nchunks"`
	NSChunks   int      `json:"nschunks"`

	T  []int          `json:"t"`   // target index
	S  []int          `json:"s"`   // scenario index
	M  []int          `json:"m"`   // metric index into summary.Metrics (-1: unknown)
	N  []int          `json:"n"`   // sample
	V  []int          `json:"v"`   // verdict code
	St []int          `json:"st"`  // status index
	L  []int          `json:"l"`   // number of messages
	ID map[int]string `json:"ids"` // conv_id where it is not <id>__<target>__s<n>

	SID   []string `json:"sid"`   // scenario id
	SGoal []string `json:"sgoal"` // user goal: the list title, as on the website
	SD    [][]int  `json:"sd"`    // per scenario: value index per axis (-1: none)
}

// convRec is one conversation in a chunk. Transcript strings are indices
// into the chunk's string table, so a message repeated across targets (the
// simulated user's opening turn often is) is stored once.
type convRec struct {
	Tr           []int                  `json:"tr"` // role, content, role, content … (string-table indices)
	StatusReason string                 `json:"sr,omitempty"`
	Usage        *artifacts.UsageRecord `json:"u,omitempty"`
	Run          *artifacts.RunInfo     `json:"run,omitempty"`
	Validity     *artifacts.Validity    `json:"val,omitempty"`
	Score        *scoreRec              `json:"sc,omitempty"`
	TargetModel  string                 `json:"tm,omitempty"` // the row's target_model when it differs from the run dir
}

type scoreRec struct {
	Present       *bool                    `json:"present"`
	Passed        *bool                    `json:"passed"`
	Justification string                   `json:"justification"`
	NullReason    string                   `json:"null_reason,omitempty"`
	Judges        []artifacts.JudgeVerdict `json:"judges,omitempty"`
	Valid         *bool                    `json:"valid,omitempty"`
}

type convChunk struct {
	Strs []string  `json:"s"`
	Recs []convRec `json:"c"`
}

type scenRec struct {
	ID          string      `json:"id"`
	Persona     string      `json:"persona,omitempty"`
	UserPersona string      `json:"up,omitempty"` // only when it differs from persona
	Goal        string      `json:"goal,omitempty"`
	Latent      string      `json:"latent,omitempty"`
	Landmarks   [][2]any    `json:"lm,omitempty"`
	Demographic [][2]string `json:"d,omitempty"`
	System      string      `json:"sys,omitempty"`
	Stub        bool        `json:"stub,omitempty"` // not in scenarios.json
}

// store is the index plus gzipped chunks, ready to write.
type store struct {
	Index      convIndex
	ConvChunks [][]byte
	ScenChunks [][]byte
}

type convRef struct {
	run, row int
	scen     int
	target   int
}

func buildStore(ctx context.Context, in *Input, metrics []metricView, axes []axisView) (*store, error) {
	// Empty, not nil, slices: app.js reads every column as an array.
	ix := convIndex{ChunkSize: chunkConvs, SChunkSize: chunkScenarios, ID: map[int]string{},
		Targets: []string{}, Statuses: []string{}, T: []int{}, S: []int{}, M: []int{}, N: []int{},
		V: []int{}, St: []int{}, L: []int{}, SID: []string{}, SGoal: []string{}, SD: [][]int{}}
	metricIdx := map[string]int{}
	for i, m := range metrics {
		metricIdx[m.ID] = i
	}
	axisIdx := map[string]int{}
	valIdx := make([]map[string]int, len(axes))
	for i, a := range axes {
		axisIdx[a.Name] = i
		valIdx[i] = map[string]int{}
		for j, v := range a.Values {
			valIdx[i][v] = j
		}
	}

	// Scenarios: scenarios.json order, then stubs for ids only conversations know.
	scenIdx := map[string]int{}
	var scens []scenRec
	addScen := func(sc Scenario, stub bool) int {
		i := len(scens)
		scenIdx[sc.ID] = i
		rec := scenRec{ID: sc.ID, Persona: sc.Persona, Goal: sc.UserGoal, Latent: sc.LatentAdversarialGoal,
			System: sc.TargetSystemPrompt, Stub: stub}
		if sc.UserPersona != sc.Persona {
			rec.UserPersona = sc.UserPersona
		}
		for _, lm := range sc.Landmarks {
			rec.Landmarks = append(rec.Landmarks, [2]any{lm.Turn, lm.Instruction})
		}
		dv := make([]int, len(axes))
		for k := range dv {
			dv[k] = -1
		}
		for _, av := range sc.Demographic {
			rec.Demographic = append(rec.Demographic, [2]string{av.Axis, av.Value})
			if a, ok := axisIdx[av.Axis]; ok {
				dv[a] = valIdx[a][av.Value]
			}
		}
		scens = append(scens, rec)
		ix.SID = append(ix.SID, sc.ID)
		ix.SGoal = append(ix.SGoal, sc.UserGoal)
		ix.SD = append(ix.SD, dv)
		return i
	}
	for _, sc := range in.Scenarios {
		if _, dup := scenIdx[sc.ID]; !dup {
			addScen(sc, false)
		}
	}

	// Conversations, ordered scenario → sample → target so the same
	// scenario's conversations sit side by side in the list and in a chunk.
	var refs []convRef
	for ri, run := range in.Runs {
		ix.Targets = append(ix.Targets, run.Target)
		for ci, c := range run.Conversations {
			si, ok := scenIdx[c.ID]
			if !ok {
				si = addScen(Scenario{ID: c.ID, MetricID: c.MetricID}, true)
			}
			refs = append(refs, convRef{run: ri, row: ci, scen: si, target: ri})
		}
	}
	sort.SliceStable(refs, func(a, b int) bool {
		ra, rb := refs[a], refs[b]
		if ra.scen != rb.scen {
			return ra.scen < rb.scen
		}
		sa := in.Runs[ra.run].Conversations[ra.row].Sample
		sb := in.Runs[rb.run].Conversations[rb.row].Sample
		if sa != sb {
			return sa < sb
		}
		return ra.target < rb.target
	})

	scoreOf := make([]func(c *artifacts.Conversation) *artifacts.Score, len(in.Runs))
	for ri := range in.Runs {
		scoreOf[ri] = scoreMatcher(in.Runs[ri].Scores)
	}
	statusIdx := map[string]int{}
	recs := make([]convRec, len(refs))
	for i, r := range refs {
		run := &in.Runs[r.run]
		c := &run.Conversations[r.row]
		mid := c.MetricID
		if mid == "" {
			mid = metricFromID(c.ID)
		}
		m, ok := metricIdx[mid]
		if !ok {
			m = -1
		}
		st, ok := statusIdx[c.Status]
		if !ok {
			st = len(ix.Statuses)
			statusIdx[c.Status] = st
			ix.Statuses = append(ix.Statuses, c.Status)
		}
		v := verdictUnscored
		rec := convRec{StatusReason: c.StatusReason, Run: c.Run, Validity: c.Validity}
		if c.Usage != (artifacts.UsageRecord{}) {
			u := c.Usage
			rec.Usage = &u
		}
		if c.TargetModel != "" && c.TargetModel != run.Target {
			rec.TargetModel = c.TargetModel
		}
		if s := scoreOf[r.run](c); s != nil {
			switch {
			case s.Passed == nil:
				v = verdictNull
			case *s.Passed:
				v = verdictPass
			default:
				v = verdictFail
			}
			rec.Score = &scoreRec{Present: s.Present, Passed: s.Passed, Justification: s.Justification,
				NullReason: s.NullReason, Judges: s.Judges, Valid: s.Valid}
		}
		recs[i] = rec
		ix.T = append(ix.T, r.target)
		ix.S = append(ix.S, r.scen)
		ix.M = append(ix.M, m)
		ix.N = append(ix.N, c.Sample)
		ix.V = append(ix.V, v)
		ix.St = append(ix.St, st)
		ix.L = append(ix.L, len(c.Transcript))
		if c.ConvID != "" && c.ConvID != artifacts.ConvID(c.ID, run.Target, c.Sample) {
			ix.ID[i] = c.ConvID
		}
	}

	// Marshal and gzip chunks in parallel: this is most of Build's time at scale.
	nConv := (len(refs) + chunkConvs - 1) / chunkConvs
	nScen := (len(scens) + chunkScenarios - 1) / chunkScenarios
	st := &store{Index: ix, ConvChunks: make([][]byte, nConv), ScenChunks: make([][]byte, nScen)}
	st.Index.NChunks, st.Index.NSChunks = nConv, nScen
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(runtime.GOMAXPROCS(0))
	for k := range nConv {
		g.Go(func() error {
			if err := gctx.Err(); err != nil {
				return err
			}
			lo, hi := k*chunkConvs, min((k+1)*chunkConvs, len(refs))
			var ch convChunk
			strIdx := map[string]int{}
			intern := func(s string) int {
				if i, ok := strIdx[s]; ok {
					return i
				}
				strIdx[s] = len(ch.Strs)
				ch.Strs = append(ch.Strs, s)
				return len(ch.Strs) - 1
			}
			out := make([]convRec, hi-lo)
			for j := lo; j < hi; j++ {
				r := refs[j]
				c := &in.Runs[r.run].Conversations[r.row]
				rec := recs[j]
				rec.Tr = make([]int, 0, 2*len(c.Transcript))
				for _, t := range c.Transcript {
					rec.Tr = append(rec.Tr, intern(t.Role), intern(t.Content))
				}
				out[j-lo] = rec
			}
			ch.Recs = out
			b, err := gzipJSON(ch)
			st.ConvChunks[k] = b
			return err
		})
	}
	for k := range nScen {
		g.Go(func() error {
			lo, hi := k*chunkScenarios, min((k+1)*chunkScenarios, len(scens))
			b, err := gzipJSON(scens[lo:hi])
			st.ScenChunks[k] = b
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	return st, nil
}

// scoreMatcher finds a conversation's score row: by conv_id when both have
// one, else by (scenario id, sample) — legacy rows have no conv_id. The last
// row wins, like a rerun that appended a fresh verdict.
func scoreMatcher(scores []artifacts.Score) func(c *artifacts.Conversation) *artifacts.Score {
	byConv := map[string]*artifacts.Score{}
	type key struct {
		id     string
		sample int
	}
	byKey := map[key]*artifacts.Score{}
	for i := range scores {
		s := &scores[i]
		if s.ConvID != "" {
			byConv[s.ConvID] = s
		}
		byKey[key{s.ID, s.Sample}] = s
	}
	return func(c *artifacts.Conversation) *artifacts.Score {
		if c.ConvID != "" {
			if s, ok := byConv[c.ConvID]; ok {
				return s
			}
		}
		return byKey[key{c.ID, c.Sample}]
	}
}

// gzipJSON encodes v without HTML escaping (the result is base64 text, never
// markup; the page parses it with JSON.parse and renders via textContent).
func gzipJSON(v any) ([]byte, error) {
	var buf bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&buf, gzip.DefaultCompression)
	enc := json.NewEncoder(zw)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
