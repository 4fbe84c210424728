package viewer

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Who may reach what. A viewer started without reviewers has one user —
// the researcher, on their own machine — and trusts its loopback address as
// before: its page is at / and reads need no token. Started with reviewers
// (view --reviewer NAME), it is a team's, and every API request and page
// must carry a token: the researcher's link, or one reviewer's. A reviewer
// token reaches only the review queue, review items, that reviewer's own
// labels and the Play page, and the answers it gets are blind by
// construction — they never name a target, hold a verdict or another
// person's label — whatever --blind says. The researcher's token reaches
// everything. Tokens are 256 random bits, compared in constant time,
// never logged and never written to disk.

// Role is what a token may reach.
type Role string

// Roles.
const (
	RoleResearcher Role = "researcher"
	RoleReviewer   Role = "reviewer"
)

// principal is who a request comes from.
type principal struct {
	role Role
	name string // the reviewer's name ("" for the researcher)
}

func (p principal) reviewer() bool { return p.role == RoleReviewer }

// credential is one token and whose it is.
type credential struct {
	token string
	who   principal
}

// Link is one person's way into the viewer: the URL view prints.
type Link struct {
	Role Role   `json:"role"`
	Name string `json:"name,omitempty"`
	URL  string `json:"url"`
}

// MaxReviewers bounds view --reviewer.
const MaxReviewers = 100

// CheckReviewerName says what is wrong with a reviewer's name ("" when
// nothing): it is the labeler of their labels and is printed.
func CheckReviewerName(name string) string {
	switch {
	case strings.TrimSpace(name) == "":
		return "it is empty"
	case name != strings.TrimSpace(name):
		return "it starts or ends with a space"
	case !utf8.ValidString(name):
		return "it is not valid UTF-8"
	case utf8.RuneCountInString(name) > maxLabelerLen:
		return fmt.Sprintf("it is longer than %d characters", maxLabelerLen)
	case strings.IndexFunc(name, unicode.IsControl) >= 0:
		return "it contains a control character"
	}
	return ""
}

// newCredentials makes the researcher's token and one per reviewer.
func newCredentials(reviewers []string) ([]credential, error) {
	if len(reviewers) > MaxReviewers {
		return nil, fmt.Errorf("view: %d reviewers, at most %d", len(reviewers), MaxReviewers)
	}
	var out []credential
	add := func(p principal) error {
		tok := make([]byte, 32)
		if _, err := rand.Read(tok); err != nil {
			return err
		}
		out = append(out, credential{token: hex.EncodeToString(tok), who: p})
		return nil
	}
	if err := add(principal{role: RoleResearcher}); err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	for _, name := range reviewers {
		if why := CheckReviewerName(name); why != "" {
			return nil, fmt.Errorf("view: reviewer name %q: %s", name, why)
		}
		if seen[name] {
			return nil, fmt.Errorf("view: reviewer %q named twice", name)
		}
		seen[name] = true
		if err := add(principal{role: RoleReviewer, name: name}); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// team reports whether reviewers were configured (every request needs a
// token).
func (s *Server) team() bool { return len(s.creds) > 1 }

// lookup finds the principal of a token. Every credential is compared, in
// constant time each, so the time taken says nothing about the tokens.
func (s *Server) lookup(tok string) (principal, bool) {
	var found principal
	ok := 0
	for _, c := range s.creds {
		if subtle.ConstantTimeCompare([]byte(tok), []byte(c.token)) == 1 {
			found, ok = c.who, 1
		}
	}
	return found, ok == 1
}

// Links are the URLs of the researcher and every reviewer on base (the
// served address, "http://127.0.0.1:8377"). Without reviewers the
// researcher's is base itself.
func (s *Server) Links(base string) []Link {
	base = strings.TrimSuffix(base, "/")
	if !s.team() {
		return []Link{{Role: RoleResearcher, URL: base + "/"}}
	}
	out := make([]Link, 0, len(s.creds))
	for _, c := range s.creds {
		out = append(out, Link{Role: c.who.role, Name: c.who.name, URL: base + "/k/" + c.token + "/"})
	}
	return out
}

type principalKey struct{}

// whoOf is the request's principal (set by the route's access check).
func whoOf(r *http.Request) principal {
	p, _ := r.Context().Value(principalKey{}).(principal)
	return p
}

// access says who may call a route.
type access int

const (
	public     access = iota // anyone who reaches the address (the static files)
	anyone                   // the researcher or a reviewer
	researcher               // the researcher only
)

// errNoToken is the answer to a request without a valid token.
// A reviewer never saw view print anything, and links change at every
// start: the answer says so, and whom to ask.
var errNoToken = errors.New("this viewer is shared with reviewers, and this is not one of its links now: " +
	"links change each time impactbench view starts, so ask the person who started it for your current link (they are printed at its start)")

// authorize resolves the request's principal — from its X-IB-Token
// header, or the /k/{token}/ of its path for pages — and checks it may use
// a route of this access. Without reviewers, a request without a token is
// the researcher's.
func (s *Server) authorize(r *http.Request, a access) (principal, int, error) {
	if a == public {
		return principal{role: RoleResearcher}, 0, nil
	}
	tok := r.Header.Get("X-IB-Token")
	if tok == "" {
		tok = r.PathValue("token")
	}
	p := principal{role: RoleResearcher}
	switch {
	case tok != "":
		var ok bool
		if p, ok = s.lookup(tok); !ok {
			return p, http.StatusUnauthorized, errNoToken
		}
	case s.team():
		return principal{}, http.StatusUnauthorized, errNoToken
	}
	if a == researcher && p.role != RoleResearcher {
		return p, http.StatusForbidden, errors.New("forbidden: a reviewer's link reaches the review queue, review items, your own labels and the Play page only")
	}
	return p, 0, nil
}

// route is one URL pattern the server answers, who may use it, and its
// handler.
type route struct {
	pattern string // method and path, as http.ServeMux takes them
	access  access
	h       http.HandlerFunc
}

// withAccess wraps a route's handler in its access check.
func (s *Server) withAccess(rt route) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		p, code, err := s.authorize(r, rt.access)
		if err != nil {
			if strings.HasPrefix(r.URL.Path, "/api/") {
				writeErr(w, code, "%v", err)
			} else {
				http.Error(w, err.Error(), code)
			}
			return
		}
		rt.h(w, r.WithContext(context.WithValue(r.Context(), principalKey{}, p)))
	}
}

// Routes lists every pattern the server answers (method and path), for
// tests that check each one: a new route is in this list by construction.
func (s *Server) Routes() []string {
	var out []string
	for _, rt := range s.routes() {
		out = append(out, rt.pattern)
	}
	return slices.Clip(out)
}
