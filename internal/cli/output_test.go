package cli

import (
	"bytes"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/impactbench/impactbench/internal/summary"
)

// TestDevNullIsNoTerminal: /dev/null is a character device, but no terminal
// draws progress bars on it.
func TestDevNullIsNoTerminal(t *testing.T) {
	f, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		t.Skip(err)
	}
	defer f.Close()
	if isTerminal(f) || useColor(f) {
		t.Error("isTerminal(/dev/null) = true")
	}
	if isTerminal(&bytes.Buffer{}) {
		t.Error("a buffer is a terminal")
	}
}

// TestFailuresSaidOncePerReason: an unreachable provider fails every row
// alike; the summary says so in one line with the count, whatever turn
// each row reached, and names the turns they failed at.
func TestFailuresSaidOncePerReason(t *testing.T) {
	var fs []summary.RowFailure
	for i := range 72 {
		turn := "1"
		if i%3 == 0 {
			turn = "2"
		}
		fs = append(fs, summary.RowFailure{Row: "m01_s001_v01__t__s" + strconv.Itoa(i),
			Reason: "target model, turn " + turn + `: openai gpt: connection: Post "http://h/v1/chat/completions": dial tcp: connect: connection refused (gave up after 5 attempts)`})
	}
	fs = append(fs, summary.RowFailure{Row: "m02_s001_v01__t__s0", Reason: "user model, turn 1: openai gpt: bad_request: \x1b]0;pwned\x07 no"})
	for i := range 3 {
		fs = append(fs, summary.RowFailure{Row: "m02_s002_v01__t__s" + strconv.Itoa(i), Reason: "target model, turn 3: openai gpt: HTTP 500: server: boom"})
	}
	var buf bytes.Buffer
	printFailures(&buf, fs)
	out := buf.String()
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	if len(lines) != 3 {
		t.Fatalf("%d lines, want 3 (one per reason):\n%s", len(lines), out)
	}
	// Rows that failed at different turns are not all said to have failed
	// at the first row's.
	if !strings.HasPrefix(lines[0], "  72 rows (m01_s001_v01__t__s0 and 71 more): target model, turns 1, 2: openai gpt: ") || !strings.Contains(lines[0], "connection refused") {
		t.Errorf("grouped line: %q", lines[0])
	}
	if lines[1] != "  m02_s001_v01__t__s0: user model, turn 1: openai gpt: bad_request: ]0;pwned no" {
		t.Errorf("single line: %q", lines[1])
	}
	if lines[2] != "  3 rows (m02_s002_v01__t__s0 and 2 more): target model, turn 3: openai gpt: HTTP 500: server: boom" {
		t.Errorf("grouped line, one turn: %q", lines[2])
	}
}

// TestLogValuesAreSafe: log attributes and messages lose URL credentials
// and control characters.
func TestLogValuesAreSafe(t *testing.T) {
	var buf bytes.Buffer
	l := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{ReplaceAttr: safeAttr}))
	l.Warn("provider said \x1b[2J", "pool", "openai|https://u:hunter2@h/v1?key=QSECRET|m",
		"err", errors.New("Post \"https://u:hunter2@h/v1\": \x1b]0;title\x07 refused"))
	out := buf.String()
	for _, bad := range []string{"hunter2", "QSECRET", "\x1b", "\x07", `\x1b`, `\u001b`} {
		if strings.Contains(out, bad) {
			t.Errorf("log shows %q: %s", bad, out)
		}
	}
	if !strings.Contains(out, "refused") || !strings.Contains(out, "h/v1") {
		t.Errorf("log lost the message: %s", out)
	}
}

// TestConfigFoundInParents: from a project's subdirectory the project's
// config.yaml is found, as git finds its repository.
func TestConfigFoundInParents(t *testing.T) {
	root := t.TempDir()
	sub := filepath.Join(root, "benchmarks", "x", "runs")
	if err := os.MkdirAll(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	if _, ok := findConfig(sub); ok {
		t.Fatal("found a config where there is none")
	}
	if err := os.WriteFile(filepath.Join(root, "config.yaml"), []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	got, ok := findConfig(sub)
	if want := filepath.Join(root, "config.yaml"); !ok || got != want {
		t.Errorf("findConfig = %q, %v; want %q", got, ok, want)
	}
}

// TestErrorsPrintedAsText: an error carrying a provider's escape sequences
// is printed with them removed.
func TestErrorsPrintedAsText(t *testing.T) {
	var buf bytes.Buffer
	g := &globals{stderr: &buf}
	g.printError(errors.New("openai gpt: auth: \x1b]52;c;cm0gLXJmIH4=\x07 bad key \x1b[2J"))
	if out := buf.String(); strings.ContainsAny(out, "\x1b\x07") || !strings.Contains(out, "bad key") {
		t.Errorf("printed %q", out)
	}
}

// TestWroteNotesGoToStderr: that a command wrote a file is a note, on
// stderr like every message, and -q silences it; stdout keeps only the
// results (init's next steps, compare's table, a dry run's list) and
// never says "wrote".
func TestWroteNotesGoToStderr(t *testing.T) {
	dir := studyProject(t)
	bench := filepath.Join(dir, "benchmarks", "example")
	site := filepath.Join(dir, "site")
	fresh := filepath.Join(dir, "fresh")
	cmpOut := filepath.Join(dir, "cmp.json")
	studyOut := filepath.Join(dir, "cmp-study.json")
	csv := filepath.Join(dir, "x.csv")
	cases := []struct {
		args   []string
		note   string // on stderr, not with -q
		stdout string // the result, with or without -q ("": none)
	}{
		{[]string{"init", fresh}, "wrote " + filepath.Join(fresh, "config.yaml"), "Next:\n"},
		{[]string{"publish", "--output", site, "--site"}, "site: open " + filepath.Join(site, "index.html"), ""},
		{[]string{"publish", "--output", site}, site + ": ", ""},
		{[]string{"compare", bench, bench, "-o", cmpOut}, "wrote " + cmpOut, "offline-careful"},
		{[]string{"compare", "--study", dir, dir, "-o", studyOut}, "wrote " + studyOut, "offline-careful"},
		{[]string{"export", "example", "-o", csv}, "wrote 32 judged rows to " + csv, ""},
	}
	for _, c := range cases {
		for _, quiet := range []bool{false, true} {
			args := c.args
			if quiet {
				args = append([]string{"-q"}, args...)
			}
			t.Run(strings.Join(args, " "), func(t *testing.T) {
				os.RemoveAll(fresh)
				code, out, errs := run(t, dir, args...)
				if code != 0 {
					t.Fatalf("exit %d\n%s", code, errs)
				}
				if strings.Contains(errs, c.note) == quiet {
					t.Errorf("stderr has %q: %v, want %v:\n%s", c.note, !quiet, !quiet, errs)
				}
				if strings.Contains(out, "wrote") || strings.Contains(out, c.note) {
					t.Errorf("stdout carries the note:\n%s", out)
				}
				if (c.stdout == "") != (out == "") || !strings.Contains(out, c.stdout) {
					t.Errorf("stdout %q, want the result (%q)", out, c.stdout)
				}
			})
		}
	}
	// A dry run's list of what publish would write is its result.
	code, out, errs := run(t, dir, "-q", "publish", "--output", site, "--dry-run")
	if code != 0 || !strings.HasPrefix(out, site+": ") || !strings.Contains(out, "would write") || errs != "" {
		t.Errorf("publish --dry-run -q: exit %d, stdout %q, stderr %q", code, out, errs)
	}
}
