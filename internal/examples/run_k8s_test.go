//go:build darwin || dragonfly || freebsd || linux || netbsd || openbsd

package examples

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/impactbench/impactbench/internal/callstore/s3test"
	"github.com/impactbench/impactbench/internal/cluster"
	"github.com/impactbench/impactbench/internal/config"
	"github.com/impactbench/impactbench/internal/redisserver"
)

// reduce is a copy of the study Job with n completions, k at once, its
// IMPACTBENCH_SHARDS and IMPACTBENCH_WORKERS following (they equal the
// completions and parallelism: TestKubernetesManifests).
func reduce(j *batchv1.Job, n, k int32) *batchv1.Job {
	r := j.DeepCopy()
	r.Spec.Completions, r.Spec.Parallelism = &n, &k
	c := &r.Spec.Template.Spec.Containers[0]
	for i := range c.Env {
		switch c.Env[i].Name {
		case cluster.EnvShards:
			c.Env[i].Value = strconv.Itoa(int(n))
		case cluster.EnvWorkers:
			c.Env[i].Value = strconv.Itoa(int(k))
		}
	}
	return r
}

// TestKubernetesExamplesRun runs both manifests, reduced to 4 indexes 2 at
// a time, step by step as their headers apply them: every pod is the real
// binary with the container's command, working directory, mounts and
// environment (JOB_COMPLETION_INDEX as the Job controller sets it; the
// Secrets' keys; the bucket an S3 API on loopback, the Redis a
// redis-server on loopback). Index 1's first pod is killed by SIGKILL once
// it has stored its first call (victim), and retried on its index, as
// backoffLimitPerIndex does. The merge Job's
// outputs must be byte-identical to one unsharded run's.
func TestKubernetesExamplesRun(t *testing.T) {
	for _, ex := range k8sExamples {
		t.Run(path.Base(ex.file), func(t *testing.T) {
			data, objs := exampleManifest(t, ex.file)
			w := newWorld(t, ex)
			for _, step := range steps(t, ex.file, data) {
				for _, o := range byComponent(objs, step) {
					w.apply(t, o)
				}
				if step == "study" && !ex.fromStore {
					progress(t, w.claims["impactbench-project"])
				}
			}
			merge := jobs(byComponent(objs, "merge"))[0]
			sameAsReference(t, w.outputDir(t, merge))
		})
	}
}

// progress: `impactbench status all` on the shared volume counts every
// shard's conversations before the merge.
func progress(t *testing.T, dir string) {
	out, err := runIn(dir, t.TempDir(), nil, "impactbench", "status", "all")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "32/32") {
		t.Errorf("status all before the merge does not count the shards' 32 conversations:\n%s", out)
	}
}

// newWorld is the stand-in cluster for one example: the Secrets the docs
// tell the user to create, the machine's AWS settings (no shared config,
// no instance metadata; credentials only from the Secret), an S3 API and
// a Redis when the example uses them.
func newWorld(t *testing.T, ex k8sExample) *world {
	projectDir, _ := imageLayout(t)
	w := &world{
		t: t, root: t.TempDir(), home: t.TempDir(), imageProj: projectDir,
		claims:  map[string]string{},
		secrets: createdSecrets(string(repoFile(t, "docs/workers.md"))),
		rewrite: func(_, v string) string { return v },
	}
	w.baseEnv = baseEnv(w.home)
	for _, kv := range s3test.Env(t.TempDir()) {
		if !strings.HasPrefix(kv, "AWS_ACCESS_KEY_ID=") && !strings.HasPrefix(kv, "AWS_SECRET_ACCESS_KEY=") {
			w.baseEnv = append(w.baseEnv, kv)
		}
	}
	if ex.fromStore {
		w.rewrite = storeAndRedis(t)
	}
	return w
}

