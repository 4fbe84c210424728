package viewer

import (
	"context"
	"crypto/rand"
	"embed"
	"errors"
	"fmt"
	"html/template"
	"log/slog"
	"mime"
	"net"
	"net/http"
	"path/filepath"
	"sync"
	"time"

	"github.com/impactbench/impactbench/internal/human"
	"github.com/impactbench/impactbench/internal/layout"
	"github.com/impactbench/impactbench/internal/report"
	"github.com/impactbench/impactbench/internal/results"
)

//go:embed ui/index.html ui/app.js ui/style.css
var uiFS embed.FS

var pageTmpl = template.Must(template.ParseFS(uiFS, "ui/index.html"))

// Options configure a Server.
type Options struct {
	// ProjectDir holds benchmarks/ and .cache/ (config.yaml's directory).
	ProjectDir string
	// Settings describe the runs (targets in display order, models…), as
	// for the static report.
	Settings report.Settings
	// Samples is generation.num_samples (0: inferred from the data).
	Samples int
	// Blind makes review mode blind: the review page, its URLs and the API
	// answers it uses never name the target, the judges' verdicts, the
	// stratum or other labellers' labels; Reveal says whether the judges'
	// verdict is shown once the reviewer's own is saved.
	Blind  bool
	Reveal Reveal
	// Overlap is the share of the calibration queue's rows asked of a
	// second labeller, so that agreement between people is measured by
	// design (default 0.2; set OverlapSet to use 0).
	Overlap    float64
	OverlapSet bool
	// PlanHalfWidth is the half-width the calibration queue is drawn to
	// reach (results.PlanLabels; default results.DefaultPlanHalfWidth).
	PlanHalfWidth float64
	// Labels opens a benchmark's label store; default: FileLabels on
	// <benchDir>/labels.jsonl.
	Labels func(benchDir string) LabelStore
	// Play, when set, lets people play the user against a target (the
	// Play page): it makes the target's replies and the verdicts
	// (runner.Player). Nil: the page says playing is not available.
	Play Player
	// Reviewers are the people the viewer hands a link of their own
	// (Links): a reviewer's token reaches only the review queue, review
	// items, their own labels and the Play page, blind whatever Blind
	// says. With reviewers every request needs a token; without, the
	// viewer is the researcher's alone and trusts its loopback address.
	Reviewers []string
	// Seed is the calibration queue's default seed.
	Seed   uint64
	Logger *slog.Logger
	// Now is the clock (tests); default time.Now.
	Now func() time.Time
}

// Reveal is when blind review shows the judges' verdict.
type Reveal string

// Reveal settings: after the reviewer's label is saved (the default), or
// never.
const (
	RevealAfter Reveal = "after"
	RevealNever Reveal = "never"
)

// DefaultOverlap is the share of calibration rows asked of two labellers.
const DefaultOverlap = 0.2

// Server is the viewer. Create it with New, run it with Serve.
type Server struct {
	opts  Options
	token string // the researcher's
	creds []credential
	// places are the reviewers' places in the queue (by name); shared,
	// the holds of every view server on the project (sharedholds.go).
	places places
	shared *sharedHolds
	// promised are the reviewers' promised queues (promise.go); queues,
	// the queues drawn, kept while what they were drawn from is the same;
	// labelsRead, the labels files as last read (queuecache.go).
	promised   promises
	queues     queueCache
	labelsRead labelsRead
	// itemKey keys review item ids (review.go); leases remember who has
	// which item open.
	itemKey []byte
	// busy: conversations of the Play page waiting for a model.
	busy busySet

	mu      sync.Mutex
	benches map[string]*benchState
	hosts   map[string]bool // Host header values accepted (set by Serve)
}

// benchState is one benchmark's index, rebuilt when its files change.
type benchState struct {
	name, dir string
	labels    LabelStore
	dirs      dirCache
	humans    *human.Store // conversations people played (Play page)

	mu        sync.Mutex
	ix        *benchIndex
	lastCheck time.Time
}

// staleCheck: how often (at most) a request stats the files to see whether
// the index is out of date.
const staleCheck = 300 * time.Millisecond

