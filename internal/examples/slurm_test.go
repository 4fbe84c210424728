package examples

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/impactbench/impactbench/internal/cluster"
)

const slurmDir = "docs/examples/slurm"

var (
	arrayLine   = regexp.MustCompile(`(?m)^#SBATCH --array=(\d+)-(\d+)%(\d+)$`)
	workersLine = regexp.MustCompile(`(?m)^export ` + cluster.EnvWorkers + `=(\d+)$`)
	shardsLine  = regexp.MustCompile(`(?m)^export ` + cluster.EnvShards + `=(\d+)$`)
)

// arraySpec is a study script's array: task ids lo..hi, throttle at once,
// and the IMPACTBENCH_WORKERS and IMPACTBENCH_SHARDS it exports.
type arraySpec struct{ lo, hi, throttle, workers, shards int }

func parseArray(t *testing.T, script string) arraySpec {
	t.Helper()
	a, w, k := arrayLine.FindStringSubmatch(script), workersLine.FindStringSubmatch(script), shardsLine.FindStringSubmatch(script)
	if a == nil || w == nil || k == nil {
		t.Fatalf("study.sbatch: want one `#SBATCH --array=lo-hi%%N`, one `export %s=N` and one `export %s=N`", cluster.EnvWorkers, cluster.EnvShards)
	}
	n := func(s string) int { v, _ := strconv.Atoi(s); return v }
	return arraySpec{n(a[1]), n(a[2]), n(a[3]), n(w[1]), n(k[1])}
}

// TestSlurmScripts: the array is 128 tasks, 16 at once, and the script
// says the 16 and the 128 to impactbench itself (Slurm tells a task its
// id, not the throttle, and a task resubmitted alone is an array of one);
// the tasks run the study, the merge job merges it.
func TestSlurmScripts(t *testing.T) {
	study := string(repoFile(t, slurmDir+"/study.sbatch"))
	a := parseArray(t, study)
	if a != (arraySpec{0, 127, 16, 16, 128}) {
		t.Errorf("study.sbatch: array %d-%d%%%d with %s=%d and %s=%d, want 0-127%%16, 16 and 128", a.lo, a.hi, a.throttle, cluster.EnvWorkers, a.workers, cluster.EnvShards, a.shards)
	}
	if !strings.HasSuffix(study, "\nexec impactbench run all --no-report\n") {
		t.Errorf("study.sbatch does not end by running the study")
	}
	if m := string(repoFile(t, slurmDir+"/merge.sbatch")); !strings.HasSuffix(m, "\nexec impactbench merge all\n") {
		t.Errorf("merge.sbatch does not end by merging")
	}
}

// slurm stands in for Slurm: a recording sbatch on PATH, and the tasks of
// an array run as Slurm runs them.
type slurm struct {
	t                   *testing.T
	scripts, proj, home string
	state               string // the fake sbatch's records
	path                []string
}