// storeAndRedis starts the S3 API (with the manifest's bucket) and a
// Redis, and maps the manifest's URLs onto them.
func storeAndRedis(t *testing.T) func(name, value string) string {
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	rs, err := redisserver.Start(ctx, t.TempDir())
	if err == redisserver.ErrNotInstalled {
		t.Skip("redis-server is not installed (Debian package redis-server): the object-store example's Redis cannot run")
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(rs.Stop)
	var mu sync.Mutex
	servers := map[string]*s3test.Server{}
	return func(name, v string) string {
		switch name {
		case config.EnvStore:
			u, err := url.Parse(v)
			if err != nil || u.Scheme != "s3" {
				t.Fatalf("%s=%s: not an s3 URL", name, v)
			}
			mu.Lock()
			defer mu.Unlock()
			if servers[u.Host] == nil {
				servers[u.Host] = s3test.Start(t, u.Host)
			}
			return servers[u.Host].URL(u.Host, strings.TrimPrefix(u.Path, "/"))
		case config.EnvRateBackend:
			u, err := url.Parse(v)
			if err != nil {
				t.Fatal(err)
			}
			u.Host = rs.Addr() // the Service's name, resolved to the Redis behind it
			return u.String()
		}
		return v
	}
}

// apply does what the cluster does with one object: a claim is a
// directory (made when first mounted), a Service or Deployment is the
// Redis already started, a Job runs.
func (w *world) apply(t *testing.T, o object) {
	t.Helper()
	if o.job == nil {
		return
	}
	j := o.job
	if j.Spec.CompletionMode != nil && *j.Spec.CompletionMode == batchv1.IndexedCompletion {
		w.indexed(t, reduce(j, smallCompletions, smallParallelism))
		return
	}
	if out, err := w.pod(context.Background(), j.Spec.Template.Spec, "", nil); err != nil {
		t.Fatalf("job %s: %v\n%s", j.Name, err, out)
	}
}

// indexed runs an Indexed Job as the Job controller does: every index
// once, parallelism pods at a time, a failed pod retried on its index up
// to backoffLimitPerIndex times. Index 1's first pod is killed by SIGKILL
// once it has stored its first call.
func (w *world) indexed(t *testing.T, j *batchv1.Job) {
	t.Helper()
	sem := make(chan struct{}, *j.Spec.Parallelism)
	var wg sync.WaitGroup
	errs := make([]error, *j.Spec.Completions)
	for i := range int(*j.Spec.Completions) {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			_, errs[i] = w.index(j, i)
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("index %d: %v", i, err)
		}
	}
	if t.Failed() {
		t.FailNow()
	}
}

// index runs one index as the Job controller does: until a pod succeeds,
// or the Job's podFailurePolicy fails the index (FailIndex), or the failed
// pods it counts exceed backoffLimitPerIndex; pods is how many it ran.
// Index 1's first pod is killed by SIGKILL once it has stored its first
// call; that it was killed there, not before nor after its end, is part
// of the test.
func (w *world) index(j *batchv1.Job, i int) (pods int, err error) {
	container := j.Spec.Template.Spec.Containers[0].Name
	var last error
	for counted := 0; counted <= int(backoff(j)); {
		if pods > 2*int(backoff(j))+2 {
			return pods, fmt.Errorf("%d pods ignored by the podFailurePolicy, not counted: %w", pods, last)
		}
		pods++
		var v *victim
		if i == 1 && pods == 1 && !w.noVictim {
			v = newVictim(w.t, fmt.Sprintf("shard-%d-of-%d", i, *j.Spec.Completions))
		}
		out, err := w.pod(context.Background(), j.Spec.Template.Spec, strconv.Itoa(i), v)
		if v != nil {
			if kerr := v.landed(err); kerr != nil {
				return pods, fmt.Errorf("index %d's first pod: %w\n%s", i, kerr, out)
			}
			w.t.Logf("index %d's first pod killed after its first stored call: %v", i, err)
		} else if err == nil {
			return pods, nil
		} else {
			w.t.Logf("index %d, pod %d: %v\n%s", i, pods, err, out)
		}
		last = err
		switch a := failureAction(j, container, podFailure{exit: containerExit(err)}); a {
		case batchv1.PodFailurePolicyActionIgnore:
		case batchv1.PodFailurePolicyActionCount:
			counted++
		default:
			return pods, fmt.Errorf("%s after pod %d: %w", a, pods, last)
		}
	}
	return pods, fmt.Errorf("every attempt failed: %w", last)
}

// containerExit is a container's exit code as the kubelet reports it: a
// process killed by a signal is 128 + the signal.
func containerExit(err error) int32 {
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		return 255
	}
	if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int32(ws.Signal())
	}
	return int32(ee.ExitCode())
}

// victim is a pod to kill by SIGKILL once it has stored its first call,
// deterministically however fast it runs (a shard of the reduced study
// takes some 50 ms, less than any fixed delay a loaded machine honours).
// On a shared volume its calls go to segment files named by its shard
// (<…>_shard-1-of-4.seg in the project's .cache): the process is run in
// slices of 200 µs between SIGSTOPs, and killed while stopped once such a
// file holds a record after its header. On an object store its requests
// go through a proxy that passes its first call's PUT and holds every
// later one, so it cannot end before the kill.
type victim struct {
	t     *testing.T
	shard string // its writer label, "shard-1-of-4"

	mu     sync.Mutex
	proxy  *httptest.Server
	stored chan struct{} // closed once the proxy passed its first call's PUT
	puts   int

	done   chan struct{} // closed when watch ends
	killed bool          // watch sent SIGKILL after the first stored call
	why    error         // why it did not
}

