package batch_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/impactbench/impactbench/internal/fsx"
	"github.com/impactbench/impactbench/internal/llm"
	"github.com/impactbench/impactbench/internal/llm/batch"
	"github.com/impactbench/impactbench/internal/llm/batch/fakebatch"
	"github.com/impactbench/impactbench/internal/llm/llmtest"
)

// killAfter cancels the run's context right after the n-th Submit returns,
// like a process killed between two submissions.
type killAfter struct {
	batch.Provider
	n      int
	cancel context.CancelFunc
	calls  int
}

func (k *killAfter) Submit(ctx context.Context, items []batch.Item) (string, error) {
	id, err := k.Provider.Submit(ctx, items)
	k.calls++
	if k.calls == k.n {
		k.cancel()
	}
	return id, err
}

func TestResumeAfterKill(t *testing.T) {
	for _, f := range flavours {
		t.Run(f.name, func(t *testing.T) {
			srv := f.fake(t, fakebatch.Options{PollsBeforeDone: 3})
			items := judgeItems(5)
			state := filepath.Join(t.TempDir(), "judge", "state.json")
			opts := fast
			opts.MaxRequests = 2 // three batches: 2, 2, 1

			ctx, cancel := context.WithCancel(t.Context())
			killed := &killAfter{Provider: f.prov(t, srv), n: 2, cancel: cancel}
			_, err := batch.Run(ctx, killed, state, items, opts)
			if !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), state) {
				t.Fatalf("first run: err = %v, want context.Canceled naming the state file", err)
			}
			if got := len(srv.Batches()); got != 2 {
				t.Fatalf("%d batches created before the kill, want 2", got)
			}

			// A new process: new provider, same state file and items.
			rs, err := batch.Run(t.Context(), f.prov(t, srv), state, items, opts)
			if err != nil {
				t.Fatal(err)
			}
			for i, r := range rs {
				if r.Err != nil || r.Resp.Text != "answer to "+items[i].CustomID {
					t.Errorf("%s: %q %v", r.CustomID, r.Resp.Text, r.Err)
				}
			}
			if re := srv.Resubmitted(); len(re) > 0 || srv.TotalSubmissions() != len(items) {
				t.Errorf("resubmitted %v; %d submissions for %d items", re, srv.TotalSubmissions(), len(items))
			}

			// Everything is recorded now: a third run makes no call at all.
			before := len(srv.Requests())
			var last batch.Progress
			opts.OnProgress = func(p batch.Progress) { last = p }
			rs2, err := batch.Run(t.Context(), f.prov(t, srv), state, items, opts)
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(texts(rs), texts(rs2)); d != "" {
				t.Errorf("third run answers differ:\n%s", d)
			}
			if after := len(srv.Requests()); after != before {
				t.Errorf("third run made %d requests, want 0", after-before)
			}
			if last.Reused != len(items) || last.Submitted != 0 {
				t.Errorf("third run progress %+v", last)
			}

			// Lost result files are downloaded again, never resubmitted.
			if err := os.RemoveAll(batch.ResultsDir(state)); err != nil {
				t.Fatal(err)
			}
			rs3, err := batch.Run(t.Context(), f.prov(t, srv), state, items, opts)
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(texts(rs), texts(rs3)); d != "" || srv.TotalSubmissions() != len(items) {
				t.Errorf("after losing the results: diff %s, %d submissions", d, srv.TotalSubmissions())
			}
		})
	}
}

func texts(rs []batch.Result) []string {
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = r.CustomID + "=" + r.Resp.Text
		if r.Err != nil {
			out[i] += " err " + r.Err.Error()
		}
	}
	return out
}

