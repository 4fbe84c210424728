//go:build unix

package cli

import (
	"bytes"
	"io"
	"path/filepath"
	"strings"
	"testing"

	"github.com/creack/pty"
)

// status colours its tables on a terminal, and never when NO_COLOR is set
// to a non-empty value (commands.md, no-color.org): `status <bench>` and
// `status all` alike, on a real pseudo-terminal.
func TestStatusHonoursNoColorOnATerminal(t *testing.T) {
	dir := copyProject(t)
	t.Setenv("TERM", "xterm")
	for _, args := range [][]string{{"status", "example"}, {"status", "all"}} {
		for _, noColor := range []string{"", "1"} {
			t.Run(strings.Join(args, " ")+" NO_COLOR="+noColor, func(t *testing.T) {
				t.Setenv("NO_COLOR", noColor)
				out := onTerminal(t, append([]string{"--config", filepath.Join(dir, "config.yaml")}, args...))
				colored := strings.Contains(out, "\x1b[")
				if noColor != "" && colored {
					t.Errorf("%v with NO_COLOR=%s wrote colour codes:\n%q", args, noColor, out)
				}
				if noColor == "" && !colored {
					t.Errorf("%v on a terminal wrote no colour (the test could not see it drop):\n%q", args, out)
				}
			})
		}
	}
}

// onTerminal runs the command with stdout on a pseudo-terminal and returns
// what the terminal showed.
func onTerminal(t *testing.T, args []string) string {
	t.Helper()
	ptmx, tty, err := pty.Open()
	if err != nil {
		t.Skipf("no pseudo-terminal: %v", err)
	}
	defer ptmx.Close()
	var buf bytes.Buffer
	read := make(chan struct{})
	go func() {
		defer close(read)
		_, _ = io.Copy(&buf, ptmx) // ends with EIO once tty is closed
	}()
	var errb bytes.Buffer
	if code := Main(args, strings.NewReader(""), tty, &errb); code != 0 {
		t.Errorf("%v: exit %d: %s", args, code, errb.String())
	}
	tty.Close()
	<-read
	return buf.String()
}
