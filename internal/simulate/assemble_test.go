package simulate

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/impactbench/impactbench/internal/artifacts"
)

func TestConvAssemblerWritesRowOrderWhateverTheFinishOrder(t *testing.T) {
	const n = 50
	conv := func(i int) artifacts.Conversation {
		return artifacts.Conversation{ID: fmt.Sprintf("m01_s%03d", i), MetricID: "m01", Transcript: []artifacts.Turn{{Role: "user", Content: "hi"}},
			Usage: artifacts.UsageRecord{InputTokens: i, Requests: 1}}
	}
	want := make([]artifacts.Conversation, n)
	for i := range want {
		want[i] = conv(i)
	}
	reversed := func() []int {
		o := make([]int, n)
		for i := range o {
			o[i] = n - 1 - i
		}
		return o
	}
	interleaved := func() []int {
		var o []int
		for i := 1; i < n; i += 2 {
			o = append(o, i)
		}
		for i := 0; i < n; i += 2 {
			o = append(o, i)
		}
		return o
	}
	for _, tc := range []struct {
		name      string
		order     []int
		keep      int
		inMemory  bool
		wantReads int // rows read back from the store
	}{
		{"in order, from memory", nil, 4, true, 0},
		{"reversed, one kept", reversed(), 1, true, n - 2},
		{"reversed, all kept", reversed(), n, true, 0},
		{"interleaved, none handed in", interleaved(), 8, false, n},
	} {
		t.Run(tc.name, func(t *testing.T) {
			order := tc.order
			if order == nil {
				for i := range n {
					order = append(order, i)
				}
			}
			path := filepath.Join(t.TempDir(), "conversations.json")
			w, err := artifacts.NewArrayWriter(path)
			if err != nil {
				t.Fatal(err)
			}
			var mu sync.Mutex
			reads := 0
			a := startConvFile(w, n, tc.keep, func(i int) (artifacts.Conversation, error) {
				mu.Lock()
				reads++
				mu.Unlock()
				return conv(i), nil
			})
			for _, i := range order {
				var c *artifacts.Conversation
				if tc.inMemory {
					c = &want[i]
				}
				a.add(i, c)
			}
			total, complete, err := a.close()
			if err != nil || !complete {
				t.Fatalf("close = %v, complete %v", err, complete)
			}
			if total.InputTokens != n*(n-1)/2 || total.Requests != n {
				t.Errorf("total usage %+v", total)
			}
			if reads != tc.wantReads {
				t.Errorf("%d rows read back from the store, want %d", reads, tc.wantReads)
			}
			got, err := artifacts.ReadConversations(path)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != n {
				t.Fatalf("%d rows written, want %d", len(got), n)
			}
			for i := range got {
				if got[i].ID != want[i].ID {
					t.Fatalf("row %d is %s, want %s", i, got[i].ID, want[i].ID)
				}
			}
		})
	}
}

func TestConvAssemblerLeavesTheOldFileWhenRowsAreMissingOrUnreadable(t *testing.T) {
	for _, tc := range []struct {
		name    string
		added   []int
		readErr error
	}{
		{"a row never finished", []int{0, 2}, nil},
		{"a stored row cannot be read", []int{1, 0, 2}, errors.New("result missing")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "conversations.json")
			if err := os.WriteFile(path, []byte("[]"), 0o644); err != nil {
				t.Fatal(err)
			}
			w, err := artifacts.NewArrayWriter(path)
			if err != nil {
				t.Fatal(err)
			}
			a := startConvFile(w, 3, 0, func(i int) (artifacts.Conversation, error) {
				if tc.readErr != nil {
					return artifacts.Conversation{}, tc.readErr
				}
				return artifacts.Conversation{ID: "x"}, nil
			})
			for _, i := range tc.added {
				a.add(i, nil)
			}
			_, complete, err := a.close()
			if complete {
				t.Fatal("close reported a complete file")
			}
			if !errors.Is(err, tc.readErr) {
				t.Errorf("close error %v, want %v", err, tc.readErr)
			}
			a.abort() // after close: a no-op
			if b, _ := os.ReadFile(path); string(b) != "[]" {
				t.Errorf("the previous file was replaced: %q", b)
			}
			if entries, _ := os.ReadDir(filepath.Dir(path)); len(entries) != 1 {
				t.Errorf("temp files left behind: %v", entries)
			}
		})
	}
}