// TestKillDuringPolling: stopping while batches run and resuming polls them.
func TestKillDuringPolling(t *testing.T) {
	for _, f := range flavours {
		t.Run(f.name, func(t *testing.T) {
			srv := f.fake(t, fakebatch.Options{PollsBeforeDone: 5})
			items := judgeItems(3)
			state := filepath.Join(t.TempDir(), "state.json")
			ctx, cancel := context.WithCancel(t.Context())
			opts := fast
			polls := 0
			opts.OnProgress = func(p batch.Progress) {
				if polls++; polls == 2 {
					cancel()
				}
			}
			if _, err := batch.Run(ctx, f.prov(t, srv), state, items, opts); !errors.Is(err, context.Canceled) {
				t.Fatalf("err = %v", err)
			}
			rs, err := batch.Run(t.Context(), f.prov(t, srv), state, items, fast)
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range rs {
				if r.Err != nil {
					t.Errorf("%s: %v", r.CustomID, r.Err)
				}
			}
			if srv.TotalSubmissions() != 3 || len(srv.Batches()) != 1 {
				t.Errorf("%d submissions in %d batches", srv.TotalSubmissions(), len(srv.Batches()))
			}
		})
	}
}

func TestPartialFailureRetried(t *testing.T) {
	for _, f := range flavours {
		t.Run(f.name, func(t *testing.T) {
			var mu sync.Mutex
			seen := map[string]int{}
			errReply := func(status int) llmtest.Reply {
				if f.name == "openai" {
					typ := "server_error"
					if status == 400 {
						typ = "invalid_request_error"
					}
					return llmtest.OpenAIError(status, typ, "", "scripted")
				}
				typ := "api_error"
				if status == 400 {
					typ = "invalid_request_error"
				}
				return llmtest.AnthropicError(status, typ, "scripted")
			}
			srv := f.fake(t, fakebatch.Options{PollsBeforeDone: 1, Answer: func(id string, _ llmtest.ChatRequest) fakebatch.Outcome {
				mu.Lock()
				seen[id]++
				n := seen[id]
				mu.Unlock()
				switch {
				case id == "item-001" && n == 1:
					return fakebatch.Outcome{Reply: errReply(500)}
				case id == "item-002":
					return fakebatch.Outcome{Reply: errReply(400)}
				case id == "item-003" && n == 1:
					return fakebatch.Outcome{Expire: true}
				case id == "item-004":
					return fakebatch.Outcome{Reply: errReply(500)}
				case id == "item-005" && n == 1:
					return fakebatch.Outcome{Cancel: true}
				}
				return fakebatch.Outcome{Reply: llmtest.Reply{Text: fmt.Sprintf("answer %d to %s", n, id)}}
			}})
			items := judgeItems(7)
			rs, err := batch.Run(t.Context(), f.prov(t, srv), filepath.Join(t.TempDir(), "s.json"), items, fast)
			if err != nil {
				t.Fatal(err)
			}
			got := byID(rs)
			for id, want := range map[string]string{"item-000": "answer 1 to item-000", "item-001": "answer 2 to item-001",
				"item-003": "answer 2 to item-003", "item-005": "answer 2 to item-005", "item-006": "answer 1 to item-006"} {
				if r := got[id]; r.Err != nil || r.Resp.Text != want {
					t.Errorf("%s: %q %v, want %q", id, r.Resp.Text, r.Err, want)
				}
			}
			if k := llm.KindOf(got["item-002"].Err); k != llm.KindBadRequest {
				t.Errorf("item-002 (invalid request): kind %q (%v), want bad_request", k, got["item-002"].Err)
			}
			if k := llm.KindOf(got["item-004"].Err); k != llm.KindServer {
				t.Errorf("item-004 (always 500): kind %q (%v), want server", k, got["item-004"].Err)
			}
			wantSubs := map[string]int{"item-000": 1, "item-001": 2, "item-002": 1, "item-003": 2, "item-004": batch.DefaultMaxRounds, "item-005": 2, "item-006": 1}
			for id, n := range wantSubs {
				if s := srv.Submissions(id); s != n {
					t.Errorf("%s submitted %d times, want %d", id, s, n)
				}
			}
			if n := len(srv.Batches()); n != 3 {
				t.Errorf("%d batches, want 3 (all, the retryable failures, the one still failing)", n)
			}
		})
	}
}