func newVictim(t *testing.T, shard string) *victim {
	return &victim{t: t, shard: shard, stored: make(chan struct{}), done: make(chan struct{})}
}

// route sends the pod's object-store requests (IMPACTBENCH_STORE's
// endpoint) through the proxy.
func (v *victim) route(env []string) []string {
	out := slices.Clone(env)
	for i, kv := range out {
		val, ok := strings.CutPrefix(kv, config.EnvStore+"=")
		if !ok {
			continue
		}
		u, err := url.Parse(val)
		if err != nil {
			v.t.Fatal(err)
		}
		q := u.Query()
		target, err := url.Parse(q.Get("endpoint"))
		if err != nil || target.Host == "" {
			v.t.Fatalf("%s: no endpoint", kv)
		}
		rp := httputil.NewSingleHostReverseProxy(target)
		v.proxy = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Method != http.MethodPut || !strings.Contains(r.URL.Path, "/!c") {
				rp.ServeHTTP(w, r)
				return
			}
			v.mu.Lock()
			v.puts++
			first := v.puts == 1
			v.mu.Unlock()
			if !first {
				// Held until the kill was sent. Its body read, the server
				// notices the connection closing when the process dies.
				_, _ = io.Copy(io.Discard, r.Body)
				select {
				case <-r.Context().Done():
				case <-v.done:
				}
				return
			}
			rp.ServeHTTP(w, r)
			close(v.stored)
		}))
		v.t.Cleanup(v.proxy.Close)
		q.Set("endpoint", v.proxy.URL)
		u.RawQuery = q.Encode()
		out[i] = config.EnvStore + "=" + u.String()
	}
	return out
}

// watch kills p once it has stored its first call (dir: its working
// directory, the project on a shared volume).
func (v *victim) watch(p *os.Process, dir string) {
	defer close(v.done)
	if v.proxy != nil {
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		timeout := time.After(cmdTimeout)
		for {
			select {
			case <-v.stored:
				v.killed = p.Signal(syscall.SIGKILL) == nil
				if !v.killed {
					v.why = fmt.Errorf("it ended before the kill")
				}
				return
			case <-tick.C:
				if p.Signal(syscall.Signal(0)) != nil {
					v.why = fmt.Errorf("it ended before it stored a call")
					return
				}
			case <-timeout:
				v.why = fmt.Errorf("no call stored in %v", cmdTimeout)
				_ = p.Kill() // its later PUTs are held: it would never end
				return
			}
		}
	}
	deadline := time.Now().Add(cmdTimeout)
	for time.Now().Before(deadline) {
		if err := stop(p); err != nil {
			v.why = fmt.Errorf("it ended before it stored a call (%v)", err)
			return
		}
		if v.storedIn(filepath.Join(dir, ".cache")) {
			v.killed = p.Signal(syscall.SIGKILL) == nil
			if !v.killed {
				v.why = fmt.Errorf("the kill failed")
			}
			return
		}
		if p.Signal(syscall.SIGCONT) != nil {
			v.why = fmt.Errorf("it ended before it stored a call")
			return
		}
		time.Sleep(200 * time.Microsecond)
	}
	v.why = fmt.Errorf("no call stored in %v", cmdTimeout)
	_ = p.Kill() // not left stopped
}

// storedIn reports whether a segment of the victim's shard under dir
// holds a record after its header line.
func (v *victim) storedIn(dir string) bool {
	found := false
	_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || found || !strings.HasSuffix(d.Name(), "_"+v.shard+".seg") {
			return nil
		}
		b, _ := os.ReadFile(p)
		found = bytes.Count(b, []byte("\n")) >= 2
		return nil
	})
	return found
}

// stop sends SIGSTOP and waits until every thread of p has stopped (Linux:
// /proc/<pid>/task/*/stat; elsewhere a moment), or p has ended.
func stop(p *os.Process) error {
	if err := p.Signal(syscall.SIGSTOP); err != nil {
		return err
	}
	tasks := fmt.Sprintf("/proc/%d/task", p.Pid)
	if _, err := os.Stat("/proc/self/task"); err != nil {
		time.Sleep(5 * time.Millisecond)
		return nil
	}
	for range 10000 {
		ents, err := os.ReadDir(tasks)
		if err != nil {
			return err
		}
		all := true
		for _, e := range ents {
			b, err := os.ReadFile(filepath.Join(tasks, e.Name(), "stat"))
			if err != nil {
				continue // a thread that just ended
			}
			// pid (comm) state …: comm may hold spaces, not ')'.
			st := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
			switch {
			case len(st) == 0:
			case st[0] == "Z" || st[0] == "X":
				return fmt.Errorf("process ended")
			case st[0] != "T" && st[0] != "t":
				all = false
			}
		}
		if all {
			return nil
		}
		time.Sleep(50 * time.Microsecond)
	}
	return fmt.Errorf("process %d did not stop", p.Pid)
}

