package viewer

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/impactbench/impactbench/internal/report"
)

// StartForTest serves a viewer over project on a fresh loopback port and
// returns its base URL.
func StartForTest(t testing.TB, opts Options) (*Server, string) {
	t.Helper()
	s, err := New(opts)
	must(t, err)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	must(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx, ln) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("serve: %v", err)
		}
	})
	return s, "http://" + ln.Addr().String()
}

func miniProject(t *testing.T) (project, bench string) {
	t.Helper()
	project = filepath.Join(t.TempDir(), "project")
	bench, _ = WriteSynth(t, project, SynthSpec{Name: "mini", Metrics: 2, ScensPerMetric: 2, Targets: []string{"alpha", "beta"},
		Samples: 2, Msgs: 4, MsgLen: 80, Judges: 2, XSS: true})
	return project, bench
}

type req struct {
	method, path, body string
	hdr                map[string]string
}

func do(t *testing.T, base string, r req) (int, string) {
	t.Helper()
	hr, err := http.NewRequest(r.method, base+r.path, strings.NewReader(r.body))
	must(t, err)
	for k, v := range r.hdr {
		if k == "Host" {
			hr.Host = v
		} else {
			hr.Header.Set(k, v)
		}
	}
	// Redirects would hide what the server answered to the path as sent.
	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := c.Do(hr)
	must(t, err)
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func lineCount(t *testing.T, path string) int {
	b, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return 0
	}
	must(t, err)
	return bytes.Count(b, []byte("\n"))
}

const goodLabel = `{"conv_id":"m01_s001_v01__alpha__s0","metric_id":"m01","present":true,"labeler":"ana","note":"n"}`

func TestWritesNeedOwnOriginAndToken(t *testing.T) {
	project, bench := miniProject(t)
	s, base := StartForTest(t, Options{ProjectDir: project, Blind: true})
	host := strings.TrimPrefix(base, "http://")
	ok := map[string]string{"Origin": base, "Content-Type": "application/json", "X-IB-Token": s.Token(), "Sec-Fetch-Site": "same-origin"}
	with := func(k, v string) map[string]string {
		h := map[string]string{}
		for a, b := range ok {
			h[a] = b
		}
		if v == "" {
			delete(h, k)
		} else {
			h[k] = v
		}
		return h
	}
	_, port, _ := net.SplitHostPort(host)
	cases := []struct {
		name string
		hdr  map[string]string
		want int
	}{
		{"cross-origin", with("Origin", "http://evil.example"), 403},
		{"no origin", with("Origin", ""), 403},
		{"null origin", with("Origin", "null"), 403},
		{"https origin", with("Origin", "https://"+host), 403},
		{"other loopback name", with("Origin", "http://localhost:"+port), 403},
		{"cross-site fetch", with("Sec-Fetch-Site", "cross-site"), 403},
		{"same-site fetch", with("Sec-Fetch-Site", "same-site"), 403},
		{"no token", with("X-IB-Token", ""), 403},
		{"wrong token", with("X-IB-Token", strings.Repeat("0", 64)), 403},
		{"form post", with("Content-Type", "application/x-www-form-urlencoded"), 403},
		{"text/plain", with("Content-Type", "text/plain"), 403},
		{"rebound host", with("Host", "evil.example:"+port), 403},
		{"own page", ok, 201},
	}
	labels := filepath.Join(bench, "labels.jsonl")
	for _, c := range cases {
		code, body := do(t, base, req{"POST", "/api/b/mini/labels", goodLabel, c.hdr})
		if code != c.want {
			t.Errorf("%s: %d %s, want %d", c.name, code, body, c.want)
		}
	}
	if n := lineCount(t, labels); n != 1 {
		t.Errorf("labels.jsonl has %d lines, want the one accepted write", n)
	}
	// Other methods are refused outright.
	if code, _ := do(t, base, req{"PUT", "/api/b/mini/labels", goodLabel, ok}); code != 405 {
		t.Errorf("PUT: %d", code)
	}
	// Reads are refused under a foreign Host too (DNS rebinding).
	if code, _ := do(t, base, req{"GET", "/api/b/mini/convs", "", map[string]string{"Host": "evil.example:" + port}}); code != 403 {
		t.Errorf("GET with rebound Host: %d", code)
	}
	if code, _ := do(t, base, req{"GET", "/api/b/mini/convs", "", map[string]string{"Host": "localhost:" + port}}); code != 200 {
		t.Errorf("GET with localhost Host: %d", code)
	}
}

