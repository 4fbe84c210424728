package llm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"slices"
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
	clean, _ := CleanJSON(s)
	return clean
}

// CleanJSON is CleanJSONText that also says what it removed, so a row built
// from the answer can record that it was repaired. Each repair is one of a
// fixed set of phrases (never model text).
func CleanJSON(s string) (clean string, repairs []string) {
	if t := thinkRE.ReplaceAllString(s, ""); t != s {
		s, repairs = t, append(repairs, "removed a <think> block")
	}
	// An unterminated <think> (output cut off mid-thought) leaves nothing usable before it.
	if i := strings.Index(strings.ToLower(s), "</think>"); i >= 0 {
		s, repairs = s[i+len("</think>"):], append(repairs, "removed text before a stray </think>")
	}
	s = strings.TrimSpace(s)
	if m := fenceRE.FindStringSubmatch(s); m != nil {
		s, repairs = strings.TrimSpace(m[1]), append(repairs, "unwrapped a ``` code fence")
	}
	if !strings.HasPrefix(s, "{") {
		if i, j := strings.Index(s, "{"), strings.LastIndex(s, "}"); i >= 0 && j > i {
			s, repairs = s[i:j+1], append(repairs, "removed prose around the JSON object")
		}
	}
	return s, repairs
}

// Attempts bounds the attempts one invocation makes at one answer. Answers
// replayed from the call store (Response.Cached) were paid for by an earlier
// invocation: they count as evidence, not as attempts, so a rerun continues
// the sequence after them with fresh requests instead of replaying the same
// invalid answers for ever, and each invocation pays at most Max fresh ones.
type Attempts struct {
	Max      int
	fresh    int
	replayed int
}

// maxReplayed stops a client that claims every answer is stored (a bug, not
// a store) from looping; real stores hold far fewer attempts per call.
const maxReplayed = 1000

// Another records an invalid answer and reports whether one more attempt may follow.
func (a *Attempts) Another(resp Response) bool {
	if resp.Cached {
		a.replayed++
	} else {
		a.fresh++
	}
	return a.fresh < a.Max && a.replayed < maxReplayed
}

// Fresh and Replayed count the invalid answers seen so far.
func (a *Attempts) Fresh() int    { return a.fresh }
func (a *Attempts) Replayed() int { return a.replayed }

