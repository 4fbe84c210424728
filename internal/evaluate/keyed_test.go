package evaluate

import (
	"encoding/json"
	"errors"
	"path/filepath"
	"testing"

	"github.com/impactbench/impactbench/internal/artifacts"
)

// The judging pass reads the rows the validation pass keyed; a file that
// gained or lost rows in between is refused, never judged under keys made
// from other rows.
func TestEachKeyedRefusesAChangedFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "t1", "conversations.json")
	convs := []artifacts.Conversation{{ID: "s1", MetricID: "m01"}, {ID: "s2", MetricID: "m01"}, {ID: "s3", MetricID: "m02"}}
	if err := artifacts.WriteConversations(path, convs); err != nil {
		t.Fatal(err)
	}
	keyed := func(n int) []evalRow { return make([]evalRow, n) }
	tests := []struct {
		name    string
		rows    []evalRow
		changed bool
	}{
		{"same rows", keyed(3), false},
		{"a row more in the file", keyed(2), true},
		{"a row fewer in the file", keyed(4), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var seen []string
			err := eachKeyed(path, tt.rows, func(i int, raw json.RawMessage) error {
				c, err := artifacts.DecodeConversation(raw)
				seen = append(seen, c.ID)
				return err
			})
			if got := errors.Is(err, errConvChanged); got != tt.changed {
				t.Fatalf("err = %v, want errConvChanged: %v", err, tt.changed)
			}
			if !tt.changed && len(seen) != len(convs) {
				t.Fatalf("read %v, want every row", seen)
			}
		})
	}
}
