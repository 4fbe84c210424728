package examples

import (
	"bytes"
	"context"
	"fmt"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"

	"github.com/impactbench/impactbench/internal/callstore/s3test"
	"github.com/impactbench/impactbench/internal/cluster"
	"github.com/impactbench/impactbench/internal/config"
	"github.com/impactbench/impactbench/internal/redisserver"
)

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

// The reduced study the examples run: as many indexes and workers at once
// as a test can afford, the manifest's shape otherwise.
const smallCompletions, smallParallelism = 4, 2

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
// redis-server on loopback). Index 1's first pod is killed by SIGKILL and
// retried on its index, as backoffLimitPerIndex does. The merge Job's
// outputs must be byte-identical to one unsharded run's.
func TestKubernetesExamplesRun(t *testing.T) {
	for _, ex := range k8sExamples {
		t.Run(path.Base(ex.file), func(t *testing.T) {
			data := repoFile(t, ex.file)
			objs, err := decodeManifest(data)
			if err != nil {
				t.Fatal(err)
			}
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
// while it runs.
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
			errs[i] = w.index(j, i)
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

// index runs one index until a pod succeeds or its retries are spent.
func (w *world) index(j *batchv1.Job, i int) error {
	var last error
	for attempt := 0; attempt <= int(*j.Spec.BackoffLimitPerIndex); attempt++ {
		var kill func(*os.Process)
		if i == 1 && attempt == 0 {
			kill = func(p *os.Process) { time.AfterFunc(150*time.Millisecond, func() { _ = p.Signal(syscall.SIGKILL) }) }
		}
		out, err := w.pod(context.Background(), j.Spec.Template.Spec, strconv.Itoa(i), kill)
		switch {
		case err == nil && kill != nil:
			w.t.Logf("index %d's first pod ended before the kill", i)
			return nil
		case err == nil:
			return nil
		case kill != nil:
			w.t.Logf("index %d's first pod killed: %v", i, err)
		default:
			w.t.Logf("index %d, attempt %d: %v\n%s", i, attempt, err, out)
		}
		last = err
	}
	return fmt.Errorf("every attempt failed: %w", last)
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
