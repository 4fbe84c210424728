package progress

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/impactbench/impactbench/internal/llm"
)

func TestLinesModeReportsCountsCostAndFailures(t *testing.T) {
	var buf bytes.Buffer
	tr := New(&buf, Lines, time.Hour)
	b := tr.Start("simulate gpt-4o", 3)
	b.Done(false, false, llm.Usage{Requests: 2, InputTokens: 100, OutputTokens: 20, Cost: 0.5, CostKnown: true}, time.Millisecond)
	b.Done(true, false, llm.Usage{}, time.Millisecond)
	b.Done(false, true, llm.Usage{}, time.Millisecond)
	tr.Close()
	out := buf.String()
	for _, want := range []string{"simulate gpt-4o: 3/3", "1 failed", "120 tok", "$0.5000", "done in"} {
		if !strings.Contains(out, want) {
			t.Errorf("output %q lacks %q", out, want)
		}
	}
	if d, f, r := b.Counts(); d != 3 || f != 1 || r != 1 {
		t.Errorf("counts = %d %d %d", d, f, r)
	}
}

func TestQuietWritesNothing(t *testing.T) {
	var buf bytes.Buffer
	tr := New(&buf, Quiet, 0)
	b := tr.Start("x", 1)
	b.Done(false, false, llm.Usage{}, 0)
	tr.Printf("hello")
	tr.Close()
	if buf.Len() != 0 {
		t.Fatalf("quiet mode wrote %q", buf.String())
	}
}

func TestDollarsUnknownPrice(t *testing.T) {
	if got := Dollars(llm.Usage{Requests: 1, CostKnown: false}); !strings.Contains(got, "unknown") {
		t.Errorf("unknown price shown as %q", got)
	}
	if got := Dollars(llm.Usage{Requests: 1, Cost: 0.25, CostKnown: true}); got != "$0.2500" {
		t.Errorf("got %q", got)
	}
}
