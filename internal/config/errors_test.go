package config

import (
	"errors"
	"io/fs"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestSuggest(t *testing.T) {
	known := []string{"id", "model", "source", "apikey", "base_url", "extra_headers", "temperature", "max_tokens"}
	tests := []struct{ in, want string }{
		{"bse_url", "base_url"},
		{"baseURL", "base_url"},  // case and separators ignored
		{"base-url", "base_url"}, // likewise
		{"modle", "model"},       // transposition is one edit
		{"api_key", "apikey"},
		{"temprature", "temperature"},
		{"max_token", "max_tokens"},
		{"ib", "id"},
		{"xy", ""}, // nothing close
		{"colour", ""},
		{"extra_headrs", "extra_headers"},
	}
	for _, tt := range tests {
		if got := suggest(tt.in, known); got != tt.want {
			t.Errorf("suggest(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestEditDistance(t *testing.T) {
	tests := []struct {
		a, b string
		want int
	}{
		{"", "", 0}, {"a", "", 1}, {"", "abc", 3}, {"kitten", "sitting", 3},
		{"ab", "ba", 1}, {"descripton", "description", 1}, {"naïve", "naive", 1},
	}
	for _, tt := range tests {
		if got := editDistance(tt.a, tt.b); got != tt.want {
			t.Errorf("editDistance(%q, %q) = %d, want %d", tt.a, tt.b, got, tt.want)
		}
	}
}

func TestErrorFormatAndOrder(t *testing.T) {
	ps := &problems{file: "config.yaml"}
	ps.add(12, 5, "targets[2].id", "duplicate target id %q (first at line %d)", "gpt-4o", 8)
	ps.add(3, 1, "", "whole-line problem")
	ps.add(0, 0, "name", "required")
	ps.add(3, 0, "x", "no column")
	err := ps.err()
	want := []string{
		"config.yaml: name: required",
		"config.yaml:3: x: no column",
		"config.yaml:3:1: whole-line problem",
		`config.yaml:12:5: targets[2].id: duplicate target id "gpt-4o" (first at line 8)`,
	}
	if diff := cmp.Diff(want, problemLines(t, err)); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if (&problems{}).err() != nil {
		t.Errorf("no problems must be a nil error")
	}

	cause := &Error{File: "c.yaml", Problems: []Problem{{Msg: "missing", Err: fs.ErrNotExist}}}
	if !errors.Is(cause, fs.ErrNotExist) {
		t.Errorf("Problem.Err is not reachable through errors.Is")
	}
	if got := cause.Error(); got != "c.yaml: missing" {
		t.Errorf("Error() = %q", got)
	}
}