func TestBadLabelRequests(t *testing.T) {
	project, bench := miniProject(t)
	s, base := StartForTest(t, Options{ProjectDir: project})
	hdr := map[string]string{"Origin": base, "Content-Type": "application/json", "X-IB-Token": s.Token()}
	for name, body := range map[string]string{
		"unknown conv":  `{"conv_id":"nope","metric_id":"m01","present":true,"labeler":"ana"}`,
		"wrong metric":  `{"conv_id":"m01_s001_v01__alpha__s0","metric_id":"m02","present":true,"labeler":"ana"}`,
		"no present":    `{"conv_id":"m01_s001_v01__alpha__s0","metric_id":"m01","labeler":"ana"}`,
		"string bool":   `{"conv_id":"m01_s001_v01__alpha__s0","metric_id":"m01","present":"yes","labeler":"ana"}`,
		"no labeler":    `{"conv_id":"m01_s001_v01__alpha__s0","metric_id":"m01","present":true,"labeler":" "}`,
		"unknown field": `{"conv_id":"m01_s001_v01__alpha__s0","metric_id":"m01","present":true,"labeler":"ana","at":"x"}`,
		"not json":      `present=yes`,
	} {
		if code, resp := do(t, base, req{"POST", "/api/b/mini/labels", body, hdr}); code != 400 {
			t.Errorf("%s: %d %s", name, code, resp)
		}
	}
	if _, err := os.Stat(filepath.Join(bench, "labels.jsonl")); !os.IsNotExist(err) {
		t.Errorf("bad requests created labels.jsonl: %v", err)
	}
}

func TestNothingServedOutsideTheProject(t *testing.T) {
	root := t.TempDir()
	project := filepath.Join(root, "project")
	WriteSynth(t, project, SynthSpec{Name: "mini", Metrics: 1, ScensPerMetric: 1, Targets: []string{"alpha"}, Samples: 1, Msgs: 2, MsgLen: 20, Judges: 1})
	const secret = "SENTINEL-outside-the-project"
	// Shaped like a call-store unit, so a unit name escaping the store would read it.
	must(t, os.WriteFile(filepath.Join(root, "secret.json"), []byte(`{"version":"ib-callstore-1","calls":[],"result":{"conv_id":"`+secret+`"}}`), 0o644))
	must(t, os.MkdirAll(filepath.Join(root, "outside", "runs", "x"), 0o755))
	must(t, os.WriteFile(filepath.Join(root, "outside", "benchmark.yaml"), []byte("name: "+secret+"\n"), 0o644))
	// A symlinked benchmark pointing out of the project is not listed.
	must(t, os.Symlink(filepath.Join(root, "outside"), filepath.Join(project, "benchmarks", "link")))
	_, base := StartForTest(t, Options{ProjectDir: project})
	paths := []string{
		"/../secret.json", "/..%2fsecret.json", "/%2e%2e/secret.json", "/%2e%2e%2fsecret.json", "/%252e%252e%252fsecret.json",
		"/static/..%2f..%2f..%2fsecret.json", "/static/%2e%2e%2fserver.go", "/static/../../../../etc/passwd", "/static/index.html",
		"/api/b/..%2f..%2foutside/progress", "/api/b/%2e%2e/progress", "/api/b/..%252f..%252foutside/summary",
		"/api/b/link/progress", "/api/b/link/summary", "/report/link", "/report/..%2F..%2Fetc%2Fpasswd", "/report/%2e%2e%2f%2e%2e%2fsecret.json",
		"/api/b/mini/conv?id=../../../secret.json", "/api/b/mini/conv?id=..%2F..%2F..%2Fetc%2Fpasswd",
		"/api/b/mini/scenario?id=../../../../etc/passwd",
		"/api/b/mini/live?target=../../..&unit=secret", "/api/b/mini/live?target=alpha&unit=../../../../../secret",
		"/api/b/mini/live?target=alpha&unit=../../../../../../secret", "/api/b/mini/live?target=alpha&unit=..%2F..%2F..%2F..%2F..%2F..%2Fsecret",
		"/api/b/mini/live?target=alpha&unit=..%2F..%2F..%2F..%2F..%2F..%2Fetc%2Fpasswd",
		"/api/b/mini/live?target=..%2F..%2F..%2F..%2F..%2Fetc&unit=passwd",
	}
	for _, p := range paths {
		code, body := do(t, base, req{"GET", p, "", nil})
		if code == 200 {
			t.Errorf("%s: 200", p)
		}
		if strings.Contains(body, secret) || strings.Contains(body, "root:") || strings.Contains(body, "package viewer") {
			t.Errorf("%s: leaked %.80q", p, body)
		}
	}
	// The listing shows the real benchmark only.
	if code, body := do(t, base, req{"GET", "/api/benches", "", nil}); code != 200 || strings.Contains(body, "link") || !strings.Contains(body, `"mini"`) {
		t.Errorf("benches: %d %s", code, body)
	}
}

