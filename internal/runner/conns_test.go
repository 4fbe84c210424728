package runner

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/impactbench/impactbench/internal/clientset"
	"github.com/impactbench/impactbench/internal/config"
	"github.com/impactbench/impactbench/internal/llm"
)

// TestModelsOnOneHostKeepTheirConnections: a study's user, four targets
// and a judge on one host, each 64 calls in flight, must reuse their
// connections round after round instead of closing what does not fit an
// idle pool sized for one model and dialling again.
func TestModelsOnOneHostKeepTheirConnections(t *testing.T) {
	m := func(name string) config.ModelConfig { return config.ModelConfig{Model: name, MaxConcurrency: 64} }
	cfg := &config.Config{
		UserModel:       m("user"),
		Targets:         []config.ModelConfig{m("t1"), m("t2"), m("t3"), m("t4")},
		EvaluatorModels: []config.ModelConfig{m("judge")},
	}
	const inFlight = 6 * 64
	if got := clientset.IdleConnsPerHost(cfg); got < inFlight {
		t.Fatalf("idle pool %d < %d calls the pools may have in flight", got, inFlight)
	}

	var dials atomic.Int64
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(20 * time.Millisecond)
		io.WriteString(w, `{}`)
	}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			dials.Add(1)
		}
	}
	srv.Start()
	defer srv.Close()

	client := llm.NewHTTPClient(clientset.IdleConnsPerHost(cfg))
	const rounds = 4
	for range rounds {
		var wg sync.WaitGroup
		for range inFlight {
			wg.Go(func() {
				req, _ := http.NewRequestWithContext(context.Background(), http.MethodPost, srv.URL, nil)
				resp, err := client.Do(req)
				if err != nil {
					t.Error(err)
					return
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			})
		}
		wg.Wait()
	}
	// One connection per call in flight, dialled in the first round; the
	// old pool of 256 redialled 128 in every later round (768 in all).
	if d := dials.Load(); d > inFlight+inFlight/10 {
		t.Errorf("%d connections dialled for %d rounds of %d calls in flight; want about %d", d, rounds, inFlight, inFlight)
	}
}