// describe says how many attempts were made, for error messages.
func (a *Attempts) describe() string {
	s := fmt.Sprintf("%d attempt(s)", a.fresh)
	if a.replayed > 0 {
		s += fmt.Sprintf(" in this run, after %d stored from earlier runs", a.replayed)
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
	resp, _, err := CompleteJSONReport(ctx, c, req, out, opts)
	return resp, err
}

// JSONReport says what it took to read a CompleteJSONReport answer, in
// fixed phrases (never model text), so a row built from it can record it.
type JSONReport struct {
	// Repairs are what CleanJSON removed from the accepted answer.
	Repairs []string
	// Unusable says, for each answer rejected before it, why (one of
	// UnusableReason's phrases); each was followed by a fresh request.
	Unusable []string
}

// Recorded lists the report as a row records it: the repairs, then one
// phrase per unusable answer ("asked again: answer 1 was not JSON").
// Nil when the first answer was clean JSON.
func (r JSONReport) Recorded() []string {
	out := slices.Clone(r.Repairs)
	for i, why := range r.Unusable {
		out = append(out, fmt.Sprintf("asked again: answer %d %s", i+1, why))
	}
	return out
}

// UnusableError is a validation error whose Reason is a fixed phrase
// (never model text) saying why an answer was unusable; Err is what the
// model is shown. A JSONOptions.Validate may return one so the report
// names its reason; other validation errors are reported as
// "failed the caller's check".
type UnusableError struct {
	Reason string
	Err    error
}

func (e *UnusableError) Error() string { return e.Err.Error() }
func (e *UnusableError) Unwrap() error { return e.Err }

// UnusableReason is the fixed phrase for a decodeAndValidate error.
func UnusableReason(err error) string {
	if ue, ok := errors.AsType[*UnusableError](err); ok {
		return ue.Reason
	}
	return "failed the caller's check"
}

// CompleteJSONReport is CompleteJSON that also reports what was repaired
// in the accepted answer and why earlier answers were unusable.
func CompleteJSONReport(ctx context.Context, c Client, req Request, out any, opts JSONOptions) (Response, JSONReport, error) {
	var report JSONReport
	attempts := opts.Attempts
	if attempts <= 0 {
		attempts = 3
	}
	schema, resolved, err := SchemaFor(reflect.TypeOf(out))
	if err != nil {
		return Response{}, report, fmt.Errorf("derive schema for %T: %w", out, err)
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
	budget := Attempts{Max: attempts}
	for attempt := 1; ; attempt++ {
		resp, err := c.Complete(ctx, req)
		total = total.Add(resp.Usage)
		if err != nil {
			var le *Error
			if errors.As(err, &le) {
				total = total.Add(le.Usage)
			}
			resp.Usage = total
			return resp, report, err
		}
		last = resp
		problem := decodeAndValidate(resp.Text, resolved, out, opts.Validate)
		if problem == nil {
			resp.Usage = total
			_, report.Repairs = CleanJSON(resp.Text)
			return resp, report, nil
		}
		lastErr = problem
		report.Unusable = append(report.Unusable, UnusableReason(problem))
		if !budget.Another(resp) {
			break
		}
		// Show the model what it wrote and what was wrong; a new Seed keeps
		// the retry from being answered out of the call store.
		req.Messages = append(append([]Message(nil), base...),
			Message{Role: RoleAssistant, Content: resp.Text},
			Message{Role: RoleUser, Content: "That output was not valid: " + problem.Error() +
				"\nReply again with only the corrected JSON object."})
		req.Seed = req.Seed*31 + uint64(attempt)
	}
	last.Usage = total
	return last, report, &Error{
		Kind:    KindInvalidJSON,
		Message: fmt.Sprintf("no valid JSON after %s: %v", budget.describe(), lastErr),
		Raw:     last.Text,
		Usage:   total,
		Err:     lastErr,
	}
}

// SchemaWithout returns a deep copy of schema without the given keywords at
// any depth, for providers whose structured output accepts only a subset of
// JSON Schema (the full schema is still enforced by CompleteJSON).
func SchemaWithout(schema map[string]any, keywords ...string) map[string]any {
	drop := make(map[string]bool, len(keywords))
	for _, k := range keywords {
		drop[k] = true
	}
	// names: v is a "properties" map, whose keys are property names that
	// happen to look like keywords, not keywords.
	var walk func(v any, names bool) any
	walk = func(v any, names bool) any {
		switch x := v.(type) {
		case map[string]any:
			m := make(map[string]any, len(x))
			for k, sub := range x {
				if !names && drop[k] {
					continue
				}
				m[k] = walk(sub, !names && (k == "properties" || k == "$defs" || k == "definitions"))
			}
			return m
		case []any:
			l := make([]any, len(x))
			for i, sub := range x {
				l[i] = walk(sub, false)
			}
			return l
		}
		return v
	}
	if schema == nil {
		return nil
	}
	return walk(schema, false).(map[string]any)
}

func decodeAndValidate(text string, resolved *jsonschema.Resolved, out any, validate func(any) error) error {
	clean := CleanJSONText(text)
	var generic any
	if err := json.Unmarshal([]byte(clean), &generic); err != nil {
		return &UnusableError{"was not JSON", fmt.Errorf("not JSON: %v", err)}
	}
	if _, ok := generic.(map[string]any); !ok {
		return &UnusableError{"was not a JSON object", errors.New("expected a JSON object at the top level")}
	}
	if resolved != nil {
		if err := resolved.Validate(generic); err != nil {
			return &UnusableError{"did not match the schema", fmt.Errorf("schema: %v", err)}
		}
	}
	// Reset out so a previous attempt's fields don't leak into this one.
	rv := reflect.ValueOf(out).Elem()
	rv.Set(reflect.Zero(rv.Type()))
	if err := json.Unmarshal([]byte(clean), out); err != nil {
		return &UnusableError{"did not match the schema", fmt.Errorf("decode: %v", err)}
	}
	if validate != nil {
		if err := validate(out); err != nil {
			return err
		}
	}
	return nil
}
