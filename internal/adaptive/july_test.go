package adaptive

import (
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/impactbench/impactbench/internal/study"
	"github.com/impactbench/impactbench/internal/study/studytest"
)

// The July 2026 study, rebuilt from the published files (studytest) once
// for the tests of this package.
var (
	julyOnce  sync.Once
	julyStudy *study.Study
	julyDir   string
	julyErr   error
)

func july(t testing.TB) *study.Study {
	t.Helper()
	if testing.Short() {
		t.Skip("rebuilds the 16-model July study")
	}
	julyOnce.Do(func() {
		base := ""
		if st, err := os.Stat("/dev/shm"); err == nil && st.IsDir() {
			base = "/dev/shm" // ~31,000 small files
		}
		if julyDir, julyErr = os.MkdirTemp(base, "impactbench-adaptive-"); julyErr != nil {
			return
		}
		if _, julyErr = studytest.WriteDir(julyDir); julyErr != nil {
			return
		}
		julyStudy, julyErr = study.Load(filepath.Join(julyDir, "benchmarks"))
	})
	if julyErr != nil {
		t.Fatal(julyErr)
	}
	return julyStudy
}

func TestMain(m *testing.M) {
	code := m.Run()
	if julyDir != "" {
		os.RemoveAll(julyDir)
	}
	os.Exit(code)
}