// landed reports nil when the pod was killed by SIGKILL after its first
// stored call (err: how its container ended).
func (v *victim) landed(err error) error {
	<-v.done
	var ee *exec.ExitError
	switch {
	case v.why != nil:
		return fmt.Errorf("not killed after its first stored call: %w (it ended: %v)", v.why, err)
	case !v.killed:
		return fmt.Errorf("not killed (it ended: %v)", err)
	case !errors.As(err, &ee):
		return fmt.Errorf("killed, yet it ended %v", err)
	}
	if ws, ok := ee.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		return fmt.Errorf("killed, yet it ended %v", err)
	}
	return nil
}

// outputDir is where the merge Job's container works, on the host.
func (w *world) outputDir(t *testing.T, merge *batchv1.Job) string {
	t.Helper()
	pod := merge.Spec.Template.Spec
	c := pod.Containers[0]
	for _, m := range c.VolumeMounts {
		if m.MountPath != c.WorkingDir {
			continue
		}
		for _, v := range pod.Volumes {
			if v.Name == m.Name && v.PersistentVolumeClaim != nil {
				return filepath.Join(w.claims[v.PersistentVolumeClaim.ClaimName])
			}
		}
	}
	t.Fatalf("the merge Job's outputs are not on a claim: they would vanish with its pod")
	return ""
}

// world stands in for the cluster the examples run on: each claim a
// directory, the image's project a directory, Secrets and Services maps.
type world struct {
	t          *testing.T
	root, home string
	imageProj  string            // the image's project path (/study)
	claims     map[string]string // claim name → directory
	secrets    map[string]bool   // "secret/key" the docs create
	rewrite    func(name, value string) string
	baseEnv    []string
	mu         sync.Mutex
	podN       int
	noVictim   bool // no pod is killed (index)
}

// podDirs maps every volume of a pod onto a directory: a claim's own, or
// a fresh one for an emptyDir (one per pod).
func (w *world) podDirs(pod corev1.PodSpec, vols map[string]string) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, v := range pod.Volumes {
		switch {
		case v.PersistentVolumeClaim != nil:
			dir, ok := w.claims[v.PersistentVolumeClaim.ClaimName]
			if !ok {
				dir = filepath.Join(w.root, "claim-"+v.PersistentVolumeClaim.ClaimName)
				if err := os.MkdirAll(dir, 0o755); err != nil {
					return err
				}
				w.claims[v.PersistentVolumeClaim.ClaimName] = dir
			}
			vols[v.Name] = dir
		case v.EmptyDir != nil:
			w.podN++
			dir := filepath.Join(w.root, "emptydir-"+strconv.Itoa(w.podN))
			if err := os.MkdirAll(dir, 0o755); err != nil {
				return err
			}
			vols[v.Name] = dir
		default:
			return fmt.Errorf("volume %s: a kind the examples do not use", v.Name)
		}
	}
	return nil
}

// hostPath maps a container path onto the directories standing in for
// its mounts.
func hostPath(mounts map[string]string, p string) string {
	best := ""
	for m := range mounts {
		if (p == m || strings.HasPrefix(p, m+"/")) && len(m) > len(best) {
			best = m
		}
	}
	if best == "" {
		return p
	}
	return mounts[best] + p[len(best):]
}

// container runs one container of a pod to its end (v, when set, is the
// pod to kill once it has stored its first call).
func (w *world) container(ctx context.Context, c corev1.Container, vols map[string]string, index string, v *victim) ([]byte, error) {
	mounts := map[string]string{w.imageProj: imageDir}
	for _, m := range c.VolumeMounts {
		mounts[m.MountPath] = vols[m.Name]
	}
	args := make([]string, len(c.Command))
	for i, a := range c.Command {
		args[i] = hostPath(mounts, a)
	}
	if args[0] == "impactbench" {
		args[0] = filepath.Join(binDir, "impactbench")
	}
	cmd := exec.CommandContext(ctx, args[0], args[1:]...)
	cmd.Dir = hostPath(mounts, c.WorkingDir)
	env, err := w.env(c, index)
	if err != nil {
		return nil, err
	}
	if v != nil {
		env = v.route(env)
	}
	cmd.Env = append(slices.Clone(w.baseEnv), env...)
	out := &lockedBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	if v != nil {
		go v.watch(cmd.Process, cmd.Dir)
	}
	err = cmd.Wait()
	return out.Bytes(), err
}