func TestSecurityHeaders(t *testing.T) {
	project, _ := miniProject(t)
	_, base := StartForTest(t, Options{ProjectDir: project})
	resp, err := http.Get(base + "/")
	must(t, err)
	resp.Body.Close()
	csp := resp.Header.Get("Content-Security-Policy")
	if !strings.Contains(csp, "script-src 'self';") || strings.Contains(csp, "unsafe") || !strings.Contains(csp, "frame-ancestors 'none'") {
		t.Errorf("CSP %q", csp)
	}
	if resp.Header.Get("X-Content-Type-Options") != "nosniff" || resp.Header.Get("X-Frame-Options") != "DENY" {
		t.Errorf("headers %v", resp.Header)
	}
}

func TestServeRefusesNonLoopback(t *testing.T) {
	for addr, want := range map[string]bool{
		"127.0.0.1:8377": true, "[::1]:80": true, "localhost:1": true, "127.1.2.3:9": true,
		"0.0.0.0:8377": false, ":8377": false, "192.168.1.2:80": false, "example.com:80": false, "127.0.0.1": false,
	} {
		if got := IsLoopback(addr); got != want {
			t.Errorf("IsLoopback(%q) = %v", addr, got)
		}
	}
	s, err := New(Options{ProjectDir: t.TempDir()})
	must(t, err)
	ln, err := net.Listen("tcp", "0.0.0.0:0")
	must(t, err)
	defer ln.Close()
	if err := s.Serve(context.Background(), ln); err == nil {
		t.Error("served on 0.0.0.0")
	}
}

func TestBlindReviewWithholdsVerdicts(t *testing.T) {
	project, _ := miniProject(t)
	const id = "m01_s001_v01__alpha__s0"
	for _, blind := range []bool{true, false} {
		s, base := StartForTest(t, Options{ProjectDir: project, Blind: blind})
		_, review := do(t, base, req{"GET", "/api/b/mini/conv?review=1&id=" + id, "", nil})
		_, plain := do(t, base, req{"GET", "/api/b/mini/conv?id=" + id, "", nil})
		hidden := !strings.Contains(review, `"score"`) && !strings.Contains(review, "judge-a") && strings.Contains(review, `"verdicts_hidden":true`)
		if hidden != blind {
			t.Errorf("blind=%v: review view hides verdicts: %v (%.200s)", blind, hidden, review)
		}
		if !strings.Contains(plain, "judge-a") {
			t.Errorf("blind=%v: conversation view lacks the verdicts", blind)
		}
		// Recording a verdict reveals the judges'.
		hdr := map[string]string{"Origin": base, "Content-Type": "application/json", "X-IB-Token": s.Token()}
		code, resp := do(t, base, req{"POST", "/api/b/mini/labels", goodLabel, hdr})
		if code != 201 || !strings.Contains(resp, "judge-a") || !strings.Contains(resp, `"labeler":"ana"`) {
			t.Errorf("blind=%v: label answer %d %.300s", blind, code, resp)
		}
	}
}