func TestOpenAIFailedBatch(t *testing.T) {
	cases := []struct {
		name     string
		fail     []fakebatch.BatchError
		wantErr  map[string]llm.ErrorKind // final errors by custom_id
		batches  int
		wantSubs int
	}{
		{"line error: the line is final, the rest retried", []fakebatch.BatchError{{Code: "invalid_request", Message: "bad body", Line: 2}},
			map[string]llm.ErrorKind{"item-001": llm.KindBadRequest}, 2, 5},
		{"queue full: everything retried", []fakebatch.BatchError{{Code: "token_limit_exceeded", Message: "Enqueued token limit reached for gpt-4o-mini"}},
			nil, 2, 6},
		{"file rejected: nothing retried", []fakebatch.BatchError{{Code: "invalid_file_format", Message: "bad file"}},
			map[string]llm.ErrorKind{"item-000": llm.KindBadRequest, "item-001": llm.KindBadRequest, "item-002": llm.KindBadRequest}, 1, 3},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv := fakebatch.NewOpenAI(t, fakebatch.Options{FailBatch: func(n int, _ []string) []fakebatch.BatchError {
				if n == 1 {
					return tc.fail
				}
				return nil
			}})
			rs, err := batch.Run(t.Context(), newOpenAI(t, srv, nil), filepath.Join(t.TempDir(), "s.json"), judgeItems(3), fast)
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range rs {
				want, isErr := tc.wantErr[r.CustomID]
				switch {
				case isErr && llm.KindOf(r.Err) != want:
					t.Errorf("%s: %v, want kind %s", r.CustomID, r.Err, want)
				case !isErr && r.Err != nil:
					t.Errorf("%s: %v", r.CustomID, r.Err)
				}
			}
			if len(srv.Batches()) != tc.batches || srv.TotalSubmissions() != tc.wantSubs {
				t.Errorf("batches %v, %d submissions", srv.Batches(), srv.TotalSubmissions())
			}
		})
	}
}

func TestLimitsSplitBatches(t *testing.T) {
	t.Run("requests", func(t *testing.T) {
		for _, f := range flavours {
			t.Run(f.name, func(t *testing.T) {
				srv := f.fake(t, fakebatch.Options{MaxRequests: 3})
				opts := fast
				opts.MaxRequests = 3
				rs, err := batch.Run(t.Context(), f.prov(t, srv), filepath.Join(t.TempDir(), "s.json"), judgeItems(7), opts)
				if err != nil {
					t.Fatal(err)
				}
				var sizes []int
				for _, b := range srv.Batches() {
					sizes = append(sizes, len(b))
				}
				if d := cmp.Diff([]int{3, 3, 1}, sizes); d != "" || len(byID(rs)) != 7 {
					t.Errorf("batch sizes (-want +got):\n%s", d)
				}
			})
		}
	})
	t.Run("provider limit", func(t *testing.T) {
		srv := fakebatch.NewOpenAI(t, fakebatch.Options{MaxRequests: 4})
		p := newOpenAI(t, srv, func(c *batch.OpenAIConfig) { c.Limits = batch.Limits{MaxRequests: 4} })
		if _, err := batch.Run(t.Context(), p, filepath.Join(t.TempDir(), "s.json"), judgeItems(9), fast); err != nil {
			t.Fatal(err)
		}
		if n := len(srv.Batches()); n != 3 {
			t.Errorf("%d batches, want 3 of at most 4", n)
		}
	})
	t.Run("bytes", func(t *testing.T) {
		for _, f := range flavours {
			t.Run(f.name, func(t *testing.T) {
				items := judgeItems(6)
				probe := f.prov(t, f.fake(t, fakebatch.Options{}))
				size, err := probe.(batch.Planner).ItemSize(items[0])
				if err != nil {
					t.Fatal(err)
				}
				maxBytes := size*2 + size/2 // two items per batch
				// The fake enforces the cap on the file / request body.
				srv := f.fake(t, fakebatch.Options{MaxBytes: maxBytes + 64})
				huge := batch.Item{CustomID: "huge", Req: llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Content: strings.Repeat("x", int(maxBytes))}}}}
				opts := fast
				opts.MaxBytes = maxBytes
				rs, err := batch.Run(t.Context(), f.prov(t, srv), filepath.Join(t.TempDir(), "s.json"), append(items, huge), opts)
				if err != nil {
					t.Fatal(err)
				}
				if n := len(srv.Batches()); n != 3 {
					t.Errorf("%d batches, want 3 of two items: %v", n, srv.Batches())
				}
				got := byID(rs)
				if e := got["huge"].Err; llm.KindOf(e) != llm.KindBadRequest || !strings.Contains(e.Error(), "larger than a whole batch") || srv.Submissions("huge") != 0 {
					t.Errorf("huge item: %v, submitted %d times", e, srv.Submissions("huge"))
				}
			})
		}
	})
}

