package fault

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"testing"
)

func TestKindOf(t *testing.T) {
	cause := fs.ErrNotExist
	for _, c := range []struct {
		err  error
		want Kind
	}{
		{nil, Failure},
		{errors.New("x"), Failure},
		{context.Canceled, Interrupted},
		{fmt.Errorf("run: %w", context.Canceled), Interrupted},
		{Inputf("bad %s", "x"), Input},
		{fmt.Errorf("wrapped: %w", Usagef("no")), Usage},
		{errors.Join(errors.New("a"), &Error{Kind: Refused}), Refused},
		{AsInput(cause), Input},
		{AsInput(Configf("c")), Input}, // the wrapper decides
	} {
		if got := KindOf(c.err); got != c.want {
			t.Errorf("KindOf(%v) = %v, want %v", c.err, got, c.want)
		}
	}
}

func TestErrorKeepsItsCause(t *testing.T) {
	err := Inputf("read %s: %w", "f.json", fs.ErrNotExist)
	if !errors.Is(err, fs.ErrNotExist) {
		t.Error("the cause is lost")
	}
	if got := err.Error(); got != "read f.json: file does not exist" {
		t.Errorf("message %q", got)
	}
	if !errors.Is(AsInput(fs.ErrPermission), fs.ErrPermission) {
		t.Error("AsInput lost the cause")
	}
}

func TestErrorFormat(t *testing.T) {
	for _, c := range []struct {
		e    Error
		want string
	}{
		{Error{Msg: "m"}, "m"},
		{Error{File: "s.json", Row: 3, Line: 12, Field: "id", Msg: "bad", Hint: "; fix it"}, `s.json row 3 (line 12): field "id": bad; fix it`},
		{Error{File: "c.yaml", Line: 2, Col: 5, Msg: "x"}, "c.yaml (line 2, column 5): x"},
		{Error{File: "f", Err: errors.New("cause")}, "f: cause"},
	} {
		if got := c.e.Error(); got != c.want {
			t.Errorf("got %q, want %q", got, c.want)
		}
	}
}

// A joined error's kind is the one that asks most of a person: a study
// whose one benchmark had failed rows and another a bad input file exits
// as bad input.
func TestKindOfJoinedErrorsTakesTheStrongest(t *testing.T) {
	partial := &kinded{Partial}
	input := fmt.Errorf("bench b: %w", Inputf("bad file"))
	for _, c := range []struct {
		err  error
		want Kind
	}{
		{errors.Join(partial, input), Input},
		{errors.Join(input, partial), Input},
		{errors.Join(partial, &Error{Kind: Refused}, Usagef("u")), Usage},
		{errors.Join(Inputf("x"), fmt.Errorf("stop: %w", context.Canceled)), Interrupted},
		{errors.Join(partial, errors.New("io")), Partial},
	} {
		if got := KindOf(c.err); got != c.want {
			t.Errorf("KindOf(%v) = %v, want %v", c.err, got, c.want)
		}
	}
}

type kinded struct{ k Kind }

func (e *kinded) Error() string   { return e.k.String() }
func (e *kinded) FaultKind() Kind { return e.k }