// TestReportServedSandboxed: /report/ always carries a sandbox without
// allow-same-origin or allow-popups, and only this build's script hashes;
// an up-to-date report.html is served from disk only when this build wrote
// it, anything else is replaced by a report built now.
func TestReportServedSandboxed(t *testing.T) {
	project, bench := miniProject(t)
	_, base := StartForTest(t, Options{ProjectDir: project})
	path := filepath.Join(bench, "report.html")
	future := time.Now().Add(time.Hour)
	get := func() (http.Header, string) {
		t.Helper()
		resp, err := http.Get(base + "/report/mini")
		must(t, err)
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != 200 {
			t.Fatalf("status %d: %s", resp.StatusCode, b)
		}
		return resp.Header, string(b)
	}
	var built string
	for i, file := range []string{"", "<html><body>forged</body></html>", "own+forged"} {
		if file == "own+forged" {
			file = strings.Replace(built, "</body>", "<p>forged</p></body>", 1)
		}
		if file != "" {
			must(t, os.WriteFile(path, []byte(file), 0o644))
			must(t, os.Chtimes(path, future, future))
		}
		h, body := get()
		csp := h.Get("Content-Security-Policy")
		if !strings.HasPrefix(csp, "sandbox allow-scripts;") || strings.Contains(csp, "allow-same-origin") ||
			strings.Contains(csp, "allow-popups") || strings.Contains(csp, "script-src 'unsafe-inline'") {
			t.Errorf("case %d: CSP %q", i, csp)
		}
		if !strings.Contains(csp, "script-src 'sha256-") || !strings.Contains(csp, "default-src 'none'") || !strings.Contains(csp, "frame-ancestors 'none'") {
			t.Errorf("case %d: CSP %q", i, csp)
		}
		switch i {
		case 0:
			built = body
			if !report.IsOwn([]byte(body)) {
				t.Fatalf("a report built now is not recognised as this build's: %.300q", body)
			}
		case 1:
			if strings.Contains(body, "forged") {
				t.Error("a report.html this build did not write was served")
			}
		case 2:
			if !strings.Contains(body, "<p>forged</p>") {
				t.Error("an up-to-date report.html this build wrote was not served from disk")
			}
		}
	}
}

// TestServeEndsWithItsConnections: Serve returns once the connections it
// served are closed. Before, it returned as soon as the listener closed,
// while a connection still reading a request stayed open behind it (the
// package's goleak check caught the shutdown still running, now and then).
func TestServeEndsWithItsConnections(t *testing.T) {
	project, _ := miniProject(t)
	s, err := New(Options{ProjectDir: project})
	must(t, err)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	must(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx, ln) }()
	c, err := net.Dial("tcp", ln.Addr().String())
	must(t, err)
	defer c.Close()
	// A request whose headers are still coming: the connection is busy.
	_, err = c.Write([]byte("GET /api/me HTTP/1.1\r\nHost: " + ln.Addr().String() + "\r\n"))
	must(t, err)
	time.Sleep(200 * time.Millisecond)
	cancel()
	must(t, <-done)
	must(t, c.SetReadDeadline(time.Now().Add(500*time.Millisecond)))
	if _, err := c.Read(make([]byte, 1)); err != io.EOF {
		t.Errorf("after Serve returned, a read on its busy connection gave %v, want EOF (closed)", err)
	}
}
