package viewer

import (
	"context"
	"sync"
	"time"

	"github.com/impactbench/impactbench/internal/artifacts"
	"github.com/impactbench/impactbench/internal/callstore"
	"github.com/impactbench/impactbench/internal/layout"
)

// A run in progress has written nothing but its call store yet:
// conversations.json and scores.json appear when their phase ends. So live
// progress counts units of .cache/<bench>/calls (callstore.List): a unit of
// <target>/sim with a stored result is a finished conversation, one with
// calls made since is running, and a unit of <target>/eval with a result a
// judged one. Units from an earlier run of the same rows count as done too, which
// is what a resumed run will find as well.

// activeWindow: a benchmark whose call store changed this recently is shown
// as running.
const activeWindow = 15 * time.Second

// recentConvs is how many just-finished conversations the live view lists.
const recentConvs = 12

type progressView struct {
	Stamp       string           `json:"stamp"`
	Active      bool             `json:"active"`
	IdleSeconds float64          `json:"idle_s"` // since the call store last changed (-1: no store)
	Metrics     int              `json:"metrics"`
	ScenUnits   int              `json:"scen_units"` // gen_scenarios units done
	Scenarios   int              `json:"scenarios"`  // rows in scenarios.json
	HasScens    bool             `json:"has_scenarios"`
	Samples     int              `json:"samples"`
	Targets     []targetProgress `json:"targets"`
	LoadMs      float64          `json:"load_ms"`
	Labels      int              `json:"labels"`
	Notes       []string         `json:"notes"`
}

type targetProgress struct {
	Target     string       `json:"target"`
	Expected   int          `json:"expected"`    // scenarios × samples
	SimDone    int          `json:"sim_done"`    // finished conversations in the call store
	SimRunning int          `json:"sim_running"` // conversations in flight
	Convs      int          `json:"convs"`       // rows in conversations.json
	HasConvs   bool         `json:"has_convs"`
	EvalDone   int          `json:"eval_done"`
	Scores     int          `json:"scores"`
	HasScores  bool         `json:"has_scores"`
	Results    bool         `json:"results"`
	Recent     []recentConv `json:"recent"`
}

type recentConv struct {
	Unit   string `json:"unit"`
	ConvID string `json:"conv_id"`
	Status string `json:"status"`
	Turns  int    `json:"turns"`
	At     string `json:"at"`
}

// unitDir is one call-store directory's listing.
type unitDir struct {
	mtime   time.Time            // the latest write seen in it
	done    []callstore.UnitFile // completed units, newest first
	running int                  // units in progress
}

// dirCache reads a benchmark's call store for the live view through one
// Store kept for the server's life, so each listing and result read only
// reads what was written since the last (the store appends to segment
// files: a directory's mtime no longer says that something changed).
type dirCache struct {
	mu    sync.Mutex
	root  string
	store *callstore.Store
}

// open returns the Store of the call store at calls.
func (c *dirCache) open(calls string) *callstore.Store {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.store == nil || c.root != calls {
		c.store, c.root = callstore.Open(calls, false), calls
	}
	return c.store
}

// list lists the directory rel ('/'-separated) of the call store at calls.
func (c *dirCache) list(calls, rel string) *unitDir {
	ls, err := c.open(calls).List(context.Background(), rel)
	if err != nil {
		return &unitDir{}
	}
	return &unitDir{mtime: ls.Changed, done: ls.Done, running: ls.InProgress}
}

// rows lists a directory of a target's rows (conversations, verdicts):
// the units whose names parse as a row (layout.ParseRowFile), so what the
// live view counts and opens is what the stages wrote.
func (c *dirCache) rows(calls, rel string) *unitDir {
	u := c.list(calls, rel)
	done := u.done[:0:0]
	for _, f := range u.done {
		if _, _, ok := layout.ParseRowFile(f.Name); ok {
			done = append(done, f)
		}
	}
	u.done = done
	return u
}

