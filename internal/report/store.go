package report

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"runtime"
	"sort"
	"sync"

	"github.com/impactbench/impactbench/internal/artifacts"
	"github.com/impactbench/impactbench/internal/fsx"
	"github.com/impactbench/impactbench/internal/human"
	"github.com/impactbench/impactbench/internal/results"
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
	// P names the person who played the user, for the conversations people
	// played (the viewer's Play page); Dr marks those still being played.
	P  map[int]string `json:"p"`
	Dr map[int]bool   `json:"dr"`

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
	Fidelity     *artifacts.Fidelity    `json:"fid,omitempty"`
	Score        *scoreRec              `json:"sc,omitempty"`
	TargetModel  string                 `json:"tm,omitempty"` // the row's target_model when it differs from the run dir
	// Highlights are the judges' quotes found in the transcript (see highlights).
	Highlights [][3]int `json:"hl,omitempty"`
	// Ut is the simulated user's hidden reasoning, one per user message
	// (string-table indices); shown behind a toggle.
	Ut []int `json:"ut,omitempty"`
	// Rf, Tc and Rp mark messages by transcript index, as the row stores
	// them: Rf the target replies its provider stopped for safety
	// (refused), Tc the messages made from a reply cut short (truncated),
	// Rp a simulated user's message that needed a repair to read, as
	// [index, string-table index of the fixed phrase] (_repairs).
	Rf []int    `json:"rf,omitempty"`
	Tc []int    `json:"tc,omitempty"`
	Rp [][2]int `json:"rp,omitempty"`
}

