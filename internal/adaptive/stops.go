package adaptive

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
)

// StopTable is where replays of a finished study stopped: per replay, how
// many of its metrics stopped at each count of base scenarios. It is the
// dry run's evidence for the expected bill ("if this study decides like
// that one"): the share of the way from Start to Max its metrics went is
// carried over to a study of any size.
type StopTable struct {
	// Name is the study's short name ("July 2026"), Source says which study and how the table was made.
	Name   string `json:"name"`
	Source string `json:"source"`
	// Regenerate is the command that rebuilds the table and compares it.
	Regenerate string  `json:"regenerate"`
	Design     Options `json:"design"`
	Seed       uint64  `json:"seed"`
	Metrics    int     `json:"metrics"`
	// Runs[i][n] is the metrics replay i stopped at n base scenarios
	// (ReplayRun.Bases).
	Runs [][]int `json:"runs"`
}

// julyStops is the table of TestJulyStopTable: 200 replays of the
// published July 2026 study under the default design.
//
//go:embed july2026_stops.json
var julyStops []byte

// JulyStops is the committed table of 200 replays of the published July
// 2026 study (16 models, 360 metrics × 3 base scenarios × 2 ages) under
// the default design (Start 1, Max 3), seed 2026.
func JulyStops() (*StopTable, error) {
	var t StopTable
	if err := json.Unmarshal(julyStops, &t); err != nil {
		return nil, fmt.Errorf("adaptive: the July 2026 stop table: %w", err)
	}
	if err := t.check(); err != nil {
		return nil, err
	}
	return &t, nil
}

// NewStopTable is the table of runs, replays under design o with seed.
func NewStopTable(runs []ReplayRun, o Options, seed uint64, name, source, regenerate string) (StopTable, error) {
	o, err := o.withDefaults()
	if err != nil {
		return StopTable{}, err
	}
	t := StopTable{Name: name, Source: source, Regenerate: regenerate, Design: o, Seed: seed}
	for _, r := range runs {
		t.Runs = append(t.Runs, slices.Clone(r.Bases))
	}
	if len(runs) > 0 {
		for _, n := range runs[0].Bases {
			t.Metrics += n
		}
	}
	return t, t.check()
}

// check refuses a table that cannot be read as one: no replays, a design
// without room to grow, or a replay whose counts do not add up to the
// study's metrics or lie outside Start..Max.
func (t *StopTable) check() error {
	d, err := t.Design.withDefaults()
	if err != nil {
		return err
	}
	if len(t.Runs) == 0 || t.Metrics < 1 {
		return fmt.Errorf("adaptive: stop table %q: no replays", t.Source)
	}
	for i, run := range t.Runs {
		sum := 0
		for n, c := range run {
			if c != 0 && (n < d.Start || n > d.Max) {
				return fmt.Errorf("adaptive: stop table %q: replay %d has %d metric(s) at %d base scenarios, outside %d–%d", t.Source, i, c, n, d.Start, d.Max)
			}
			sum += c
		}
		if sum != t.Metrics {
			return fmt.Errorf("adaptive: stop table %q: replay %d counts %d metrics, want %d", t.Source, i, sum, t.Metrics)
		}
	}
	return nil
}

// growth is, per replay, the share of the way from Start to Max its
// metrics went on average (0: every metric stopped after the first round;
// 1: every metric reached Max). A design without room to grow went all
// of it.
func (t *StopTable) growth() []float64 {
	d, _ := t.Design.withDefaults()
	out := make([]float64, 0, len(t.Runs))
	for _, run := range t.Runs {
		sum := 0
		for n, c := range run {
			sum += n * c
		}
		mean := float64(sum) / float64(t.Metrics)
		g := 1.0
		if d.Max > d.Start {
			g = (mean - float64(d.Start)) / float64(d.Max-d.Start)
		}
		out = append(out, g)
	}
	return out
}

// intList is an indented JSON array of integers.
var intList = regexp.MustCompile(`\[\s+((?:\d+,\s+)*\d+)\s+\]`)

// JSON is the table as committed: indented, one replay a line.
func (t StopTable) JSON() ([]byte, error) {
	b, err := json.MarshalIndent(t, "", " ")
	if err != nil {
		return nil, err
	}
	b = intList.ReplaceAllFunc(b, func(m []byte) []byte {
		f := bytes.Fields(m) // "[", "0,", …, "358", "]"
		return slices.Concat([]byte("["), bytes.Join(f[1:len(f)-1], []byte(" ")), []byte("]"))
	})
	return append(b, '\n'), nil
}
