package fakebatch

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strings"
	"time"
)

var anthropicCustomID = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)

func (s *Server) anthropicVersionOK(w http.ResponseWriter, r *http.Request) bool {
	if v := r.Header.Get("Anthropic-Version"); v != "2023-06-01" {
		s.invalid(w, "%s %s: anthropic-version header is %q, want 2023-06-01", r.Method, r.URL.Path, v)
		return false
	}
	return true
}

func (s *Server) anthropicCreate(w http.ResponseWriter, r *http.Request) {
	if !s.anthropicVersionOK(w, r) {
		return
	}
	if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		s.invalid(w, "POST /v1/messages/batches: Content-Type %q, want application/json", ct)
		return
	}
	body, _ := io.ReadAll(r.Body) // already in memory
	if int64(len(body)) > s.opts.MaxBytes {
		s.invalid(w, "POST /v1/messages/batches: %d bytes, over the %d-byte limit", len(body), s.opts.MaxBytes)
		return
	}
	var req struct {
		Requests []json.RawMessage `json:"requests"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		s.invalid(w, "POST /v1/messages/batches: body is not JSON: %v", err)
		return
	}
	if len(req.Requests) == 0 {
		s.invalid(w, "requests is missing or empty")
		return
	}
	if len(req.Requests) > s.opts.MaxRequests {
		s.invalid(w, "%d requests, over the limit of %d per batch", len(req.Requests), s.opts.MaxRequests)
		return
	}
	type one struct {
		CustomID string          `json:"custom_id"`
		Params   json.RawMessage `json:"params"`
	}
	items := make([]one, len(req.Requests))
	seen := map[string]bool{}
	for i, raw := range req.Requests {
		var fields map[string]json.RawMessage
		if err := json.Unmarshal(raw, &fields); err != nil {
			s.invalid(w, "requests[%d] is not an object", i)
			return
		}
		for k := range fields {
			if k != "custom_id" && k != "params" {
				s.invalid(w, "requests[%d]: unknown field %q", i, k)
				return
			}
		}
		_ = json.Unmarshal(raw, &items[i]) // an object, checked above
		var params map[string]any
		switch it := items[i]; {
		case !anthropicCustomID.MatchString(it.CustomID):
			s.invalid(w, "requests[%d].custom_id %q must match ^[a-zA-Z0-9_-]{1,64}$", i, it.CustomID)
			return
		case seen[it.CustomID]:
			s.invalid(w, "requests[%d].custom_id %q is not unique in the batch", i, it.CustomID)
			return
		case json.Unmarshal(it.Params, &params) != nil || params == nil:
			s.invalid(w, "requests[%d].params is not an object", i)
			return
		case params["stream"] == true:
			s.invalid(w, "requests[%d].params.stream: streaming is not supported in batches", i)
			return
		}
		seen[items[i].CustomID] = true
	}
	if st := s.popCreateStatus(); st != 0 {
		s.createFailure(w, st)
		return
	}
	ids := make([]string, len(items))
	for i, it := range items {
		ids[i] = it.CustomID
	}
	s.mu.Lock()
	s.nbatches++
	b := &fbatch{id: fmt.Sprintf("msgbatch_%03d", s.nbatches), n: s.nbatches, created: time.Now(), customIDs: ids}
	s.mu.Unlock()
	for _, it := range items {
		b.results = append(b.results, s.execute(it.CustomID, it.Params))
	}
	s.countSubmission(ids, req.Requests)
	s.mu.Lock()
	s.batches[b.id] = b
	obj := s.anthropicBatchObject(b)
	s.mu.Unlock()
	s.writeJSON(w, obj)
}

func (s *Server) anthropicGet(w http.ResponseWriter, r *http.Request) {
	if !s.anthropicVersionOK(w, r) {
		return
	}
	id := r.PathValue("id")
	s.mu.Lock()
	b, ok := s.batches[id]
	if !ok {
		s.mu.Unlock()
		s.writeError(w, http.StatusNotFound, "not_found_error", "message batch "+id+" not found")
		return
	}
	b.polls++
	if !b.ended && b.polls > s.opts.PollsBeforeDone {
		b.ended, b.endedAt = true, time.Now()
	}
	obj := s.anthropicBatchObject(b)
	s.mu.Unlock()
	s.writeJSON(w, obj)
}

func (s *Server) anthropicResults(w http.ResponseWriter, r *http.Request) {
	if !s.anthropicVersionOK(w, r) {
		return
	}
	id := r.PathValue("id")
	s.mu.Lock()
	b, ok := s.batches[id]
	var lines [][]byte
	if ok && b.ended {
		for _, res := range reversed(b.results) {
			var result map[string]any
			switch {
			case res.cancel:
				result = map[string]any{"type": "canceled"}
			case res.expire:
				result = map[string]any{"type": "expired"}
			case res.status >= 400:
				result = map[string]any{"type": "errored", "error": json.RawMessage(res.body)}
			default:
				result = map[string]any{"type": "succeeded", "message": json.RawMessage(res.body)}
			}
			enc, _ := json.Marshal(map[string]any{"custom_id": res.customID, "result": result}) // valid raw JSON
			lines = append(lines, enc)
		}
		if s.opts.DuplicateResults && len(lines) > 0 {
			lines = append(lines, lines[0])
		}
		if s.opts.UnknownResults {
			lines = append(lines, []byte(`{"custom_id":"never-submitted","result":{"type":"expired"}}`))
		}
	}
	s.mu.Unlock()
	switch {
	case !ok:
		s.writeError(w, http.StatusNotFound, "not_found_error", "message batch "+id+" not found")
	case !b.ended:
		s.writeError(w, http.StatusBadRequest, "invalid_request_error", "message batch "+id+" is still in progress")
	default:
		w.Header().Set("Content-Type", "application/binary")
		_, _ = w.Write(append(bytes.Join(lines, []byte("\n")), '\n')) // the client may be gone
	}
}

// anthropicBatchObject renders the MessageBatch object. Called with s.mu held.
func (s *Server) anthropicBatchObject(b *fbatch) map[string]any {
	counts := map[string]int{"processing": 0, "succeeded": 0, "errored": 0, "canceled": 0, "expired": 0}
	status := "in_progress"
	var endedAt, resultsURL, cancelAt any
	if !b.ended {
		counts["processing"] = len(b.customIDs)
	} else {
		status = "ended"
		endedAt = rfc3339(b.endedAt)
		resultsURL = s.srv.URL + "/v1/messages/batches/" + b.id + "/results"
		for _, r := range b.results {
			switch {
			case r.cancel:
				counts["canceled"]++
				cancelAt = rfc3339(b.endedAt)
			case r.expire:
				counts["expired"]++
			case r.status >= 400:
				counts["errored"]++
			default:
				counts["succeeded"]++
			}
		}
	}
	return map[string]any{
		"id": b.id, "type": "message_batch", "processing_status": status, "request_counts": counts,
		"ended_at": endedAt, "created_at": rfc3339(b.created), "expires_at": rfc3339(b.created.Add(24 * time.Hour)),
		"archived_at": nil, "cancel_initiated_at": cancelAt, "results_url": resultsURL,
	}
}