func TestStateFile(t *testing.T) {
	srv := fakebatch.NewOpenAI(t, fakebatch.Options{})
	dir := t.TempDir()
	state := filepath.Join(dir, "state.json")
	opts := fast
	opts.MaxRequests = 2
	items := judgeItems(3)
	if _, err := batch.Run(t.Context(), newOpenAI(t, srv, nil), state, items, opts); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(state)
	if err != nil {
		t.Fatal(err)
	}
	var st struct {
		Version  string `json:"version"`
		Provider string `json:"provider"`
		Batches  []struct {
			ID        string   `json:"id"`
			CustomIDs []string `json:"custom_ids"`
			Hashes    []string `json:"request_hashes"`
			State     string   `json:"state"`
			Raw       string   `json:"provider_status"`
			Saved     bool     `json:"results_saved"`
		} `json:"batches"`
	}
	if err := json.Unmarshal(b, &st); err != nil {
		t.Fatal(err)
	}
	if st.Version != "impactbench-batch-state/1" || st.Provider != "openai "+srv.BaseURL()+" gpt-4o-mini" || len(st.Batches) != 2 {
		t.Fatalf("state = %s", b)
	}
	for i, bt := range st.Batches {
		if bt.ID == "" || len(bt.CustomIDs) != len(bt.Hashes) || bt.State != "done" || bt.Raw != "completed" || !bt.Saved {
			t.Errorf("batch %d = %+v", i, bt)
		}
		if _, err := os.Stat(filepath.Join(batch.ResultsDir(state), bt.ID+".json")); err != nil {
			t.Errorf("results of %s not saved: %v", bt.ID, err)
		}
	}
	if d := cmp.Diff([]string{"item-000", "item-001"}, st.Batches[0].CustomIDs); d != "" {
		t.Errorf("custom_ids:\n%s", d)
	}
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if fsx.IsTemp(e.Name()) {
			t.Errorf("temp file left behind: %s", e.Name())
		}
	}
	if err := batch.Remove(state); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(batch.ResultsDir(state)); !os.IsNotExist(err) {
		t.Errorf("results dir survives Remove: %v", err)
	}
	if err := batch.Remove(state); err != nil {
		t.Errorf("second Remove: %v", err)
	}
}

// TestCorruptStateRefused: an unreadable state file stops Run before any
// provider call, with a message naming the file and what to do.
func TestCorruptStateRefused(t *testing.T) {
	torn, err := os.ReadFile(filepath.Join("testdata", "torn-state.json"))
	if err != nil {
		t.Fatal(err)
	}
	cases := map[string]string{
		"torn write":   string(torn),
		"empty file":   "",
		"old version":  `{"version":"impactbench-batch-state/0","batches":[]}`,
		"inconsistent": `{"version":"impactbench-batch-state/1","batches":[{"id":"b1","custom_ids":["a","b"],"request_hashes":["x"]}]}`,
		"null batch":   `{"version":"impactbench-batch-state/1","batches":[null]}`,
		"other model":  `{"version":"impactbench-batch-state/1","provider":"openai https://api.openai.com/v1 gpt-4o","batches":[]}`,
	}
	for name, content := range cases {
		t.Run(name, func(t *testing.T) {
			srv := fakebatch.NewOpenAI(t, fakebatch.Options{})
			state := filepath.Join(t.TempDir(), "state.json")
			if err := os.WriteFile(state, []byte(content), 0o644); err != nil {
				t.Fatal(err)
			}
			_, err := batch.Run(t.Context(), newOpenAI(t, srv, nil), state, judgeItems(2), fast)
			var se *batch.StateError
			if !errors.As(err, &se) || se.Path != state {
				t.Fatalf("err = %v, want a *StateError for %s", err, state)
			}
			msg := err.Error()
			for _, want := range []string{state, "delete it", batch.ResultsDir(state), "paid for"} {
				if !strings.Contains(msg, want) {
					t.Errorf("message lacks %q: %s", want, msg)
				}
			}
			if n := len(srv.Requests()); n != 0 {
				t.Errorf("%d provider requests made with a corrupt state file", n)
			}
			if b, _ := os.ReadFile(state); string(b) != content {
				t.Errorf("state file was modified")
			}
		})
	}
}

