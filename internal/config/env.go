package config

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"regexp"
	"strings"
)

// Position is a place in a file; String gives "file:line:col".
type Position struct {
	File      string
	Line, Col int
}

func (p Position) String() string {
	return Problem{Line: p.Line, Col: p.Col}.location(p.File)
}

// MissingVar is a ${VAR} reference whose variable was unset or empty when
// the config was loaded with LoadOptions.AllowMissingEnv. The field expanded
// it to "".
type MissingVar struct {
	Var   string   // e.g. ANTHROPIC_API_KEY
	Field string   // key path, e.g. "targets[3].apikey"
	Pos   Position // of the value that references it
}

// envRef is upstream's pattern: ${NAME}, NAME = word characters. $NAME
// without braces stays literal. Compiled once; regexps are safe to share.
var envRef = regexp.MustCompile(`\$\{(\w+)\}`)

// CheckEnv fails when a field the caller is about to use referenced a missing
// variable (only possible after LoadWithOptions with AllowMissingEnv).
//
// Each argument is a key-path prefix matched on path boundaries:
// "user_model" covers "user_model.apikey", "evaluator_model" covers
// "evaluator_model[1].base_url", "targets[2]" covers that target (see
// TargetField). With no arguments every missing variable is reported. The
// error is an *Error with one problem per reference.
func (c *Config) CheckEnv(fields ...string) error {
	var ps *problems
	for _, mv := range c.MissingEnv {
		if len(fields) > 0 && !matchesAnyPrefix(mv.Field, fields) {
			continue
		}
		if ps == nil {
			ps = &problems{file: mv.Pos.File}
		}
		ps.add(mv.Pos.Line, mv.Pos.Col, mv.Field, "%s", missingVarMsg(mv.Var))
	}
	if ps == nil {
		return nil
	}
	return ps.err()
}

// TargetField returns the key path of the target with that id ("targets[3]"),
// for CheckEnv.
func (c *Config) TargetField(id string) (string, bool) {
	for i, t := range c.Targets {
		if t.ID == id {
			return indexField("targets", i), true
		}
	}
	return "", false
}

func matchesAnyPrefix(field string, prefixes []string) bool {
	for _, p := range prefixes {
		if field == p || strings.HasPrefix(field, p+".") || strings.HasPrefix(field, p+"[") {
			return true
		}
	}
	return false
}

func missingVarMsg(name string) string {
	return fmt.Sprintf("environment variable %s is not set (set it in your shell or in .env)", name)
}

// readDotEnv reads KEY=value pairs from path. A missing file is not an
// error. Errors give the line and at most the variable's name, never
// content: the file holds keys.
func readDotEnv(path string) (map[string]string, error) {
	src, err := readDotEnvFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	m, err := parseDotEnv(src)
	var de *dotEnvError
	if errors.As(err, &de) {
		ps := &problems{file: path}
		ps.add(de.line, 0, de.key, "%s", de.msg)
		return nil, ps.err()
	}
	return m, err
}

// readDotEnvFile reads .env, refusing a file that is not a regular one (a
// named pipe would block) or is over MaxConfigBytes. Nothing of its
// content is quoted in the refusal: it holds the keys.
func readDotEnvFile(path string) ([]byte, error) {
	f, err := openRegular(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	src, err := io.ReadAll(io.LimitReader(f, MaxConfigBytes+1))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	if len(src) > MaxConfigBytes {
		ps := &problems{file: path}
		ps.add(0, 0, "", "file is larger than the %s limit", mib(MaxConfigBytes))
		return nil, ps.err()
	}
	return src, nil
}
