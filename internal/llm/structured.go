package llm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"strings"
	"sync"

	"github.com/google/jsonschema-go/jsonschema"
)

// JSONOptions tunes CompleteJSON.
type JSONOptions struct {
	// Attempts is the number of model answers to try (default 3). Each retry
	// shows the model its previous output and the validation error.
	Attempts int
	// Validate checks the decoded value beyond the schema (e.g. "type must be
	// positive or negative"); its error message is fed back to the model.
	Validate func(v any) error
}

var (
	thinkRE = regexp.MustCompile(`(?is)<think>.*?</think>\s*`)
	fenceRE = regexp.MustCompile("(?s)^```[a-zA-Z0-9_-]*\\s*\\n?(.*?)\\s*```\\s*$")
)

// CleanJSONText removes reasoning blocks and a surrounding code fence, the
// way upstream does before parsing, and also tolerates prose around a single
// top-level JSON object.
func CleanJSONText(s string) string {
	s = thinkRE.ReplaceAllString(s, "")
	// An unterminated <think> (output cut off mid-thought) leaves nothing usable before it.
	if i := strings.Index(strings.ToLower(s), "</think>"); i >= 0 {
		s = s[i+len("</think>"):]
	}
	s = strings.TrimSpace(s)
	if m := fenceRE.FindStringSubmatch(s); m != nil {
		s = strings.TrimSpace(m[1])
	}
	if !strings.HasPrefix(s, "{") {
		if i, j := strings.Index(s, "{"), strings.LastIndex(s, "}"); i >= 0 && j > i {
			s = s[i : j+1]
		}
	}
	return s
}

var schemaCache sync.Map // reflect.Type → *schemaEntry

type schemaEntry struct {
	schema   map[string]any
	resolved *jsonschema.Resolved
	err      error
}

// SchemaFor derives a JSON Schema (as a plain map, ready to send to a
// provider) and a validator from the Go type of out (a pointer).
func SchemaFor(t reflect.Type) (map[string]any, *jsonschema.Resolved, error) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if e, ok := schemaCache.Load(t); ok {
		se := e.(*schemaEntry)
		return se.schema, se.resolved, se.err
	}
	se := &schemaEntry{}
	s, err := jsonschema.ForType(t, nil)
	if err == nil {
		se.resolved, err = s.Resolve(nil)
	}
	if err == nil {
		var b []byte
		if b, err = json.Marshal(s); err == nil {
			err = json.Unmarshal(b, &se.schema)
		}
	}
	se.err = err
	schemaCache.Store(t, se)
	return se.schema, se.resolved, se.err
}

// CompleteJSON makes a JSON call and decodes the answer into out (a pointer
// to a struct). It asks the provider for schema-constrained output, cleans
// the text, validates it against the schema derived from out's type and
// opts.Validate, and on invalid output retries with the validation error.
// The returned Response's Usage covers every attempt. After the last attempt
// it returns an *Error of KindInvalidJSON whose Raw field keeps the last text.
func CompleteJSON(ctx context.Context, c Client, req Request, out any, opts JSONOptions) (Response, error) {
	attempts := opts.Attempts
	if attempts <= 0 {
		attempts = 3
	}
	schema, resolved, err := SchemaFor(reflect.TypeOf(out))
	if err != nil {
		return Response{}, fmt.Errorf("derive schema for %T: %w", out, err)
	}
	req.JSON = true
	if req.Schema == nil {
		req.Schema = schema
	}
	if req.SchemaName == "" {
		req.SchemaName = string(req.Purpose)
		if req.SchemaName == "" {
			req.SchemaName = "output"
		}
	}
	base := append([]Message(nil), req.Messages...)
	var total Usage
	var last Response
	var lastErr error
	for attempt := 1; attempt <= attempts; attempt++ {
		resp, err := c.Complete(ctx, req)
		total = total.Add(resp.Usage)
		if err != nil {
			var le *Error
			if errors.As(err, &le) {
				total = total.Add(le.Usage)
			}
			resp.Usage = total
			return resp, err
		}
		last = resp
		problem := decodeAndValidate(resp.Text, resolved, out, opts.Validate)
		if problem == nil {
			resp.Usage = total
			return resp, nil
		}
		lastErr = problem
		// Show the model what it wrote and what was wrong; a new Seed keeps
		// the retry from being answered out of the call store.
		req.Messages = append(append([]Message(nil), base...),
			Message{Role: RoleAssistant, Content: resp.Text},
			Message{Role: RoleUser, Content: "That output was not valid: " + problem.Error() +
				"\nReply again with only the corrected JSON object."})
		req.Seed = req.Seed*31 + uint64(attempt)
	}
	last.Usage = total
	return last, &Error{
		Kind:    KindInvalidJSON,
		Message: fmt.Sprintf("no valid JSON after %d attempts: %v", attempts, lastErr),
		Raw:     last.Text,
		Usage:   total,
		Err:     lastErr,
	}
}

func decodeAndValidate(text string, resolved *jsonschema.Resolved, out any, validate func(any) error) error {
	clean := CleanJSONText(text)
	var generic any
	if err := json.Unmarshal([]byte(clean), &generic); err != nil {
		return fmt.Errorf("not JSON: %v", err)
	}
	if _, ok := generic.(map[string]any); !ok {
		return errors.New("expected a JSON object at the top level")
	}
	if resolved != nil {
		if err := resolved.Validate(generic); err != nil {
			return fmt.Errorf("schema: %v", err)
		}
	}
	// Reset out so a previous attempt's fields don't leak into this one.
	rv := reflect.ValueOf(out).Elem()
	rv.Set(reflect.Zero(rv.Type()))
	if err := json.Unmarshal([]byte(clean), out); err != nil {
		return fmt.Errorf("decode: %v", err)
	}
	if validate != nil {
		if err := validate(out); err != nil {
			return err
		}
	}
	return nil
}
