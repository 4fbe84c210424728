package fakebatch

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

func (s *Server) openAIUpload(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseMultipartForm(64 << 20); err != nil {
		s.invalid(w, "POST /v1/files: not a multipart form: %v", err)
		return
	}
	if p := r.FormValue("purpose"); p != "batch" {
		s.invalid(w, "POST /v1/files: purpose is %q, want batch", p)
		return
	}
	fh := r.MultipartForm.File["file"]
	if len(fh) != 1 {
		s.invalid(w, "POST /v1/files: want exactly one file part, got %d", len(fh))
		return
	}
	if !strings.HasSuffix(fh[0].Filename, ".jsonl") {
		s.invalid(w, "POST /v1/files: the Batch API only takes .jsonl files, got %q", fh[0].Filename)
		return
	}
	f, err := fh[0].Open()
	if err != nil {
		s.invalid(w, "POST /v1/files: %v", err)
		return
	}
	data, err := io.ReadAll(f)
	_ = f.Close() // in memory or a temp file the server removes
	if err != nil {
		s.invalid(w, "POST /v1/files: %v", err)
		return
	}
	if int64(len(data)) > s.opts.MaxBytes {
		s.invalid(w, "POST /v1/files: %d bytes, over the %d-byte batch file limit", len(data), s.opts.MaxBytes)
		return
	}
	lines, problem := s.parseInput(data)
	if problem != "" {
		s.invalid(w, "batch input file: %s", problem)
		return
	}
	s.mu.Lock()
	s.nfiles++
	fl := &file{id: fmt.Sprintf("file-in%d", s.nfiles), purpose: "batch", filename: fh[0].Filename, data: data, lines: lines}
	s.files[fl.id] = fl
	s.mu.Unlock()
	s.writeJSON(w, fileObject(fl))
}

// parseInput validates a batch input file.
func (s *Server) parseInput(data []byte) ([]inputLine, string) {
	var out []inputLine
	seen := map[string]bool{}
	model := ""
	for i, raw := range bytes.Split(data, []byte("\n")) {
		if len(bytes.TrimSpace(raw)) == 0 {
			continue
		}
		var l inputLine
		if err := json.Unmarshal(raw, &l); err != nil {
			return nil, fmt.Sprintf("line %d is not a JSON object: %v", i+1, err)
		}
		var body map[string]any
		switch {
		case l.CustomID == "":
			return nil, fmt.Sprintf("line %d: custom_id is missing", i+1)
		case seen[l.CustomID]:
			return nil, fmt.Sprintf("line %d: custom_id %q is not unique in the file", i+1, l.CustomID)
		case l.Method != "POST":
			return nil, fmt.Sprintf("line %d: method is %q, want POST", i+1, l.Method)
		case l.URL != "/v1/chat/completions":
			return nil, fmt.Sprintf("line %d: url is %q, want /v1/chat/completions", i+1, l.URL)
		case json.Unmarshal(l.Body, &body) != nil || body == nil:
			return nil, fmt.Sprintf("line %d: body is not a JSON object", i+1)
		}
		m, _ := body["model"].(string)
		if m == "" {
			return nil, fmt.Sprintf("line %d: body.model is missing", i+1)
		}
		if model != "" && m != model {
			return nil, fmt.Sprintf("line %d: model %q differs from %q (one model per file)", i+1, m, model)
		}
		model = m
		seen[l.CustomID] = true
		out = append(out, l)
	}
	if len(out) == 0 {
		return nil, "the file has no requests"
	}
	if len(out) > s.opts.MaxRequests {
		return nil, fmt.Sprintf("%d requests, over the limit of %d per batch", len(out), s.opts.MaxRequests)
	}
	return out, ""
}

func fileObject(f *file) map[string]any {
	return map[string]any{
		"id": f.id, "object": "file", "bytes": len(f.data), "created_at": time.Now().Unix(),
		"filename": f.filename, "purpose": f.purpose, "status": "processed", "expires_at": time.Now().Add(30 * 24 * time.Hour).Unix(),
	}
}