// New returns a server over opts.ProjectDir.
func New(opts Options) (*Server, error) {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	switch opts.Reveal {
	case "":
		opts.Reveal = RevealAfter
	case RevealAfter, RevealNever:
	default:
		return nil, fmt.Errorf("view: reveal %q: want after or never", opts.Reveal)
	}
	if !opts.OverlapSet && opts.Overlap == 0 {
		opts.Overlap = DefaultOverlap
	}
	if opts.Overlap < 0 || opts.Overlap > 1 {
		return nil, fmt.Errorf("view: overlap %v: want a share between 0 and 1", opts.Overlap)
	}
	if opts.PlanHalfWidth == 0 {
		opts.PlanHalfWidth = results.DefaultPlanHalfWidth
	}
	if opts.Labels == nil {
		opts.Labels = func(dir string) LabelStore { return &FileLabels{Path: layout.Bench{Dir: dir}.Labels()} }
	}
	abs, err := filepath.Abs(opts.ProjectDir)
	if err != nil {
		return nil, err
	}
	opts.ProjectDir = abs
	creds, err := newCredentials(opts.Reviewers)
	if err != nil {
		return nil, err
	}
	key := make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		return nil, err
	}
	return &Server{opts: opts, token: creds[0].token, creds: creds, itemKey: key, benches: map[string]*benchState{}, hosts: map[string]bool{},
		shared: &sharedHolds{project: abs, log: opts.Logger}}, nil
}

func (s *Server) now() time.Time { return s.opts.Now() }

// IsLoopback reports whether addr's host is a loopback address or
// "localhost": the only addresses view binds to, since it has no login.
func IsLoopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// Serve answers on ln until ctx is done. ln must be a loopback listener.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	addr := ln.Addr().String()
	if !IsLoopback(addr) {
		return fmt.Errorf("view: refusing to serve on %s: only loopback addresses are allowed", addr)
	}
	_, port, _ := net.SplitHostPort(addr)
	s.mu.Lock()
	s.hosts[addr] = true
	s.hosts[net.JoinHostPort("localhost", port)] = true
	s.mu.Unlock()
	// A request's headers and body must arrive within these times (a
	// client trickling a body cannot hold a connection open for ever);
	// writes are not bounded, since a Play reply waits for a model.
	srv := &http.Server{Handler: s.Handler(), ReadHeaderTimeout: 10 * time.Second, ReadTimeout: 30 * time.Second,
		IdleTimeout: 2 * time.Minute, BaseContext: func(net.Listener) context.Context { return ctx }}
	// Serve returns once the connections are closed: Shutdown lets the
	// requests under way finish for 2 s, then the rest are closed, not
	// left running after Serve returned.
	shut := make(chan struct{})
	go func() {
		defer close(shut)
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		if srv.Shutdown(sctx) != nil {
			_ = srv.Close()
		}
	}()
	if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	<-shut
	return nil
}

// Warm loads every benchmark's index, so the first page is fast.
func (s *Server) Warm() {
	for _, name := range s.benchNames() {
		if st := s.bench(name); st != nil {
			st.index(s)
		}
	}
}

// benchNames lists benchmarks/<name> directories holding a benchmark.yaml.
func (s *Server) benchNames() []string {
	names, _ := layout.Benchmarks(s.opts.ProjectDir) // none yet: an empty list
	return names
}