// newSlurm copies the scripts with the array reduced to 0-3%2 (the
// script's IMPACTBENCH_WORKERS and IMPACTBENCH_SHARDS following), a project without scenarios,
// and a fake sbatch that records its arguments and prints job ids from
// 1001 as `sbatch --parsable` does on a federation ("id;cluster").
func newSlurm(t *testing.T) *slurm {
	s := &slurm{t: t, scripts: t.TempDir(), proj: filepath.Join(t.TempDir(), "proj"), home: t.TempDir(), state: t.TempDir()}
	for _, f := range []string{"study.sbatch", "merge.sbatch", "submit.sh"} {
		b := string(repoFile(t, slurmDir+"/"+f))
		if f == "study.sbatch" {
			b = arrayLine.ReplaceAllString(b, fmt.Sprintf("#SBATCH --array=0-%d%%%d", smallCompletions-1, smallParallelism))
			b = workersLine.ReplaceAllString(b, fmt.Sprintf("export %s=%d", cluster.EnvWorkers, smallParallelism))
			b = shardsLine.ReplaceAllString(b, fmt.Sprintf("export %s=%d", cluster.EnvShards, smallCompletions))
		}
		if err := os.WriteFile(filepath.Join(s.scripts, f), []byte(b), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.CopyFS(s.proj, os.DirFS(initDir)); err != nil {
		t.Fatal(err)
	}
	fake := t.TempDir()
	sbatch := `#!/bin/bash
n=$(( $(cat "$SBATCH_STATE/n" 2>/dev/null || echo 1000) + 1 ))
echo "$n" > "$SBATCH_STATE/n"
printf '%s\n' "$@" > "$SBATCH_STATE/call-$n"
echo "$n;testcluster"
`
	if err := os.WriteFile(filepath.Join(fake, "sbatch"), []byte(sbatch), 0o755); err != nil {
		t.Fatal(err)
	}
	s.path = []string{"PATH=" + fake + string(os.PathListSeparator) + binDir + ":/usr/local/bin:/usr/bin:/bin", "SBATCH_STATE=" + s.state}
	return s
}

// call is the arguments of the fake sbatch's call for job id.
func (s *slurm) call(id int) []string {
	b, err := os.ReadFile(filepath.Join(s.state, "call-"+strconv.Itoa(id)))
	if err != nil {
		s.t.Fatalf("sbatch call for job %d: %v", id, err)
	}
	return strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
}

// task runs one array task as Slurm does: the script under bash in the
// submit directory, with the array's variables (as sbatch's manual lists
// them); kill, when set, gets the started process.
func (s *slurm) task(a arraySpec, jobID, id int, kill func(*os.Process)) (string, error) {
	env := append(append(baseEnv(s.home), s.path...),
		"SLURM_JOB_ID="+strconv.Itoa(jobID*1000+id), "SLURM_ARRAY_JOB_ID="+strconv.Itoa(jobID),
		cluster.EnvSlurmID+"="+strconv.Itoa(id), cluster.EnvSlurmCount+"="+strconv.Itoa(a.hi-a.lo+1),
		cluster.EnvSlurmMin+"="+strconv.Itoa(a.lo), cluster.EnvSlurmMax+"="+strconv.Itoa(a.hi),
		cluster.EnvSlurmStep+"=1", "SLURM_SUBMIT_DIR="+s.proj)
	return s.script("study.sbatch", env, kill)
}

// script runs one of the scripts under bash in the project directory
// (name "-c": the command line args[0]).
func (s *slurm) script(name string, env []string, kill func(*os.Process), args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), cmdTimeout)
	defer cancel()
	if name != "-c" {
		name = filepath.Join(s.scripts, name)
	}
	cmd := exec.CommandContext(ctx, "/bin/bash", append([]string{name}, args...)...)
	cmd.Dir, cmd.Env = s.proj, env
	out := &lockedBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		return "", err
	}
	if kill != nil {
		kill(cmd.Process)
	}
	err := cmd.Wait()
	return string(out.Bytes()), err
}

// array runs every task of the array, throttle at a time; task dead's
// first run is killed by SIGKILL as it starts (its node lost).
func (s *slurm) array(a arraySpec, jobID, dead int) {
	sem := make(chan struct{}, a.throttle)
	var wg sync.WaitGroup
	errs := make([]error, a.hi+1)
	for id := a.lo; id <= a.hi; id++ {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			var kill func(*os.Process)
			if id == dead {
				kill = func(p *os.Process) { _ = p.Signal(syscall.SIGKILL) }
			}
			out, err := s.task(a, jobID, id, kill)
			if err != nil && id != dead {
				errs[id] = fmt.Errorf("%w\n%s", err, out)
			}
		}()
	}
	wg.Wait()
	for id, err := range errs {
		if err != nil {
			s.t.Fatalf("task %d: %v", id, err)
		}
	}
}

// TestSlurmExampleRun runs submit.sh with sbatch replaced by a recording
// script (the scenarios generated first; the array; the merge depending
// on it with afterany), then the array's tasks as Slurm would run them, 2
// at once — task 1 killed as it starts — then the merge job, which exits 2
// naming the missing shard. Task 1 resubmitted alone (sbatch --array=1:
// a one-task array) runs shard 1; docs/workers.md's rerun by hand and
// task 0 run again (a resubmitted array) then pay nothing, and the merge
// succeeds with outputs byte-identical to one unsharded run's.
func TestSlurmExampleRun(t *testing.T) {
	s := newSlurm(t)
	out, err := s.script("submit.sh", append(baseEnv(s.home), s.path...), nil)
	if err != nil {
		t.Fatalf("submit.sh: %v\n%s", err, out)
	}
	if got, want := s.call(1001), []string{"--parsable", filepath.Join(s.scripts, "study.sbatch")}; !slices.Equal(got, want) {
		t.Errorf("the array's sbatch %q, want %q", got, want)
	}
	if got, want := s.call(1002), []string{"--parsable", "--dependency=afterany:1001", filepath.Join(s.scripts, "merge.sbatch")}; !slices.Equal(got, want) {
		t.Errorf("the merge's sbatch %q, want %q", got, want)
	}
	for _, p := range []string{"logs", "benchmarks/example/scenarios.json"} {
		if _, err := os.Stat(filepath.Join(s.proj, p)); err != nil {
			t.Errorf("submit.sh did not make %s: %v", p, err)
		}
	}
	study, _ := os.ReadFile(filepath.Join(s.scripts, "study.sbatch"))
	a := parseArray(t, string(study))
	s.array(a, 1001, 1)

	mergeEnv := append(append(baseEnv(s.home), s.path...), "SLURM_JOB_ID=1002", "SLURM_SUBMIT_DIR="+s.proj)
	before := treeDigest(t, filepath.Join(s.proj, "benchmarks"))
	out, err = s.script("merge.sbatch", mergeEnv, nil)
	if code := exitCode(err); code != 2 || !strings.Contains(out, "shard(s) 1 of 4 missing") {
		t.Fatalf("merge with task 1 dead: exit %d, want 2 naming shard 1\n%s", code, out)
	}
	if treeDigest(t, filepath.Join(s.proj, "benchmarks")) != before {
		t.Errorf("the refused merge changed files")
	}
	s.resubmitOne(a)
	rerun := wrapRerun(t)
	if out, err := s.script("-c", append(append(baseEnv(s.home), s.path...), "SLURM_JOB_ID=1004"), nil, rerun); err != nil || !strings.Contains(out, "(0 calls") {
		t.Fatalf("docs/workers.md's rerun of one index (%s) after the resubmitted task: %v, want it to pay no call\n%s", rerun, err, out)
	}
	out, err = s.task(a, 1003, 0, nil)
	if err != nil || !strings.Contains(out, "(0 calls") {
		t.Errorf("task 0 run again: %v, want it to pay no call\n%s", err, out)
	}
	if out, err := s.script("merge.sbatch", mergeEnv, nil); err != nil {
		t.Fatalf("merge: %v\n%s", err, out)
	}
	sameAsReference(t, s.proj)
}