func (s *Server) openAIDeleteFile(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	s.mu.Lock()
	_, ok := s.files[id]
	delete(s.files, id)
	s.mu.Unlock()
	if !ok {
		s.writeError(w, http.StatusNotFound, "", "No such File object: "+id)
		return
	}
	s.writeJSON(w, map[string]any{"id": id, "object": "file", "deleted": true})
}

func (s *Server) openAIContent(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	s.mu.Lock()
	f, ok := s.files[id]
	s.mu.Unlock()
	if !ok {
		s.writeError(w, http.StatusNotFound, "", "No such File object: "+id)
		return
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	_, _ = w.Write(f.data) // the client may be gone
}

func (s *Server) openAICreate(w http.ResponseWriter, r *http.Request) {
	if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		s.invalid(w, "POST /v1/batches: Content-Type %q, want application/json", ct)
		return
	}
	var req struct {
		InputFileID      string            `json:"input_file_id"`
		Endpoint         string            `json:"endpoint"`
		CompletionWindow string            `json:"completion_window"`
		Metadata         map[string]string `json:"metadata"`
	}
	body, _ := io.ReadAll(r.Body) // already in memory
	if err := json.Unmarshal(body, &req); err != nil {
		s.invalid(w, "POST /v1/batches: body is not JSON: %v", err)
		return
	}
	switch {
	case req.CompletionWindow != "24h":
		s.invalid(w, "completion_window is %q: only 24h is supported", req.CompletionWindow)
		return
	case req.Endpoint != "/v1/chat/completions":
		s.invalid(w, "endpoint is %q, want /v1/chat/completions", req.Endpoint)
		return
	case len(req.Metadata) > 16:
		s.invalid(w, "metadata has %d keys, at most 16 are allowed", len(req.Metadata))
		return
	}
	s.mu.Lock()
	f, ok := s.files[req.InputFileID]
	s.mu.Unlock()
	if !ok {
		s.invalid(w, "input_file_id %q does not exist", req.InputFileID)
		return
	}
	if f.purpose != "batch" {
		s.invalid(w, "input file %s has purpose %q, want batch", f.id, f.purpose)
		return
	}
	if st := s.popCreateStatus(); st != 0 {
		s.createFailure(w, st)
		return
	}

	ids := make([]string, len(f.lines))
	raws := make([]json.RawMessage, len(f.lines))
	for i, l := range f.lines {
		ids[i] = l.CustomID
		raws[i], _ = json.Marshal(l) // re-encoding a decoded line cannot fail
	}
	var model map[string]any
	_ = json.Unmarshal(f.lines[0].Body, &model) // validated at upload
	s.mu.Lock()
	s.nbatches++
	b := &fbatch{id: fmt.Sprintf("batch_%03d", s.nbatches), n: s.nbatches, created: time.Now(), customIDs: ids,
		inputFile: f.id, metadata: req.Metadata}
	b.model, _ = model["model"].(string)
	s.mu.Unlock()
	if s.opts.FailBatch != nil {
		b.failure = s.opts.FailBatch(b.n, ids)
	}
	if len(b.failure) == 0 {
		for _, l := range f.lines {
			b.results = append(b.results, s.execute(l.CustomID, l.Body))
		}
	}
	s.countSubmission(ids, raws)
	s.mu.Lock()
	s.batches[b.id] = b
	obj := s.openAIBatchObject(b)
	s.mu.Unlock()
	s.writeJSON(w, obj)
}

func (s *Server) openAIGet(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	s.mu.Lock()
	b, ok := s.batches[id]
	if !ok {
		s.mu.Unlock()
		s.writeError(w, http.StatusNotFound, "", "No batch found with id '"+id+"'.")
		return
	}
	b.polls++
	if !b.ended && (len(b.failure) > 0 || b.polls > s.opts.PollsBeforeDone) {
		s.endOpenAI(b)
	}
	obj := s.openAIBatchObject(b)
	s.mu.Unlock()
	s.writeJSON(w, obj)
}

