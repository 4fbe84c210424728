package viewer

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/impactbench/impactbench/internal/artifacts"
	"github.com/impactbench/impactbench/internal/callstore"
	"github.com/impactbench/impactbench/internal/llm"
)

// TestLiveProgressFollowsTheStore: a run appends to its call store's
// segments (no file is created per unit, so no directory's mtime moves);
// the live progress still counts each conversation as it is stored and
// each one in flight, and a finished one opens from the live list.
func TestLiveProgressFollowsTheStore(t *testing.T) {
	project, _ := miniProject(t)
	_, base := StartForTest(t, Options{ProjectDir: project})
	store := callstore.Open(filepath.Join(project, ".cache", "mini", "calls"), false)
	defer store.Close()
	model := llm.ClientFunc(func(_ context.Context, r llm.Request) (llm.Response, error) {
		return llm.Response{Text: "ok", Usage: llm.Usage{Requests: 1}}, nil
	})
	progress := func() targetProgress {
		t.Helper()
		code, body := do(t, base, req{"GET", "/api/b/mini/progress", "", nil})
		var pv progressView
		if code != 200 || json.Unmarshal([]byte(body), &pv) != nil {
			t.Fatalf("progress: %d %s", code, body)
		}
		for _, tp := range pv.Targets {
			if tp.Target == "alpha" {
				return tp
			}
		}
		t.Fatalf("no alpha in %s", body)
		return targetProgress{}
	}
	if p := progress(); p.SimDone != 0 || p.SimRunning != 0 {
		t.Fatalf("before the run: %+v", p)
	}
	for i := range 3 {
		unit := fmt.Sprintf("alpha/sim/m01_s001_v0%d__s0", i+1)
		u, err := store.Unit(unit)
		if err != nil {
			t.Fatal(err)
		}
		u.Client(callstore.Identity{Provider: "p", Model: "m"}, model).Complete(t.Context(),
			llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Content: "hi"}}})
		if p := progress(); p.SimDone != i || p.SimRunning != 1 {
			t.Errorf("conversation %d in flight: done %d, running %d; want %d, 1", i, p.SimDone, p.SimRunning, i)
		}
		conv := artifacts.Conversation{ID: fmt.Sprintf("m01_s001_v0%d", i+1), ConvID: "c", MetricID: "m01", Status: "completed"}
		if i == 2 {
			conv.Transcript = []artifacts.Turn{{Role: "user", Content: "hi"}, {Role: "assistant", Content: ""}}
			conv.Refused = []int{1}
		}
		if err := u.SetResult("k", conv); err != nil {
			t.Fatal(err)
		}
		u.Close()
		p := progress()
		if p.SimDone != i+1 || p.SimRunning != 0 || len(p.Recent) == 0 || p.Recent[0].ConvID != "c" {
			t.Errorf("conversation %d stored: %+v", i, p)
		}
		code, body := do(t, base, req{"GET", "/api/b/mini/live?target=alpha&unit=m01_s001_v0" + fmt.Sprint(i+1) + "__s0", "", nil})
		if code != 200 {
			t.Errorf("live conversation: %d %s", code, body)
		}
		// A refused reply is marked as the stored conversation records it.
		if marked := strings.Contains(body, `"marks":{"refused":[1]}`); marked != (i == 2) {
			t.Errorf("live conversation %d: marked %v: %s", i, marked, body)
		}
	}
}