func exitCode(err error) int {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode()
	}
	if err != nil {
		return -1
	}
	return 0
}

// resubmitOne: `sbatch --array=1 study.sbatch` makes a one-task array
// (Slurm sets SLURM_ARRAY_TASK_COUNT=1, MIN=MAX=1); the script's
// IMPACTBENCH_SHARDS makes its id the shard index, so it runs shard 1 of
// the study. An array numbered past the study (--array=1-4 for 4 shards,
// MAX=4) is refused (exit 2 naming SLURM_ARRAY_TASK_MAX) without a file
// changed.
func (s *slurm) resubmitOne(a arraySpec) {
	t := s.t
	before := treeDigest(t, filepath.Join(s.proj, "benchmarks"))
	off := arraySpec{lo: 1, hi: a.shards, throttle: 1, workers: a.workers, shards: a.shards}
	out, err := s.task(off, 1005, 1, nil)
	if code := exitCode(err); code != 2 || !strings.Contains(out, cluster.EnvSlurmMax) {
		t.Errorf("a task of --array=1-%d: exit %d, want 2 naming %s\n%s", a.shards, code, cluster.EnvSlurmMax, out)
	}
	if after := treeDigest(t, filepath.Join(s.proj, "benchmarks")); after != before {
		t.Errorf("the refused task changed files")
	}
	out, err = s.task(arraySpec{lo: 1, hi: 1, throttle: 1, workers: a.workers, shards: a.shards}, 1006, 1, nil)
	if err != nil || strings.Contains(out, "(0 calls") {
		t.Fatalf("task 1 resubmitted with --array=1: %v, want it to run shard 1 and pay its calls\n%s", err, out)
	}
}

// wrapRerun is docs/workers.md's command for running one index of the
// 128-task array by hand (sbatch --wrap '…'), for shard 1 of the reduced
// array with its 2 workers.
func wrapRerun(t *testing.T) string {
	t.Helper()
	re := regexp.MustCompile(`sbatch --output=\S+ --wrap '(impactbench run all --no-report --shard (\d+)/128 --workers 16)'`)
	m := re.FindStringSubmatch(string(repoFile(t, "docs/workers.md")))
	if m == nil {
		t.Fatalf("docs/workers.md: no `sbatch --output=… --wrap 'impactbench run all --no-report --shard i/128 --workers 16'`")
	}
	cmd := strings.Replace(m[1], m[2]+"/128", fmt.Sprintf("1/%d", smallCompletions), 1)
	return strings.Replace(cmd, "--workers 16", fmt.Sprintf("--workers %d", smallParallelism), 1)
}

// treeDigest names every file under dir with its size and bytes' hash.
func treeDigest(t *testing.T, dir string) string {
	t.Helper()
	var b strings.Builder
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(p)
		fmt.Fprintf(&b, "%s %x\n", p, sha256.Sum256(data))
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// lockedBuffer is an output both of a process's streams write to.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) Bytes() []byte {
	l.mu.Lock()
	defer l.mu.Unlock()
	return bytes.Clone(l.b.Bytes())
}
