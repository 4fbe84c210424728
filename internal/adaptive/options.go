package adaptive

import (
	"fmt"
	"math"
)

// Options are the design's settings; zero values take the defaults.
type Options struct {
	// Alpha is the error rate spent over every look (default 0.05).
	Alpha float64 `json:"alpha"`
	// Start is the base scenarios every metric gets in the first round
	// (default 1), Max the most any metric gets (default 3, the published
	// study's design): the worst-case bill.
	Start int `json:"start"`
	Max   int `json:"max"`
	// Rho is the spending function's exponent (default 8: nearly all of
	// Alpha for the last look, which every run takes, since a stop takes
	// the remaining looks on the rows it has; the early looks state only
	// what is overwhelming).
	Rho float64 `json:"rho"`
	// Hope scales the projected evidence a conclusion would have at Max
	// before the design gives up on it (default 1: the projection as is;
	// above 1 keeps more conclusions open and spends more).
	Hope float64 `json:"hope"`
	// Budget caps the conversations the design may collect, as a share
	// of the worst case (every metric at Max; a metric's base scenario
	// costs what its first ones did): 0 or 1, no cap. With a cap the
	// cheapest requests are granted first.
	Budget float64 `json:"budget"`
	// Seed orders the metrics a node grows first.
	Seed uint64 `json:"seed"`
}

// Defaults of Options.
const (
	DefaultAlpha = 0.05
	DefaultStart = 1
	DefaultMax   = 3
	DefaultRho   = 8
	DefaultHope  = 1
)

// OptionError is an option out of its range.
type OptionError struct {
	Field string
	Value any
	Want  string
}

func (e *OptionError) Error() string {
	return fmt.Sprintf("adaptive: option %s = %v: want %s", e.Field, e.Value, e.Want)
}

// withDefaults fills the zero fields and checks the others.
func (o Options) withDefaults() (Options, error) {
	if o.Alpha == 0 {
		o.Alpha = DefaultAlpha
	}
	if o.Start == 0 {
		o.Start = DefaultStart
	}
	if o.Max == 0 {
		o.Max = max(DefaultMax, o.Start)
	}
	if o.Rho == 0 {
		o.Rho = DefaultRho
	}
	if o.Hope == 0 {
		o.Hope = DefaultHope
	}
	if o.Budget == 0 {
		o.Budget = 1
	}
	switch {
	case !(o.Alpha > 0 && o.Alpha < 1):
		return o, &OptionError{"Alpha", o.Alpha, "a level in (0, 1)"}
	case o.Start < 1:
		return o, &OptionError{"Start", o.Start, "at least 1 base scenario per metric"}
	case o.Max < o.Start:
		return o, &OptionError{"Max", o.Max, fmt.Sprintf("at least Start (%d)", o.Start)}
	case !(o.Rho > 0) || math.IsInf(o.Rho, 0):
		return o, &OptionError{"Rho", o.Rho, "a positive exponent"}
	case !(o.Hope > 0) || math.IsInf(o.Hope, 0):
		return o, &OptionError{"Hope", o.Hope, "a positive factor"}
	case !(o.Budget > 0 && o.Budget <= 1):
		return o, &OptionError{"Budget", o.Budget, "a share of the worst case in (0, 1]"}
	}
	return o, nil
}

// Validate checks the options (zero fields take the defaults): an
// *OptionError names the first out of its range.
func (o Options) Validate() error {
	_, err := o.withDefaults()
	return err
}

// Looks is the most looks the design takes: one after the first round and
// one after each round that grows a metric by one base scenario.
func (o Options) Looks() int { return o.Max - o.Start + 1 }

// spend is α_k, the error rate look k (1-based) spends: the power spending
// function α·((k/K)^ρ − ((k−1)/K)^ρ), which sums to α over the K looks
// (Kim & DeMets 1987; ρ = 3 is close to O'Brien–Fleming's boundaries, a
// larger ρ keeps more for the last look).
func (o Options) spend(k int) float64 {
	K := float64(o.Looks())
	f := func(k int) float64 { return math.Pow(float64(k)/K, o.Rho) }
	return o.Alpha * (f(k) - f(k-1))
}