type scoreRec struct {
	Present       *bool                    `json:"present"`
	Passed        *bool                    `json:"passed"`
	Justification string                   `json:"justification"`
	NullReason    string                   `json:"null_reason,omitempty"`
	Judges        []artifacts.JudgeVerdict `json:"judges,omitempty"`
	Valid         *bool                    `json:"valid,omitempty"`
	Judge         string                   `json:"judge,omitempty"`
	Evidence      []artifacts.Quote        `json:"evidence,omitempty"`
	Unverified    *bool                    `json:"unverified,omitempty"`
	// BreakTurn is, for a failed row whose behaviour was seen, the first
	// assistant turn its evidence was found in (0: none).
	BreakTurn int `json:"bt,omitempty"`
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

// store is the index plus what it takes to write the chunks: they are
// encoded and written one window at a time (writeChunks), so neither the
// transcripts nor their compressed form are ever all in memory.
type store struct {
	Index convIndex

	in    *Input
	refs  []convRef
	score []int     // per ref: its row in the run's scores (-1: unscored)
	stubs []scenRec // scenarios only conversations know, after the real ones
	// first marks the in.Scenarios rows that are their id's first
	// occurrence: the ones the scenario chunks show.
	first   []bool
	nConvCh int
}

type convRef struct {
	run, row int
	scen     int
	target   int
	human    int // index into the run's Human (-1: a simulated conversation)
}

// conv is the conversation a ref points at.
func (st *store) conv(r convRef) *artifacts.Conversation {
	run := &st.in.Runs[r.run]
	if r.human >= 0 {
		return &run.Human[r.human].Conversation
	}
	return &run.Conversations[r.row]
}

// storeBuilder holds the lookups buildStore fills the index with: where each
// metric, axis value, scenario id and status sits in its column.
type storeBuilder struct {
	ix        convIndex
	st        *store
	metricIdx map[string]int
	axisIdx   map[string]int
	valIdx    []map[string]int
	scenIdx   map[string]int
	statusIdx map[string]int
	nAxes     int
}

// buildStore indexes in's scenarios and conversations for the report's
// list: one column per field, one row per conversation.
func buildStore(ctx context.Context, in *Input, metrics []metricView, axes []axisView) (*store, error) {
	b := newStoreBuilder(in, metrics, axes)
	st := b.st
	// Scenarios: scenarios.json order, then stubs for ids only conversations know.
	for i, sc := range in.Scenarios {
		if _, dup := b.scenIdx[sc.ID]; !dup {
			b.addScen(sc)
			st.first[i] = true
		}
	}
	refs := b.convRefs()
	b.matchScores(refs)
	for _, col := range []*[]int{&b.ix.T, &b.ix.S, &b.ix.M, &b.ix.N, &b.ix.V, &b.ix.St, &b.ix.L} {
		*col = make([]int, 0, len(refs))
	}
	for i, r := range refs {
		if i%4096 == 0 {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
		}
		b.indexConv(i, r)
	}
	st.refs = refs
	st.Index = b.ix
	st.Index.NChunks = (len(refs) + chunkConvs - 1) / chunkConvs
	st.nConvCh = st.Index.NChunks
	st.Index.NSChunks = (len(b.ix.SID) + chunkScenarios - 1) / chunkScenarios
	return st, nil
}

// newStoreBuilder starts an empty index and the store it will belong to,
// with metrics and axis values numbered in the order the report lists them.
func newStoreBuilder(in *Input, metrics []metricView, axes []axisView) *storeBuilder {
	b := &storeBuilder{
		// Empty, not nil, slices: app.js reads every column as an array.
		ix: convIndex{ChunkSize: chunkConvs, SChunkSize: chunkScenarios, ID: map[int]string{}, P: map[int]string{}, Dr: map[int]bool{},
			Targets: []string{}, Statuses: []string{}, T: []int{}, S: []int{}, M: []int{}, N: []int{},
			V: []int{}, St: []int{}, L: []int{}, SID: []string{}, SGoal: []string{}, SD: [][]int{}},
		st:        &store{in: in, first: make([]bool, len(in.Scenarios))},
		metricIdx: map[string]int{},
		axisIdx:   map[string]int{},
		valIdx:    make([]map[string]int, len(axes)),
		scenIdx:   map[string]int{},
		statusIdx: map[string]int{},
		nAxes:     len(axes),
	}
	for i, m := range metrics {
		b.metricIdx[m.ID] = i
	}
	for i, a := range axes {
		b.axisIdx[a.Name] = i
		b.valIdx[i] = map[string]int{}
		for j, v := range a.Values {
			b.valIdx[i][v] = j
		}
	}
	return b
}

// addScen appends scenario sc to the scenario columns, its demographic
// values as indexes into the axes (-1 where it has none), and returns its row.
func (b *storeBuilder) addScen(sc Scenario) int {
	i := len(b.ix.SID)
	b.scenIdx[sc.ID] = i
	dv := make([]int, b.nAxes)
	for k := range dv {
		dv[k] = -1
	}
	for _, av := range sc.Demographic {
		if a, ok := b.axisIdx[av.Axis]; ok {
			dv[a] = b.valIdx[a][av.Value]
		}
	}
	b.ix.SID = append(b.ix.SID, sc.ID)
	b.ix.SGoal = append(b.ix.SGoal, sc.UserGoal)
	b.ix.SD = append(b.ix.SD, dv)
	return i
}

// scenOf is the scenario row of id, a stub added for an id only
// conversations know.
func (b *storeBuilder) scenOf(id, metric string) int {
	si, ok := b.scenIdx[id]
	if !ok {
		si = b.addScen(Scenario{ID: id, MetricID: metric})
		b.st.stubs = append(b.st.stubs, scenRec{ID: id, Stub: true})
	}
	return si
}

// convRefs lists every run's conversations, ordered scenario → sample →
// target so the same scenario's conversations sit side by side in the list
// and in a chunk, people's after the simulated ones of the same scenario.
func (b *storeBuilder) convRefs() []convRef {
	in, st := b.st.in, b.st
	n := 0
	for _, run := range in.Runs {
		n += len(run.Conversations) + len(run.Human)
	}
	refs := make([]convRef, 0, n)
	for ri, run := range in.Runs {
		b.ix.Targets = append(b.ix.Targets, run.Target)
		for ci, c := range run.Conversations {
			refs = append(refs, convRef{run: ri, row: ci, scen: b.scenOf(c.ID, c.MetricID), target: ri, human: -1})
		}
		for hi, c := range run.Human { // people's, after the simulated ones of the same scenario
			refs = append(refs, convRef{run: ri, row: -1, scen: b.scenOf(c.ID, c.MetricID), target: ri, human: hi})
		}
	}
	sort.SliceStable(refs, func(x, y int) bool {
		ra, rb := refs[x], refs[y]
		if ra.scen != rb.scen {
			return ra.scen < rb.scen
		}
		if (ra.human >= 0) != (rb.human >= 0) {
			return ra.human < 0
		}
		if sa, sb := st.conv(ra).Sample, st.conv(rb).Sample; sa != sb {
			return sa < sb
		}
		return ra.target < rb.target
	})
	return refs
}

// matchScores finds, for each ref, its row in its run's scores (or its
// person's score), -1 when it has none.
func (b *storeBuilder) matchScores(refs []convRef) {
	in, st := b.st.in, b.st
	st.score = make([]int, len(refs))
	for ri := range in.Runs {
		match := scoreMatcher(in.Runs[ri].Scores)
		for i, r := range refs {
			if r.run != ri {
				continue
			}
			if r.human >= 0 {
				st.score[i] = humanScoreOf(in.Runs[ri].HumanScores, st.conv(r).ConvID)
				continue
			}
			st.score[i] = match(&in.Runs[ri].Conversations[r.row])
		}
	}
}

// indexConv appends conversation i (ref r) to the index's columns: its
// target, scenario, metric, sample, verdict, status and length, and, where
// they are not the usual ones, its player, draft mark and conversation id.
func (b *storeBuilder) indexConv(i int, r convRef) {
	st, ix := b.st, &b.ix
	run := &st.in.Runs[r.run]
	c := st.conv(r)
	mid := c.MetricID
	if mid == "" {
		mid = metricFromID(c.ID)
	}
	m, ok := b.metricIdx[mid]
	if !ok {
		m = -1
	}
	status := c.Status
	if r.human >= 0 {
		h := &run.Human[r.human]
		ix.P[i] = h.Player
		if h.State == human.Playing {
			ix.Dr[i], status = true, human.Playing
		}
	}
	stx, ok := b.statusIdx[status]
	if !ok {
		stx = len(ix.Statuses)
		b.statusIdx[status] = stx
		ix.Statuses = append(ix.Statuses, status)
	}
	ix.T = append(ix.T, r.target)
	ix.S = append(ix.S, r.scen)
	ix.M = append(ix.M, m)
	ix.N = append(ix.N, c.Sample)
	ix.V = append(ix.V, b.verdict(i, r))
	ix.St = append(ix.St, stx)
	ix.L = append(ix.L, st.transcriptLen(r))
	if c.ConvID != "" && c.ConvID != artifacts.ConvID(c.ID, run.Target, c.Sample) {
		ix.ID[i] = c.ConvID
	}
}

// verdict is conversation i's verdict code: unscored, null, pass or fail.
func (b *storeBuilder) verdict(i int, r convRef) int {
	v := verdictUnscored
	if k := b.st.score[i]; k >= 0 {
		switch p := b.st.scoreRow(r, k).Passed; {
		case p == nil:
			v = verdictNull
		case *p:
			v = verdictPass
		default:
			v = verdictFail
		}
	}
	return v
}

func (st *store) transcriptLen(r convRef) int {
	run := &st.in.Runs[r.run]
	if r.human < 0 && run.convSrc != nil {
		return int(run.convSrc.spans[r.row].n)
	}
	return len(st.conv(r).Transcript)
}

// scoreRow is score row k of ref r's scores (people's or the run's).
func (st *store) scoreRow(r convRef, k int) *artifacts.Score {
	run := &st.in.Runs[r.run]
	if r.human >= 0 {
		return &run.HumanScores[k].Score
	}
	return &run.Scores[k]
}

// humanScoreOf is the row of convID's verdict among people's (-1: none).
func humanScoreOf(scores []human.Score, convID string) int {
	for i := range scores {
		if scores[i].ConvID == convID {
			return i
		}
	}
	return -1
}

// convBulk is what a chunk record takes from a conversation row: for a
// file-backed run (after the index is built the rows themselves are
// released) all of it is read back from the row's bytes. A score row is
// read straight into its scoreRec, whose keys are scores.json's.
type convBulk struct {
	TargetModel  string                `json:"target_model"`
	Transcript   []artifacts.Turn      `json:"transcript"`
	Usage        artifacts.UsageRecord `json:"_usage"`
	StatusReason string                `json:"status_reason"`
	Run          *artifacts.RunInfo    `json:"run"`
	Validity     *artifacts.Validity   `json:"validity"`
	UserThoughts []string              `json:"user_thoughts"`
	Fidelity     *artifacts.Fidelity   `json:"fidelity"`
	Refused      []int                 `json:"refused"`
	Truncated    []int                 `json:"truncated"`
	Repairs      []string              `json:"_repairs"`
}

// releaseRows drops the rows of file-backed runs once the index is built:
// the chunks read everything they show back from the files.
func (st *store) releaseRows() {
	for i := range st.in.Runs {
		run := &st.in.Runs[i]
		if run.convSrc != nil {
			run.Conversations = nil
		}
		if run.scoreSrc != nil {
			run.Scores = nil
		}
	}
}

// writeChunks writes the conversation chunks, then the scenario chunks, as
// <script> elements: encoded in parallel a window at a time, written in
// order.
func (st *store) writeChunks(ctx context.Context, w *bufio.Writer) error {
	files := map[string]*os.File{}
	defer func() {
		for _, f := range files {
			f.Close()
		}
	}()
	// Files are opened up front: ReadAt on one *os.File is safe from many
	// goroutines. They are opened as Load opened them (fsx.Open): a file
	// swapped for a named pipe meanwhile fails instead of blocking forever.
	for _, run := range st.in.Runs {
		for _, src := range []*rowSource{run.convSrc, run.scoreSrc} {
			if src == nil || len(src.spans) == 0 || files[src.path] != nil {
				continue
			}
			f, err := fsx.Open(src.path)
			if err != nil {
				return err
			}
			files[src.path] = f
		}
	}
	workers := runtime.GOMAXPROCS(0)
	k := 0
	err := encodeOrdered(ctx, workers, func() (int, bool, error) {
		k++
		return k - 1, k <= st.nConvCh, nil
	}, func(k int) ([]byte, error) {
		return st.convChunk(k, files)
	}, func(k int, gz []byte) { writeChunk(w, "ibc-", k, gz) })
	if err != nil {
		return err
	}
	next, stop, err := st.scenarioBatches(ctx)
	if err != nil {
		return err
	}
	defer stop()
	k = 0
	return encodeOrdered(ctx, workers, next, func(b []scenRec) ([]byte, error) {
		return gzipJSON(b)
	}, func(_ int, gz []byte) {
		writeChunk(w, "ibs-", k, gz)
		k++
	})
}

// convChunk encodes conversation chunk k, reading each row's bulk back
// from its file when Load left it there.
func (st *store) convChunk(k int, files map[string]*os.File) ([]byte, error) {
	lo, hi := k*chunkConvs, min((k+1)*chunkConvs, len(st.refs))
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
	ch.Recs = make([]convRec, hi-lo)
	for j := lo; j < hi; j++ {
		r := st.refs[j]
		run := &st.in.Runs[r.run]
		var bulk convBulk
		if r.human < 0 && run.convSrc != nil {
			if err := readBulk(files[run.convSrc.path], run.convSrc, r.row, &bulk); err != nil {
				return nil, err
			}
		} else {
			c := st.conv(r)
			bulk = convBulk{TargetModel: c.TargetModel, Transcript: c.Transcript, Usage: c.Usage,
				StatusReason: c.StatusReason, Run: c.Run, Validity: c.Validity, UserThoughts: c.UserThoughts, Fidelity: c.Fidelity,
				Refused: c.Refused, Truncated: c.Truncated, Repairs: c.Repairs}
		}
		rec := convRec{StatusReason: bulk.StatusReason, Run: bulk.Run, Validity: bulk.Validity, Fidelity: bulk.Fidelity}
		if bulk.Usage != (artifacts.UsageRecord{}) {
			u := bulk.Usage
			rec.Usage = &u
		}
		if bulk.TargetModel != "" && bulk.TargetModel != run.Target {
			rec.TargetModel = bulk.TargetModel
		}
		if si := st.score[j]; si >= 0 {
			var sr scoreRec
			if r.human < 0 && run.scoreSrc != nil {
				if err := readBulk(files[run.scoreSrc.path], run.scoreSrc, si, &sr); err != nil {
					return nil, err
				}
			} else {
				s := st.scoreRow(r, si)
				sr = scoreRec{Present: s.Present, Passed: s.Passed, Justification: s.Justification,
					NullReason: s.NullReason, Judges: s.Judges, Valid: s.Valid,
					Judge: s.Judge, Evidence: s.Evidence, Unverified: s.Unverified}
			}
			if sr.Passed != nil && !*sr.Passed && sr.Present != nil && *sr.Present {
				sr.BreakTurn = results.BreakTurnOf(sr.Evidence)
			}
			rec.Score = &sr
		}
		rec.Tr = make([]int, 0, 2*len(bulk.Transcript))
		for _, t := range bulk.Transcript {
			rec.Tr = append(rec.Tr, intern(t.Role), intern(t.Content))
		}
		if rec.Score != nil {
			rec.Highlights = highlights(bulk.Transcript, rec.Score)
		}
		for _, t := range bulk.UserThoughts {
			rec.Ut = append(rec.Ut, intern(t))
		}
		rec.Rf, rec.Tc = bulk.Refused, bulk.Truncated
		for _, r := range bulk.Repairs {
			if i, what, ok := artifacts.MessageRepair(r); ok {
				rec.Rp = append(rec.Rp, [2]int{i, intern(what)})
			}
		}
		ch.Recs[j-lo] = rec
	}
	return gzipJSON(ch)
}

// readBulk decodes row i of src into v.
func readBulk(f *os.File, src *rowSource, i int, v any) error {
	b, err := rowBytes(f, src.spans[i])
	if err == nil {
		err = json.Unmarshal(b, v)
	}
	if err != nil {
		return fmt.Errorf("%s row %d: %w (the file changed while the report was built? build it again)", src.path, i, err)
	}
	return nil
}

// scenarioBatches yields the scenario chunks' records in index order: the
// first occurrence of each scenarios.json id (streamed from the file again
// when Load left the bulk there), then the stubs.
func (st *store) scenarioBatches(ctx context.Context) (next func() ([]scenRec, bool, error), stop func(), err error) {
	var batch []scenRec
	// take appends scenarios.json row i (sc) unless its id came before.
	take := func(i int, sc *Scenario) {
		if !st.first[i] {
			return
		}
		rec := scenRec{ID: sc.ID, Persona: sc.Persona, Goal: sc.UserGoal, Latent: sc.LatentAdversarialGoal, System: sc.TargetSystemPrompt}
		if sc.UserPersona != sc.Persona {
			rec.UserPersona = sc.UserPersona
		}
		for _, lm := range sc.Landmarks {
			rec.Landmarks = append(rec.Landmarks, [2]any{lm.Turn, lm.Instruction})
		}
		for _, av := range sc.Demographic {
			rec.Demographic = append(rec.Demographic, [2]string{av.Axis, av.Value})
		}
		batch = append(batch, rec)
	}
	stubs := st.stubs
	flush := func() ([]scenRec, bool, error) {
		// Stubs fill the batch once the real scenarios are exhausted.
		for len(batch) < chunkScenarios && len(stubs) > 0 {
			batch = append(batch, stubs[0])
			stubs = stubs[1:]
		}
		if len(batch) == 0 {
			return nil, false, nil
		}
		b := batch
		batch = nil
		return b, true, nil
	}
	if st.in.scenarioFile == "" || len(st.first) == 0 {
		i := 0
		next = func() ([]scenRec, bool, error) {
			for len(batch) < chunkScenarios && i < len(st.in.Scenarios) {
				take(i, &st.in.Scenarios[i])
				i++
			}
			return flush()
		}
		return next, func() {}, nil
	}
	// Opened as Load opened it (fsx.Open: a file swapped for a named pipe
	// meanwhile fails instead of blocking forever) and read no further than
	// Load read it: a file that grew meanwhile cannot make a row of it
	// larger than the file was.
	f, err := fsx.Open(st.in.scenarioFile)
	if err != nil {
		return nil, nil, err
	}
	dec := json.NewDecoder(bufio.NewReaderSize(io.LimitReader(f, st.in.scenarioEnd), 1<<20))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('[') {
		f.Close()
		return nil, nil, fmt.Errorf("%s: no longer a JSON array (changed while the report was built? build it again)", st.in.scenarioFile)
	}
	row := 0
	next = func() ([]scenRec, bool, error) {
		for len(batch) < chunkScenarios && row < len(st.first) {
			if row%4096 == 0 && ctx.Err() != nil {
				return nil, false, ctx.Err()
			}
			var sc Scenario
			if !dec.More() {
				return nil, false, fmt.Errorf("%s: %d scenarios, %d when it was loaded (changed while the report was built? build it again)", st.in.scenarioFile, row, len(st.first))
			}
			if err := dec.Decode(&sc); err != nil {
				return nil, false, fmt.Errorf("%s row %d: %w (changed while the report was built? build it again)", st.in.scenarioFile, row, err)
			}
			take(row, &sc)
			row++
		}
		return flush()
	}
	return next, func() { f.Close() }, nil
}

// encodeOrdered encodes the items next yields on up to workers goroutines
// and hands the results to write in order; at most about 2·workers encoded
// items are held at once. next is called from one goroutine, in order.
func encodeOrdered[T any](ctx context.Context, workers int, next func() (T, bool, error), encode func(T) ([]byte, error), write func(k int, b []byte)) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	type slot struct {
		b    []byte
		err  error
		done chan struct{}
	}
	slots := make(chan *slot, max(1, workers))
	sem := make(chan struct{}, max(1, workers))
	go func() {
		defer close(slots)
		for ctx.Err() == nil {
			item, ok, err := next()
			if !ok && err == nil {
				return
			}
			s := &slot{done: make(chan struct{})}
			if err != nil {
				s.err = err
				close(s.done)
				slots <- s
				return
			}
			select {
			case sem <- struct{}{}:
			case <-ctx.Done():
				return
			}
			go func() {
				defer func() { <-sem }()
				s.b, s.err = encode(item)
				close(s.done)
			}()
			select {
			case slots <- s:
			case <-ctx.Done():
				return
			}
		}
	}()
	var first error
	k := 0
	for s := range slots {
		<-s.done
		if first != nil {
			continue // drain so the producer and encoders finish
		}
		if s.err != nil {
			first = s.err
			cancel()
			continue
		}
		write(k, s.b)
		k++
	}
	if first == nil {
		first = ctx.Err()
	}
	return first
}