// TestChangedRequestResubmitted: a state file answers a custom_id only for
// the same request; a changed one is submitted again.
func TestChangedRequestResubmitted(t *testing.T) {
	srv := fakebatch.NewAnthropic(t, fakebatch.Options{Answer: func(id string, r llmtest.ChatRequest) fakebatch.Outcome {
		return fakebatch.Outcome{Reply: llmtest.Reply{Text: id + ": " + r.LastUser()}}
	}})
	state := filepath.Join(t.TempDir(), "s.json")
	items := judgeItems(3)
	if _, err := batch.Run(t.Context(), newAnthropic(t, srv, nil), state, items, fast); err != nil {
		t.Fatal(err)
	}
	items[1].Req.Messages[1].Content = "changed prompt"
	opts := fast
	var last batch.Progress
	opts.OnProgress = func(p batch.Progress) { last = p }
	rs, err := batch.Run(t.Context(), newAnthropic(t, srv, nil), state, items, opts)
	if err != nil {
		t.Fatal(err)
	}
	if rs[1].Resp.Text != "item-001: changed prompt" || srv.Submissions("item-001") != 2 || srv.Submissions("item-000") != 1 || last.Reused != 2 {
		t.Errorf("got %q, submissions %d/%d, progress %+v", rs[1].Resp.Text, srv.Submissions("item-000"), srv.Submissions("item-001"), last)
	}
}

// TestErrorsOfEarlierRunsRetried: a new Run submits again what an earlier
// Run left failed (a quota problem may be fixed since), and reuses successes.
func TestErrorsOfEarlierRunsRetried(t *testing.T) {
	fail := true
	srv := fakebatch.NewOpenAI(t, fakebatch.Options{Answer: func(id string, _ llmtest.ChatRequest) fakebatch.Outcome {
		if id == "item-001" && fail {
			return fakebatch.Outcome{Reply: llmtest.OpenAIError(400, "invalid_request_error", "", "not yet")}
		}
		return fakebatch.Outcome{Reply: llmtest.Reply{Text: "ok " + id}}
	}})
	state := filepath.Join(t.TempDir(), "s.json")
	rs, err := batch.Run(t.Context(), newOpenAI(t, srv, nil), state, judgeItems(2), fast)
	if err != nil || llm.KindOf(rs[1].Err) != llm.KindBadRequest {
		t.Fatalf("first run: %v %v", err, rs[1].Err)
	}
	fail = false
	rs, err = batch.Run(t.Context(), newOpenAI(t, srv, nil), state, judgeItems(2), fast)
	if err != nil || rs[1].Err != nil || rs[1].Resp.Text != "ok item-001" {
		t.Fatalf("second run: %v %+v", err, rs[1])
	}
	if srv.Submissions("item-000") != 1 || srv.Submissions("item-001") != 2 {
		t.Errorf("submissions %d/%d", srv.Submissions("item-000"), srv.Submissions("item-001"))
	}
}