// bench returns the state of the benchmark named exactly name, or nil. The
// name is compared with the directory listing, never joined to a path
// before that, so "..", encoded slashes and the like simply do not match.
func (s *Server) bench(name string) *benchState {
	found := false
	for _, n := range s.benchNames() {
		if n == name {
			found = true
			break
		}
	}
	if !found {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.benches[name]
	if st == nil {
		dir := layout.BenchDir(s.opts.ProjectDir, name)
		st = &benchState{name: name, dir: dir, labels: s.opts.Labels(dir), humans: human.Open(dir)}
		s.benches[name] = st
	}
	return st
}

// index returns the benchmark's index, reloading it when its files changed.
func (st *benchState) index(s *Server) *benchIndex {
	st.mu.Lock()
	defer st.mu.Unlock()
	now := time.Now()
	if st.ix != nil && now.Sub(st.lastCheck) < staleCheck {
		return st.ix
	}
	st.lastCheck = now
	if st.ix != nil && computeStamp(st.dir) == st.ix.stamp {
		return st.ix
	}
	st.ix = loadIndex(st.name, st.dir, s.opts.Settings, s.now())
	s.opts.Logger.Debug("view: loaded index", "bench", st.name, "conversations", len(st.ix.convs), "took", st.ix.loadDur)
	return st.ix
}

// Handler returns the viewer's routes behind its security checks.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	for _, rt := range s.routes() {
		mux.HandleFunc(rt.pattern, s.withAccess(rt))
	}
	return s.guard(mux)
}

// routes is every URL the server answers and who may use it (auth.go).
func (s *Server) routes() []route {
	b, q, p := s.withBench, reviewQueue{s}, playPage{s}
	return []route{
		{"GET /{$}", public, s.handleRoot},
		{"GET /k/{token}/{$}", anyone, s.handlePage},
		{"GET /static/{file}", public, s.handleStatic},
		{"GET /favicon.ico", public, func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) }},
		{"GET /api/me", anyone, q.handleMe},
		{"GET /api/benches", anyone, s.handleBenches},
		{"GET /api/queue", anyone, q.handleStudyQueue},
		{"GET /api/item", anyone, q.handleStudyItem},
		{"POST /api/label", anyone, q.handleStudyLabel},
		{"GET /api/next", anyone, q.handleNext},
		{"POST /api/skip", anyone, q.handleSkip},
		{"POST /api/unskip", anyone, q.handleUnskip},
		{"POST /api/hold", anyone, q.handleHold},
		{"GET /api/mine", anyone, q.handleMine},
		{"GET /api/b/{bench}/progress", researcher, b(s.handleProgress)},
		{"GET /api/b/{bench}/summary", researcher, b(s.handleSummary)},
		{"GET /api/b/{bench}/convs", researcher, b(s.handleConvs)},
		{"GET /api/b/{bench}/conv", researcher, b(s.handleConv)},
		{"GET /api/b/{bench}/scenario", researcher, b(s.handleScenario)},
		{"GET /api/b/{bench}/live", researcher, b(s.handleLive)},
		{"GET /api/b/{bench}/queue", researcher, b(q.handleQueue)},
		{"GET /api/b/{bench}/item", researcher, b(q.handleItem)},
		{"GET /api/b/{bench}/resolve", researcher, b(q.handleResolve)},
		{"GET /api/b/{bench}/labels", researcher, b(s.handleLabels)},
		{"POST /api/b/{bench}/labels", researcher, b(s.handleAddLabel)},
		{"GET /api/b/{bench}/play", anyone, b(p.handlePlayInfo)},
		{"GET /api/b/{bench}/play/conv", anyone, b(p.handlePlayConv)},
		{"GET /api/b/{bench}/play/compare", researcher, b(p.handlePlayCompare)},
		{"POST /api/b/{bench}/play/start", anyone, b(p.handlePlayStart)},
		{"POST /api/b/{bench}/play/send", anyone, b(p.handlePlaySend)},
		{"POST /api/b/{bench}/play/end", anyone, b(p.handlePlayEnd)},
		{"GET /report/{bench}", researcher, b(s.handleReport)},
		{"GET /k/{token}/report/{bench}", researcher, b(s.handleReport)},
	}
}

// Content-Security-Policy of the viewer's pages: its own script and style
// files only, requests only to itself, no inline code, no framing.
const viewerCSP = "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:; " +
	"base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// guard applies the checks every request passes before any route:
