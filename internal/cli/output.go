package cli

import (
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/impactbench/impactbench/internal/sanitize"
	"github.com/impactbench/impactbench/internal/summary"
)

// safeAttr is the log handler's ReplaceAttr: every string value (the
// message included) loses the credentials of any URL in it and every
// control character, and an error value becomes such a string. Provider
// messages and file contents reach the log through error values and
// attributes; slog's text handler quotes unprintable characters, but a
// JSON handler or a future attribute kind must not be the one place they
// pass.
func safeAttr(_ []string, a slog.Attr) slog.Attr {
	switch v := a.Value.Any().(type) {
	case string:
		if a.Value.Kind() == slog.KindString {
			a.Value = slog.StringValue(sanitize.Terminal(sanitize.URLsIn(v)))
		}
	case error:
		a.Value = slog.StringValue(sanitize.Terminal(sanitize.URLsIn(v.Error())))
	}
	return a
}

// findConfig returns the config.yaml of the project containing dir: dir's
// own, else the nearest parent's, as git finds its repository, so that
// commands work from any directory inside a project (benchmarks/x, runs/).
func findConfig(dir string) (string, bool) {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return "", false
	}
	for {
		p := filepath.Join(dir, "config.yaml")
		if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() {
			return p, true
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", false
		}
		dir = parent
	}
}

// configPath is the config file to load: --config as given, else the
// project's config.yaml found from the working directory up.
func (g *globals) configPath() string {
	if g.configSet {
		return g.ConfigPath
	}
	if _, err := os.Stat(g.ConfigPath); err == nil {
		return g.ConfigPath
	}
	if wd, err := os.Getwd(); err == nil {
		if p, ok := findConfig(wd); ok {
			return p
		}
	}
	return g.ConfigPath
}

// turnRE masks turn numbers when grouping failure reasons: a provider that
// is down fails conversations at different turns for one reason.
var turnRE = regexp.MustCompile(`\bturn \d+\b`)

// printFailures lists a phase's failed rows, one line per distinct reason
// with how many rows failed for it: an unreachable provider fails every
// row alike, and one line says so better than one per row.
func printFailures(w io.Writer, fs []summary.RowFailure) {
	type group struct {
		first  summary.RowFailure
		n      int
		reason string
		turns  map[int]bool // the turn each row failed at (its reason's first "turn N")
	}
	var order []*group
	byKey := map[string]*group{}
	for _, f := range fs {
		reason := sanitize.Line(f.Reason)
		key := turnRE.ReplaceAllString(reason, "turn N")
		g := byKey[key]
		if g == nil {
			g = &group{first: f, reason: reason, turns: map[int]bool{}}
			byKey[key] = g
			order = append(order, g)
		}
		if m := turnRE.FindString(reason); m != "" {
			n, _ := strconv.Atoi(strings.TrimPrefix(m, "turn "))
			g.turns[n] = true
		}
		g.n++
	}
	for _, g := range order {
		row := sanitize.Line(g.first.Row)
		if g.n == 1 {
			fmt.Fprintf(w, "  %s: %s\n", row, g.reason)
			continue
		}
		reason := g.reason
		if len(g.turns) > 1 {
			// Rows that failed at different turns: the first row's turn
			// would say they all failed there.
			turns := make([]string, 0, len(g.turns))
			for _, n := range slices.Sorted(maps.Keys(g.turns)) {
				turns = append(turns, strconv.Itoa(n))
			}
			if loc := turnRE.FindStringIndex(reason); loc != nil {
				reason = reason[:loc[0]] + "turns " + strings.Join(turns, ", ") + reason[loc[1]:]
			}
		}
		fmt.Fprintf(w, "  %d rows (%s and %d more): %s\n", g.n, row, g.n-1, strings.TrimSpace(reason))
	}
}
