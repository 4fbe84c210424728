package cli

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/impactbench/impactbench/internal/fault"
)

// A phase run for several targets reports every target's failure, not only
// the first to arrive, and its kind is the most specific of them.
func TestForTargetsReportsEveryFailure(t *testing.T) {
	tests := []struct {
		name    string
		fail    map[string]error
		want    []string
		wantNil bool
		kind    fault.Kind
	}{
		{name: "none fail", fail: map[string]error{}, wantNil: true},
		{name: "one fails", fail: map[string]error{"b": errors.New("b broke")}, want: []string{"b broke"}, kind: fault.Failure},
		{
			name: "two fail, the config error decides the kind",
			fail: map[string]error{"a": errors.New("a broke"), "c": fault.Configf("c: no model")},
			want: []string{"a broke", "c: no model"}, kind: fault.Config,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := forTargets(context.Background(), []string{"a", "b", "c"}, func(_ context.Context, target string) error {
				return tt.fail[target]
			})
			if tt.wantNil {
				if err != nil {
					t.Fatalf("err = %v, want nil", err)
				}
				return
			}
			if err == nil {
				t.Fatal("err = nil")
			}
			last := -1
			for _, w := range tt.want {
				i := strings.Index(err.Error(), w)
				if i < 0 || i < last {
					t.Errorf("error %q lacks %q or has it out of the targets' order", err, w)
				}
				last = i
			}
			if k := fault.KindOf(err); k != tt.kind {
				t.Errorf("kind = %v, want %v", k, tt.kind)
			}
		})
	}
}

// Targets that fail for the same reason (a scenarios.json every target
// reads) report it once, not once per target.
func TestForTargetsReportsASharedFailureOnce(t *testing.T) {
	shared := fault.Inputf("scenarios.json: row 3 (m01_s002_v02): metric_id \"\"")
	err := forTargets(context.Background(), []string{"a", "b", "c"}, func(_ context.Context, target string) error {
		if target == "b" {
			return errors.New("b broke")
		}
		return shared
	})
	if n := strings.Count(err.Error(), "metric_id"); n != 1 {
		t.Errorf("the shared failure is reported %d times, want once:\n%v", n, err)
	}
	if !strings.Contains(err.Error(), "b broke") {
		t.Errorf("error %q lacks b's own failure", err)
	}
	if k := fault.KindOf(err); k != fault.Input {
		t.Errorf("kind = %v, want %v", k, fault.Input)
	}
}
