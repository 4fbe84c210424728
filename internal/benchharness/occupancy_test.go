package benchharness

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/impactbench/impactbench/internal/llm/ratelimit/fakeprovider"
)

func TestOccupancyCountsRequestsInFlightByPoolAndUserTurn(t *testing.T) {
	o := newOccupancy()
	opening := []byte(`{"model":"u","messages":[{"role":"system","content":"s"},{"role":"user","content":"go"}]}`)
	later := []byte(`{"model":"u","messages":[{"role":"system","content":"s"},{"role":"user","content":"go"},{"role":"assistant","content":"a"},{"role":"user","content":"b"}]}`)
	endOpening := o.begin("bench-user", roleUser, opening)
	endLater := o.begin("bench-user", roleUser, later)
	endJudge := o.begin("bench-judge", roleJudge, later)
	var b bytes.Buffer
	o.sample(&b, 100)
	want := "100\tbench-judge\t1\n100\tbench-user\t2\n100\tuser/later\t1\n100\tuser/turn1\t1\n"
	if b.String() != want {
		t.Fatalf("sample while in flight:\n%s\nwant\n%s", b.String(), want)
	}
	endOpening()
	endLater()
	endJudge()
	b.Reset()
	o.sample(&b, 200)
	if strings.Count(b.String(), "\t0\n") != 4 {
		t.Fatalf("sample after the requests ended:\n%s", b.String())
	}
}

func TestTraceFakeWritesTheFileUntilStopped(t *testing.T) {
	f := newFakeServer([]modelSpec{{userModel, roleUser, 10}}, fakeprovider.Config{}, false)
	path := filepath.Join(t.TempDir(), "pools.tsv")
	stop, err := traceFake(f, path)
	if err != nil {
		t.Fatal(err)
	}
	end := f.occ.begin(userModel, roleUser, []byte(`{"messages":[{"role":"system"},{"role":"user"}]}`))
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		b, _ := os.ReadFile(path)
		if bytes.Contains(b, []byte("\tuser/turn1\t1\n")) {
			break
		}
		if time.Now().After(deadline) {
			_ = stop()
			t.Fatalf("no sample with the opening in flight after 10 s: %q", b)
		}
	}
	end()
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(b), "t_ms\tseries\tin_flight\n") {
		t.Fatalf("no header: %q", b)
	}
	none, err := traceFake(f, "")
	if err != nil || none() != nil {
		t.Fatal("no path: no trace, no error")
	}
}
