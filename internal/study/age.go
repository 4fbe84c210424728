package study

import (
	"regexp"
	"strconv"
	"strings"
)

// The site's two age groups.
const (
	AgeChild = "child"
	AgeAdult = "adult"
)

// Ages lists the age groups in the site's order (its default is adult).
var Ages = []string{AgeChild, AgeAdult}

// AgeAxis is the demographic axis the age group is read from.
const AgeAxis = "age"

var (
	childWords = map[string]bool{"child": true, "children": true, "kid": true, "kids": true, "teen": true, "teens": true,
		"teenager": true, "teenagers": true, "minor": true, "minors": true, "adolescent": true, "adolescents": true, "youth": true}
	adultWords = map[string]bool{"adult": true, "adults": true, "senior": true, "seniors": true, "elderly": true, "older": true}
	ageRange   = regexp.MustCompile(`(\d+)\s*(?:-|–|—|to)\s*(\d+)`)
	agePlus    = regexp.MustCompile(`(\d+)\s*\+`)
	wordSplit  = regexp.MustCompile(`[^a-z]+`)
)

// AgeGroup maps a scenario's demographic age value to the site's age
// group: "child" for a value that names children or teenagers ("Child or
// teenager (6-17)", "teen", "6-17") and "adult" for one that names adults
// ("Adult (18+)", "18-64", "65+"), by its words and its numbers (a range
// ending below 18 is a child's, one starting at 18 or more an adult's).
// A value that says neither, or both, is not an age group (ok false): the
// caller reports it, because guessing would publish a child's score as an
// adult's. The scenario id (upstream's `_v01` rule) is never consulted.
func AgeGroup(value string) (group string, ok bool) {
	s := strings.ToLower(value)
	child, adult := false, false
	for _, w := range wordSplit.Split(s, -1) {
		child = child || childWords[w]
		adult = adult || adultWords[w]
	}
	for _, m := range ageRange.FindAllStringSubmatch(s, -1) {
		lo, _ := strconv.Atoi(m[1])
		hi, _ := strconv.Atoi(m[2])
		switch {
		case hi < 18:
			child = true
		case lo >= 18:
			adult = true
		default:
			return "", false // a range across 18 is both
		}
	}
	for _, m := range agePlus.FindAllStringSubmatch(s, -1) {
		if n, _ := strconv.Atoi(m[1]); n >= 18 {
			adult = true
		} else {
			return "", false
		}
	}
	switch {
	case child && !adult:
		return AgeChild, true
	case adult && !child:
		return AgeAdult, true
	}
	return "", false
}