// scoreMatcher finds a conversation's score row: by conv_id when both have
// one, else by (scenario id, sample) — legacy rows have no conv_id. The last
// row wins, like a rerun that appended a fresh verdict. -1: no score.
func scoreMatcher(scores []artifacts.Score) func(c *artifacts.Conversation) int {
	byConv := map[string]int{}
	type key struct {
		id     string
		sample int
	}
	byKey := map[key]int{}
	for i := range scores {
		s := &scores[i]
		if s.ConvID != "" {
			byConv[s.ConvID] = i
		}
		byKey[key{s.ID, s.Sample}] = i
	}
	return func(c *artifacts.Conversation) int {
		if c.ConvID != "" {
			if i, ok := byConv[c.ConvID]; ok {
				return i
			}
		}
		if i, ok := byKey[key{c.ID, c.Sample}]; ok {
			return i
		}
		return -1
	}
}

// gzipPool reuses compressors: each holds about 1 MB of tables, and a
// 100,000-conversation report encodes 1,500 chunks.
var gzipPool = sync.Pool{New: func() any {
	zw, _ := gzip.NewWriterLevel(io.Discard, gzip.DefaultCompression)
	return zw
}}

// gzipJSON encodes v without HTML escaping (the result is base64 text, never
// markup; the page parses it with JSON.parse and renders via textContent).
func gzipJSON(v any) ([]byte, error) {
	var buf bytes.Buffer
	zw := gzipPool.Get().(*gzip.Writer)
	defer gzipPool.Put(zw)
	zw.Reset(&buf)
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