func TestSubmitFailures(t *testing.T) {
	t.Run("transient create failures are retried", func(t *testing.T) {
		for _, f := range flavours {
			t.Run(f.name, func(t *testing.T) {
				srv := f.fake(t, fakebatch.Options{CreateStatuses: []int{500, 429}})
				rs, err := batch.Run(t.Context(), f.prov(t, srv), filepath.Join(t.TempDir(), "s.json"), judgeItems(3), fast)
				if err != nil {
					t.Fatal(err)
				}
				for _, r := range rs {
					if r.Err != nil {
						t.Errorf("%s: %v", r.CustomID, r.Err)
					}
				}
				if srv.TotalSubmissions() != 3 {
					t.Errorf("%d submissions", srv.TotalSubmissions())
				}
				if f.name == "openai" {
					deletes := 0
					for _, r := range srv.Requests() {
						if r.Method == "DELETE" {
							deletes++
						}
					}
					if deletes != 2 {
						t.Errorf("%d orphan input files deleted, want 2", deletes)
					}
				}
			})
		}
	})
	t.Run("too many failures in a row stop the run", func(t *testing.T) {
		srv := fakebatch.NewOpenAI(t, fakebatch.Options{CreateStatuses: []int{500, 500, 500}})
		state := filepath.Join(t.TempDir(), "s.json")
		opts := fast
		opts.MaxErrors = 2
		_, err := batch.Run(t.Context(), newOpenAI(t, srv, nil), state, judgeItems(2), opts)
		if err == nil || !strings.Contains(err.Error(), "in a row failed") || llm.KindOf(err) != llm.KindServer {
			t.Fatalf("err = %v", err)
		}
		// The next run goes on (one scripted failure is left).
		if _, err := batch.Run(t.Context(), newOpenAI(t, srv, nil), state, judgeItems(2), fast); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("bad key", func(t *testing.T) {
		for _, f := range flavours {
			t.Run(f.name, func(t *testing.T) {
				srv := f.fake(t, fakebatch.Options{})
				var p batch.Provider
				if f.name == "openai" {
					p = newOpenAI(t, srv, func(c *batch.OpenAIConfig) { c.APIKey = "sk-wrong-key-000"; c.KeyField = "apikey of evaluator_model" })
				} else {
					p = newAnthropic(t, srv, func(c *batch.AnthropicConfig) {
						c.APIKey = "sk-ant-wrong-000"
						c.KeyField = "apikey of evaluator_model"
					})
				}
				state := filepath.Join(t.TempDir(), "s.json")
				_, err := batch.Run(t.Context(), p, state, judgeItems(2), fast)
				var le *llm.Error
				if !errors.As(err, &le) || le.Kind != llm.KindAuth || !strings.Contains(le.Hint, "apikey of evaluator_model") {
					t.Fatalf("err = %v, want an auth error with a hint", err)
				}
				if strings.Contains(err.Error(), "wrong") {
					t.Errorf("the key leaks into the error: %v", err)
				}
				if _, err := os.Stat(state); !os.IsNotExist(err) {
					t.Errorf("state file written although nothing was created: %v", err)
				}
			})
		}
	})
}

// TestUnknownBatch: a state file pointing at a batch the provider does not
// know (another key or project) stops the run with a hint.
func TestUnknownBatch(t *testing.T) {
	srv := fakebatch.NewOpenAI(t, fakebatch.Options{})
	p := newOpenAI(t, srv, nil)
	state := filepath.Join(t.TempDir(), "s.json")
	items := judgeItems(1)
	// Learn the request hash the way a real run records it.
	if _, err := batch.Run(t.Context(), p, state, items, fast); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(state)
	var st map[string]any
	if err := json.Unmarshal(b, &st); err != nil {
		t.Fatal(err)
	}
	bt := st["batches"].([]any)[0].(map[string]any)
	bt["id"], bt["state"], bt["results_saved"] = "batch_999", "running", false
	b, _ = json.Marshal(st)
	if err := os.WriteFile(state, b, 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := batch.Run(t.Context(), p, state, items, fast)
	var le *llm.Error
	if !errors.As(err, &le) || le.StatusCode != 404 || !strings.Contains(le.Hint, "does not know this batch") {
		t.Fatalf("err = %v", err)
	}
}

func TestDuplicateItems(t *testing.T) {
	srv := fakebatch.NewOpenAI(t, fakebatch.Options{})
	items := judgeItems(2)
	items = append(items, items[0])
	rs, err := batch.Run(t.Context(), newOpenAI(t, srv, nil), filepath.Join(t.TempDir(), "s.json"), items, fast)
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) != 3 || rs[2].CustomID != "item-000" || rs[2].Resp.Text != rs[0].Resp.Text || srv.Submissions("item-000") != 1 {
		t.Errorf("results %v, submissions %d", texts(rs), srv.Submissions("item-000"))
	}
	clash := judgeItems(2)
	clash[1].CustomID = clash[0].CustomID
	if _, err := batch.Run(t.Context(), newOpenAI(t, srv, nil), filepath.Join(t.TempDir(), "s.json"), clash, fast); err == nil || !strings.Contains(err.Error(), "two different requests") {
		t.Errorf("clashing custom_ids: err = %v", err)
	}
	if _, err := batch.Run(t.Context(), newOpenAI(t, srv, nil), filepath.Join(t.TempDir(), "s.json"), []batch.Item{{}}, fast); err == nil {
		t.Error("empty custom_id accepted")
	}
	if rs, err := batch.Run(t.Context(), newOpenAI(t, srv, nil), filepath.Join(t.TempDir(), "s.json"), nil, fast); rs != nil || err != nil {
		t.Errorf("no items: %v %v", rs, err)
	}
}

func TestAnthropicInvalidCustomID(t *testing.T) {
	srv := fakebatch.NewAnthropic(t, fakebatch.Options{})
	items := judgeItems(2)
	items[1].CustomID = "judge:gpt/row 1"
	rs, err := batch.Run(t.Context(), newAnthropic(t, srv, nil), filepath.Join(t.TempDir(), "s.json"), items, fast)
	if err != nil {
		t.Fatal(err)
	}
	if rs[0].Err != nil || llm.KindOf(rs[1].Err) != llm.KindBadRequest || !strings.Contains(rs[1].Err.Error(), "not valid for Anthropic") {
		t.Errorf("results %v", texts(rs))
	}
	if srv.TotalSubmissions() != 1 {
		t.Errorf("%d submissions", srv.TotalSubmissions())
	}
}

// goneResults answers Results with a 404 once, like a batch whose output
// file has expired.
type goneResults struct {
	batch.Provider
	gone bool
}

func (g *goneResults) Results(ctx context.Context, id string) ([]batch.Result, error) {
	if !g.gone {
		g.gone = true
		return nil, &llm.Error{Kind: llm.KindBadRequest, StatusCode: 404, Message: "No such File object"}
	}
	return g.Provider.Results(ctx, id)
}

func TestExpiredResultsResubmitted(t *testing.T) {
	srv := fakebatch.NewOpenAI(t, fakebatch.Options{})
	rs, err := batch.Run(t.Context(), &goneResults{Provider: newOpenAI(t, srv, nil)}, filepath.Join(t.TempDir(), "s.json"), judgeItems(2), fast)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rs {
		if r.Err != nil || srv.Submissions(r.CustomID) != 2 {
			t.Errorf("%s: %v, %d submissions", r.CustomID, r.Err, srv.Submissions(r.CustomID))
		}
	}
}

// memProvider is a minimal Provider (not a Planner): everything ends at the
// first poll, results come back reversed.
type memProvider struct {
	batches map[string][]batch.Item
}

func (m *memProvider) Submit(_ context.Context, items []batch.Item) (string, error) {
	id := fmt.Sprintf("mem-%d", len(m.batches)+1)
	m.batches[id] = items
	return id, nil
}

func (m *memProvider) Poll(context.Context, string) (batch.Status, error) {
	return batch.Status{State: batch.StateDone}, nil
}

func (m *memProvider) Results(_ context.Context, id string) ([]batch.Result, error) {
	var out []batch.Result
	items := m.batches[id]
	for i := len(items) - 1; i >= 0; i-- {
		out = append(out, batch.Result{CustomID: items[i].CustomID, Resp: llm.Response{Text: items[i].Req.Messages[1].Content}})
	}
	return out, nil
}

func TestPlainProvider(t *testing.T) {
	p := &memProvider{batches: map[string][]batch.Item{}}
	items := judgeItems(5)
	opts := fast
	opts.MaxRequests = 2
	rs, err := batch.Run(t.Context(), p, filepath.Join(t.TempDir(), "s.json"), items, opts)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range rs {
		if r.Err != nil || r.Resp.Text != items[i].Req.Messages[1].Content {
			t.Errorf("%d: %+v", i, r)
		}
	}
	if len(p.batches) != 3 {
		t.Errorf("%d batches", len(p.batches))
	}
}

// eventLog records the provider calls of a Run.
type eventLog struct {
	batch.Provider
	mu     sync.Mutex
	events []string
}

func (l *eventLog) add(e string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.events = append(l.events, e)
}

func (l *eventLog) Submit(ctx context.Context, items []batch.Item) (string, error) {
	id, err := l.Provider.Submit(ctx, items)
	l.add("submit " + items[0].CustomID)
	return id, err
}

func (l *eventLog) Results(ctx context.Context, id string) ([]batch.Result, error) {
	l.add("results " + id)
	return l.Provider.Results(ctx, id)
}

// TestQueueFullWaits: requests of a batch refused because the batch queue
// is full are resubmitted only once the running batches have finished.
func TestQueueFullWaits(t *testing.T) {
	srv := fakebatch.NewOpenAI(t, fakebatch.Options{PollsBeforeDone: 3, FailBatch: func(n int, _ []string) []fakebatch.BatchError {
		if n == 2 {
			return []fakebatch.BatchError{{Code: "token_limit_exceeded", Message: "Enqueued token limit reached"}}
		}
		return nil
	}})
	log := &eventLog{Provider: newOpenAI(t, srv, nil)}
	opts := fast
	opts.MaxRequests = 2
	rs, err := batch.Run(t.Context(), log, filepath.Join(t.TempDir(), "s.json"), judgeItems(4), opts)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rs {
		if r.Err != nil {
			t.Errorf("%s: %v", r.CustomID, r.Err)
		}
	}
	want := []string{"submit item-000", "submit item-002", "results batch_001", "submit item-002", "results batch_003"}
	if d := cmp.Diff(want, log.events); d != "" {
		t.Errorf("events (-want +got):\n%s", d)
	}
}

// TestResumeWithSomeItemsDoneElsewhere: the caller stored some answers of a
// batch before it was killed, so the next Run gets only the others, plus
// new requests. The batches already created answer the remaining items
// (polled while running, or read from the saved results once finished);
// only the new requests go into a new batch, and nothing is paid twice.
func TestResumeWithSomeItemsDoneElsewhere(t *testing.T) {
	for _, f := range flavours {
		for _, finished := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/finished=%v", f.name, finished), func(t *testing.T) {
				srv := f.fake(t, fakebatch.Options{PollsBeforeDone: 3})
				items := judgeItems(6)
				state := filepath.Join(t.TempDir(), "state.json")
				ctx, cancel := context.WithCancel(t.Context())
				opts := fast
				opts.OnProgress = func(p batch.Progress) {
					if p.Submitted == 1 && (!finished || p.Succeeded == len(items[:4])) {
						cancel()
					}
				}
				if _, err := batch.Run(ctx, f.prov(t, srv), state, items[:4], opts); !errors.Is(err, context.Canceled) && !finished {
					t.Fatalf("first run: %v", err)
				}
				// Items 0 and 1 were stored by the caller; 4 and 5 are new.
				rest := items[2:]
				rs, err := batch.Run(t.Context(), f.prov(t, srv), state, rest, fast)
				if err != nil {
					t.Fatal(err)
				}
				for i, r := range rs {
					if r.Err != nil || r.Resp.Text != "answer to "+rest[i].CustomID {
						t.Errorf("%s: %q %v", r.CustomID, r.Resp.Text, r.Err)
					}
				}
				if re := srv.Resubmitted(); len(re) > 0 || len(srv.Batches()) != 2 || srv.TotalSubmissions() != len(items) {
					t.Errorf("resubmitted %v; %d batches, %d submissions for %d items", re, len(srv.Batches()), srv.TotalSubmissions(), len(items))
				}
			})
		}
	}
}