// endOpenAI finishes a batch: output file for 2xx answers, error file for
// error answers and requests that did not run. Called with s.mu held.
func (s *Server) endOpenAI(b *fbatch) {
	b.ended, b.endedAt = true, time.Now()
	if len(b.failure) > 0 {
		b.status = "failed"
		return
	}
	b.status = "completed"
	var out, errs [][]byte
	for i, res := range reversed(b.results) {
		line := map[string]any{"id": fmt.Sprintf("batch_req_%s_%d", b.id, i), "custom_id": res.customID}
		switch {
		case res.cancel:
			b.status = "cancelled"
			line["response"] = nil
			line["error"] = map[string]any{"code": "batch_cancelled", "message": "This request was not executed because the batch was cancelled."}
		case res.expire:
			if b.status != "cancelled" {
				b.status = "expired"
			}
			line["response"] = nil
			line["error"] = map[string]any{"code": "batch_expired", "message": "This request could not be executed before the completion window expired."}
		default:
			line["response"] = map[string]any{"status_code": res.status, "request_id": res.reqID, "body": json.RawMessage(res.body)}
			line["error"] = nil
		}
		enc, _ := json.Marshal(line) // plain values and valid raw JSON
		if res.cancel || res.expire || res.status >= 400 {
			errs = append(errs, enc)
		} else {
			out = append(out, enc)
		}
	}
	if s.opts.DuplicateResults && len(out) > 0 {
		out = append(out, out[0])
	}
	if s.opts.UnknownResults {
		enc, _ := json.Marshal(map[string]any{"id": "batch_req_unknown", "custom_id": "never-submitted-" + b.id,
			"response": map[string]any{"status_code": 200, "request_id": "req_x", "body": json.RawMessage(`{"object":"chat.completion","choices":[]}`)}, "error": nil})
		out = append(out, enc)
	}
	if len(out) > 0 {
		b.outFile = s.addOutputFile(b, "output", out)
	}
	if len(errs) > 0 {
		b.errFile = s.addOutputFile(b, "errors", errs)
	}
}

// addOutputFile stores a result file. Called with s.mu held.
func (s *Server) addOutputFile(b *fbatch, kind string, lines [][]byte) string {
	s.nfiles++
	data := append(bytes.Join(lines, []byte("\n")), '\n')
	f := &file{id: fmt.Sprintf("file-%s%d", kind, s.nfiles), purpose: "batch_output", filename: b.id + "_" + kind + ".jsonl", data: data}
	s.files[f.id] = f
	return f.id
}

// openAIBatchObject renders the Batch object. Called with s.mu held.
func (s *Server) openAIBatchObject(b *fbatch) map[string]any {
	nul := func(v string) any {
		if v == "" {
			return nil
		}
		return v
	}
	status := "validating"
	if b.polls > 0 {
		status = "in_progress"
	}
	completed, failed := 0, 0
	var errorsObj any
	if b.ended {
		status = b.status
		for _, r := range b.results {
			if r.cancel || r.expire || r.status >= 400 {
				failed++
			} else {
				completed++
			}
		}
		if len(b.failure) > 0 {
			data := make([]any, len(b.failure))
			for i, e := range b.failure {
				var line any
				if e.Line > 0 {
					line = e.Line
				}
				data[i] = map[string]any{"code": e.Code, "message": e.Message, "param": nil, "line": line}
			}
			errorsObj = map[string]any{"object": "list", "data": data}
		}
	}
	at := func(cond bool) any {
		if cond {
			return b.endedAt.Unix()
		}
		return nil
	}
	return map[string]any{
		"id": b.id, "object": "batch", "endpoint": "/v1/chat/completions", "model": b.model,
		"errors": errorsObj, "input_file_id": b.inputFile, "completion_window": "24h",
		"status": status, "output_file_id": nul(b.outFile), "error_file_id": nul(b.errFile),
		"created_at": b.created.Unix(), "in_progress_at": nil, "expires_at": b.created.Add(24 * time.Hour).Unix(),
		"finalizing_at": at(b.ended && b.status != "failed"), "completed_at": at(b.status == "completed"),
		"failed_at": at(b.status == "failed"), "expired_at": at(b.status == "expired"),
		"cancelling_at": at(b.status == "cancelled"), "cancelled_at": at(b.status == "cancelled"),
		"request_counts": map[string]any{"total": len(b.customIDs), "completed": completed, "failed": failed},
		"metadata":       b.metadata,
	}
}
