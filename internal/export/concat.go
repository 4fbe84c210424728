package export

import (
	"errors"
	"fmt"
	"slices"
)

// ErrNothingToExport marks a benchmark with no rows for the table yet (not
// evaluated, or not simulated for --messages): `export all` leaves such a
// benchmark out, naming it, rather than failing the study's export.
var ErrNothingToExport = errors.New("nothing to export yet")

// nothingYet is the *InputError of a benchmark with nothing to export: its
// message says what to run, and it is ErrNothingToExport.
func nothingYet(format string, args ...any) error {
	return &InputError{Err: nothing{fmt.Sprintf(format, args...)}}
}

type nothing struct{ msg string }

func (e nothing) Error() string        { return e.msg }
func (e nothing) Is(target error) bool { return target == ErrNothingToExport }

// concat is several benchmarks' tables as one: every row of the first,
// then of the second, and so on, over the union of their columns.
type concat struct {
	parts []Rows
	cols  []Column
	at    [][]int // at[i][j]: the union column of part i's column j
}

// Concat joins tables of the same kind (judged, or messages) of several
// benchmarks into one, for a study's export: the benchmark column tells
// their rows apart. Its columns are the union of theirs, each where it
// first appears after the columns before it (so a benchmark's demographic
// axes sit among the others', between the fixed head and tail); a column
// some table lacks is nullable and null on its rows. Two tables with one
// column name of different kinds are refused.
func Concat(parts ...Rows) (Rows, error) {
	c := &concat{parts: parts, at: make([][]int, len(parts))}
	for _, p := range parts {
		pos := -1
		for _, col := range p.Columns() {
			k := slices.IndexFunc(c.cols, func(u Column) bool { return u.Name == col.Name })
			switch {
			case k < 0:
				pos++
				c.cols = slices.Insert(c.cols, pos, col)
			case c.cols[k].Kind != col.Kind:
				return nil, fmt.Errorf("column %s is %s in one table and %s in another", col.Name, c.cols[k].Kind, col.Kind)
			default:
				pos = k
			}
		}
	}
	index := make(map[string]int, len(c.cols))
	for k, col := range c.cols {
		index[col.Name] = k
	}
	for i, p := range parts {
		seen := make([]bool, len(c.cols))
		for _, col := range p.Columns() {
			k := index[col.Name]
			c.at[i] = append(c.at[i], k)
			seen[k] = true
			c.cols[k].Nullable = c.cols[k].Nullable || col.Nullable
		}
		for k := range c.cols {
			c.cols[k].Nullable = c.cols[k].Nullable || !seen[k] // null on this part's rows
		}
	}
	return c, nil
}

func (c *concat) Columns() []Column { return c.cols }

// Each streams every part's rows in turn, each laid out on the union's
// columns.
func (c *concat) Each(sink Sink) error {
	out := make(Row, len(c.cols))
	for i, p := range c.parts {
		at := c.at[i]
		err := p.Each(func(r Row) error {
			clear(out)
			for j, v := range r {
				out[at[j]] = v
			}
			return sink(out)
		})
		if err != nil {
			return err
		}
	}
	return nil
}