// env is the container's environment as the kubelet sets it: the Indexed
// Job's JOB_COMPLETION_INDEX, each literal value, each Secret's key (a
// Secret the docs tell the user to create).
func (w *world) env(c corev1.Container, index string) ([]string, error) {
	var env []string
	if index != "" {
		env = append(env, cluster.EnvK8sIndex+"="+index)
	}
	for _, e := range c.Env {
		v := e.Value
		if e.ValueFrom != nil {
			ref := e.ValueFrom.SecretKeyRef
			if ref == nil {
				return nil, fmt.Errorf("%s: only Secrets feed the examples' variables", e.Name)
			}
			if !w.secrets[ref.Name+"/"+ref.Key] {
				return nil, fmt.Errorf("%s: key %s of Secret %s is not created by the docs' `kubectl create secret generic %s --from-literal=%s=…`", e.Name, ref.Key, ref.Name, ref.Name, ref.Key)
			}
			v = secretValue(e.Name)
		}
		env = append(env, e.Name+"="+w.rewrite(e.Name, v))
	}
	return env, nil
}

// secretValue is what the test's Secrets hold for a variable: the S3
// API's credentials, a key the offline model never uses otherwise.
func secretValue(name string) string {
	switch name {
	case "AWS_ACCESS_KEY_ID":
		return s3test.AccessKey
	case "AWS_SECRET_ACCESS_KEY":
		return s3test.SecretKey
	}
	return "not-used-by-the-offline-model"
}

// pod runs a pod: its init containers in order, then its container.
func (w *world) pod(ctx context.Context, spec corev1.PodSpec, index string, v *victim) ([]byte, error) {
	vols := map[string]string{}
	if err := w.podDirs(spec, vols); err != nil {
		return nil, err
	}
	var all []byte
	for _, c := range spec.InitContainers {
		out, err := w.container(ctx, c, vols, index, nil)
		all = append(all, out...)
		if err != nil {
			return all, err
		}
	}
	out, err := w.container(ctx, spec.Containers[0], vols, index, v)
	return append(all, out...), err
}

// createdSecrets is every "secret/key" a `kubectl create secret generic
// NAME --from-literal=KEY=…` command creates in text (continued lines,
// commented or not, joined).
func createdSecrets(text string) map[string]bool {
	joined := regexp.MustCompile(`\\\n#?\s*`).ReplaceAllString(text, " ")
	cmd := regexp.MustCompile(`kubectl create secret generic (\S+)((?: +--from-literal=[^=\s]+=\S*)+)`)
	lit := regexp.MustCompile(`--from-literal=([^=\s]+)=`)
	out := map[string]bool{}
	for _, m := range cmd.FindAllStringSubmatch(joined, -1) {
		for _, k := range lit.FindAllStringSubmatch(m[2], -1) {
			out[m[1]+"/"+k[1]] = true
		}
	}
	return out
}

// TestKubernetesBadInputFailsIndexAtOnce: a worker given bad input (here
// more workers than shards) exits 2, and the study Job's podFailurePolicy
// fails its index after that one pod instead of retrying it
// backoffLimitPerIndex times to fail alike; the pod says why.
func TestKubernetesBadInputFailsIndexAtOnce(t *testing.T) {
	for _, ex := range k8sExamples {
		t.Run(path.Base(ex.file), func(t *testing.T) {
			data, objs := exampleManifest(t, ex.file)
			w := newWorld(t, ex)
			w.noVictim = true
			for _, step := range steps(t, ex.file, data) {
				if step == "study" {
					break
				}
				for _, o := range byComponent(objs, step) {
					w.apply(t, o)
				}
			}
			j, _ := studyJob(t, objs)
			bad := reduce(j, smallCompletions, smallParallelism)
			c := &bad.Spec.Template.Spec.Containers[0]
			for i := range c.Env {
				if c.Env[i].Name == cluster.EnvWorkers {
					c.Env[i].Value = strconv.Itoa(smallCompletions + 1)
				}
			}
			pods, err := w.index(bad, 0)
			if err == nil || containerExit(errors.Unwrap(err)) != 2 {
				t.Fatalf("index 0 with %s above the shard count: %v, want exit 2", cluster.EnvWorkers, err)
			}
			if pods != 1 {
				t.Errorf("index 0 ran %d pods for one input error, want 1 (its index failed at once): %v", pods, err)
			}
		})
	}
}