// has reports whether name is a finished unit in dir: the only way a unit
// named in a request reaches the file system.
func (u *unitDir) has(name string) bool {
	for _, f := range u.done {
		if f.Name == name {
			return true
		}
	}
	return false
}

// callsDir is the benchmark's call store.
func (s *Server) callsDir(bench string) string {
	return layout.ForProject(s.opts.ProjectDir, layout.BenchDir(s.opts.ProjectDir, bench)).Calls()
}

// liveTargets are the targets a live view may show: configured targets and
// run directories. Requests naming any other target are refused.
func (s *Server) liveTargets(ix *benchIndex) []string {
	seen := map[string]bool{}
	var out []string
	for _, t := range s.opts.Settings.Targets {
		if !seen[t.ID] {
			seen[t.ID] = true
			out = append(out, t.ID)
		}
	}
	for _, r := range ix.runs {
		if !seen[r.target] {
			seen[r.target] = true
			out = append(out, r.target)
		}
	}
	return out
}

func (s *Server) progress(st *benchState, ix *benchIndex) progressView {
	calls := s.callsDir(st.name)
	pv := progressView{Stamp: ix.stampHash(), Metrics: len(ix.bench.Metrics), Scenarios: len(ix.scens),
		HasScens: ix.scenSpans != nil, Samples: s.opts.Samples, LoadMs: float64(ix.loadDur.Microseconds()) / 1000,
		Notes: ix.notes, IdleSeconds: -1}
	if pv.Samples <= 0 {
		pv.Samples = 1
		for _, c := range ix.convs {
			pv.Samples = max(pv.Samples, c.sample+1)
		}
	}
	if pv.Notes == nil {
		pv.Notes = []string{}
	}
	newest := time.Time{}
	note := func(u *unitDir) {
		if u.mtime.After(newest) {
			newest = u.mtime
		}
		if len(u.done) > 0 && u.done[0].ModTime.After(newest) {
			newest = u.done[0].ModTime
		}
	}
	gs := st.dirs.list(calls, layout.GenScenariosDir)
	note(gs)
	pv.ScenUnits = len(gs.done)
	runs := map[string]*run{}
	for i := range ix.runs {
		runs[ix.runs[i].target] = &ix.runs[i]
	}
	store := st.dirs.open(calls)
	for _, t := range s.liveTargets(ix) {
		tp := targetProgress{Target: t, Expected: len(ix.scens) * pv.Samples, Recent: []recentConv{}}
		sim := st.dirs.rows(calls, layout.TargetDir(t, layout.SimDir))
		ev := st.dirs.rows(calls, layout.TargetDir(t, layout.EvalDir))
		note(sim)
		note(ev)
		tp.SimDone, tp.SimRunning, tp.EvalDone = len(sim.done), sim.running, len(ev.done)
		if r := runs[t]; r != nil {
			tp.Convs, tp.HasConvs, tp.Scores, tp.HasScores = len(r.convs), r.hasConvs, len(r.scores), r.hasScores
		}
		tp.Results = ix.results[t]
		for _, f := range sim.done[:min(recentConvs, len(sim.done))] {
			rc := recentConv{Unit: f.Name, At: f.ModTime.UTC().Format(time.RFC3339)}
			var c artifacts.Conversation
			id, sample, _ := layout.ParseRowFile(f.Name) // rows lists only what parses
			if _, ok := store.ReadResult(layout.SimUnit(t, id, sample), &c); ok {
				rc.ConvID, rc.Status, rc.Turns = c.ConvID, c.Status, len(c.Transcript)
			}
			tp.Recent = append(tp.Recent, rc)
		}
		pv.Targets = append(pv.Targets, tp)
	}
	if pv.Targets == nil {
		pv.Targets = []targetProgress{}
	}
	if !newest.IsZero() {
		idle := s.now().Sub(newest)
		pv.IdleSeconds = idle.Seconds()
		pv.Active = idle < activeWindow
	}
	return pv
}