//   - Host must be the loopback address the server is bound to: a page on
//     another site that rebinds its DNS name to 127.0.0.1 sends its own
//     name as Host and is refused, so it can read nothing;
//   - writes must come from the viewer's own origin (Origin header, and
//     Sec-Fetch-Site when the browser sends it), carry the session token
//     the page was served with, and be JSON (a cross-site form cannot send
//     that without a CORS preflight, which is never granted).
func (s *Server) guard(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", viewerCSP)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("X-Frame-Options", "DENY")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("Cross-Origin-Opener-Policy", "same-origin")
		h.Set("Cross-Origin-Resource-Policy", "same-origin")
		s.mu.Lock()
		hostOK := s.hosts[r.Host]
		s.mu.Unlock()
		if !hostOK {
			http.Error(w, "forbidden: unexpected Host header (the viewer answers only on its loopback address)", http.StatusForbidden)
			return
		}
		switch r.Method {
		case http.MethodGet, http.MethodHead:
		case http.MethodPost:
			if err := s.checkWrite(r); err != nil {
				http.Error(w, "forbidden: "+err.Error(), http.StatusForbidden)
				return
			}
		default:
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		next.ServeHTTP(w, r)
	})
}

func (s *Server) checkWrite(r *http.Request) error {
	origin := r.Header.Get("Origin")
	if origin == "" || origin != "http://"+r.Host {
		return errors.New("cross-origin write refused")
	}
	if sfs := r.Header.Get("Sec-Fetch-Site"); sfs != "" && sfs != "same-origin" {
		return errors.New("cross-site write refused")
	}
	if mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || mt != "application/json" {
		return errors.New("writes must be application/json")
	}
	if _, ok := s.lookup(r.Header.Get("X-IB-Token")); !ok {
		return errors.New("missing or wrong session token (reload the page)")
	}
	return nil
}

// SetAllowedHost adds a Host header value the server accepts; Serve sets
// its own. For tests that serve Handler through another listener.
func (s *Server) SetAllowedHost(host string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.hosts[host] = true
}

// Token is the session token writes must carry (tests).
func (s *Server) Token() string { return s.token }

func (s *Server) withBench(h func(http.ResponseWriter, *http.Request, *benchState)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		st := s.bench(r.PathValue("bench"))
		if st == nil {
			http.Error(w, "no such benchmark", http.StatusNotFound)
			return
		}
		h(w, r, st)
	}
}

// handleRoot is / : the researcher's page on a viewer of their own; on a
// viewer shared with reviewers, a page holding no token that says to open
// one's link (anyone who reaches the address could load it).
func (s *Server) handleRoot(w http.ResponseWriter, r *http.Request) {
	if s.team() {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Header().Set("Cache-Control", "no-store")
		_ = pageTmpl.Execute(w, pageData{Door: true})
		return
	}
	s.handlePage(w, r)
}

// pageData fills the page's meta tags.
type pageData struct {
	Token, Blind, Reveal, Role, Name, Team string
	Door                                   bool
}

// handlePage serves the app to its principal, with the token it sends back.
func (s *Server) handlePage(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	p := whoOf(r)
	blind := s.opts.Blind || p.reviewer()
	tok := s.token
	if p.reviewer() {
		tok, _ = s.tokenOf(p)
	}
	reveal := s.opts.Reveal
	if p.reviewer() {
		reveal = RevealNever
	}
	_ = pageTmpl.Execute(w, pageData{Token: tok, Blind: fmt.Sprint(blind), Reveal: string(reveal), Role: string(p.role), Name: p.name, Team: fmt.Sprint(s.team())})
}

// tokenOf is p's token.
func (s *Server) tokenOf(p principal) (string, bool) {
	for _, c := range s.creds {
		if c.who == p {
			return c.token, true
		}
	}
	return "", false
}

var staticTypes = map[string]string{
	"app.js":    "text/javascript; charset=utf-8",
	"style.css": "text/css; charset=utf-8",
}

func (s *Server) handleStatic(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("file")
	ct, ok := staticTypes[name]
	if !ok {
		http.NotFound(w, r)
		return
	}
	b, err := uiFS.ReadFile("ui/" + name)
	if err != nil {
		http.NotFound(w, r)
		return
	}
	w.Header().Set("Content-Type", ct)
	w.Header().Set("Cache-Control", "no-cache")
	_, _ = w.Write(b)
}
