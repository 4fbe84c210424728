package examples

import (
	"net/url"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/impactbench/impactbench/internal/cli"
	"github.com/impactbench/impactbench/internal/cluster"
	"github.com/impactbench/impactbench/internal/config"
)

// k8sExample is one manifest and what its merge looks like.
type k8sExample struct {
	file      string
	fromStore bool // workers share only an object store; merge --from-store
}

var k8sExamples = []k8sExample{
	{"docs/examples/kubernetes/indexed-job.yaml", false},
	{"docs/examples/kubernetes/indexed-job-s3.yaml", true},
}

// imageLayout is what the Dockerfile puts in the image: the project's
// directory and the binary's path.
func imageLayout(t *testing.T) (project, binary string) {
	t.Helper()
	for ln := range strings.Lines(string(repoFile(t, "docs/examples/kubernetes/Dockerfile"))) {
		f := strings.Fields(ln)
		if len(f) != 3 || f[0] != "COPY" {
			continue
		}
		switch f[1] {
		case "impactbench":
			binary = f[2]
		case "config.yaml":
			project = path.Dir(f[2])
		case "benchmarks":
			if path.Dir(f[2]) != project {
				t.Errorf("Dockerfile: benchmarks copied to %s, config.yaml to %s: one project directory", f[2], project)
			}
		}
	}
	if project == "" || binary == "" {
		t.Fatalf("Dockerfile: no COPY of the project (%q) or the binary (%q)", project, binary)
	}
	return project, binary
}

// steps are the components the manifest's header applies, in order
// (kubectl apply -f <file> -l app.kubernetes.io/component=<step>).
func steps(t *testing.T, file string, data []byte) []string {
	t.Helper()
	re := regexp.MustCompile(`(?m)^#\s+kubectl apply -f (\S+) -l ` + regexp.QuoteMeta(componentLabel) + `=(\S+)$`)
	var out []string
	for _, m := range re.FindAllStringSubmatch(string(data), -1) {
		if m[1] != path.Base(file) {
			t.Errorf("%s: its header applies %s", file, m[1])
		}
		out = append(out, m[2])
	}
	return out
}

// TestKubernetesManifests decodes every document of both examples into
// the Kubernetes API's types, strictly, and checks what the study needs:
// an Indexed Job whose IMPACTBENCH_SHARDS is its completions and
// IMPACTBENCH_WORKERS its parallelism, retried per index, one image and
// one project everywhere, the volumes mounted where the commands work, the
// credentials from Secrets, and the merge's command.
func TestKubernetesManifests(t *testing.T) {
	projectDir, binary := imageLayout(t)
	if !slices.Contains([]string{"/usr/local/bin", "/usr/bin", "/bin"}, path.Dir(binary)) {
		t.Errorf("Dockerfile: the binary at %s is not on a container's default PATH", binary)
	}
	for _, ex := range k8sExamples {
		t.Run(path.Base(ex.file), func(t *testing.T) {
			data, objs := exampleManifest(t, ex.file)
			st := steps(t, ex.file, data)
			seen := 0
			for _, s := range st {
				seen += len(byComponent(objs, s))
			}
			if seen != len(objs) || len(st) == 0 {
				t.Errorf("the header's steps %v apply %d of the %d objects", st, seen, len(objs))
			}
			checkStudyJob(t, objs)
			checkReadyBeforeStudy(t, data, objs)
			checkMergeJob(t, objs, ex.fromStore)
			checkPods(t, objs, projectDir)
			checkSecrets(t, objs, ex.fromStore)
		})
	}
}

// checkReadyBeforeStudy: every Deployment the study needs (the Redis of
// IMPACTBENCH_RATE_BACKEND) has a readiness probe, and the header waits
// for its rollout before it applies the study: a worker that cannot reach
// it at the start exits 2, and the podFailurePolicy fails that index at once.
func checkReadyBeforeStudy(t *testing.T, data []byte, objs []object) {
	t.Helper()
	header := string(data)
	study := strings.Index(header, componentLabel+"=study")
	for _, o := range objs {
		if o.dep == nil {
			continue
		}
		for _, c := range o.dep.Spec.Template.Spec.Containers {
			if c.ReadinessProbe == nil {
				t.Errorf("deployment %s, container %s: no readinessProbe, so its rollout is done before it takes connections", o.meta.GetName(), c.Name)
			}
		}
		re := regexp.MustCompile(`(?m)^#\s+kubectl rollout status (?:--timeout=\S+ )?deployment/` + regexp.QuoteMeta(o.meta.GetName()) + `$`)
		loc := re.FindStringIndex(header)
		if loc == nil || study < 0 || loc[0] > study {
			t.Errorf("the header does not wait for deployment/%s (kubectl rollout status) before it applies the study", o.meta.GetName())
		}
	}
}

// studyJob is the example's Indexed Job and its worker container.
func studyJob(t *testing.T, objs []object) (*batchv1.Job, corev1.Container) {
	t.Helper()
	var found []*batchv1.Job
	for _, j := range jobs(objs) {
		if j.Spec.CompletionMode != nil && *j.Spec.CompletionMode == batchv1.IndexedCompletion {
			found = append(found, j)
		}
	}
	if len(found) != 1 || len(found[0].Spec.Template.Spec.Containers) != 1 {
		t.Fatalf("want one Indexed Job with one container, found %d", len(found))
	}
	return found[0], found[0].Spec.Template.Spec.Containers[0]
}

func checkStudyJob(t *testing.T, objs []object) {
	j, c := studyJob(t, objs)
	s := j.Spec
	if s.Completions == nil || s.Parallelism == nil || *s.Completions != 128 || *s.Parallelism != 16 {
		t.Errorf("want 128 completions, 16 at once (many more indexes than workers)")
	} else {
		if v := envValue(c, cluster.EnvShards); v != strconv.Itoa(int(*s.Completions)) {
			t.Errorf("%s=%q, want the completions %d", cluster.EnvShards, v, *s.Completions)
		}
		if v := envValue(c, cluster.EnvWorkers); v != strconv.Itoa(int(*s.Parallelism)) {
			t.Errorf("%s=%q, want the parallelism %d", cluster.EnvWorkers, v, *s.Parallelism)
		}
	}
	if s.BackoffLimitPerIndex == nil || *s.BackoffLimitPerIndex < 1 || s.Template.Spec.RestartPolicy != corev1.RestartPolicyNever {
		t.Errorf("a failed index must be retried on its own: backoffLimitPerIndex ≥ 1 with restartPolicy Never")
	}
	if s.PodReplacementPolicy == nil || *s.PodReplacementPolicy != batchv1.Failed {
		t.Errorf("podReplacementPolicy must be Failed: a replacement pod waits for the one it replaces to end")
	}
	if want := []string{"impactbench", "run", "all", "--no-report"}; !slices.Equal(c.Command, want) {
		t.Errorf("worker command %q, want %q", c.Command, want)
	}
	checkFailurePolicy(t, j, c.Name)
}

// podFailure is how a worker's pod ended: its container's exit code, and
// whether the cluster marked it disrupted (evicted, preempted, drained).
type podFailure struct {
	exit      int32
	disrupted bool
}

// failureAction is what the Job controller does with a failed pod of j:
// the action of the first rule of its podFailurePolicy the pod matches,
// Count (the default) when none does. An unknown action is skipped, as
// the API says clients do.
func failureAction(j *batchv1.Job, container string, f podFailure) batchv1.PodFailurePolicyAction {
	if j.Spec.PodFailurePolicy == nil {
		return batchv1.PodFailurePolicyActionCount
	}
	for _, r := range j.Spec.PodFailurePolicy.Rules {
		switch r.Action {
		case batchv1.PodFailurePolicyActionFailJob, batchv1.PodFailurePolicyActionFailIndex,
			batchv1.PodFailurePolicyActionIgnore, batchv1.PodFailurePolicyActionCount:
		default:
			continue
		}
		if e := r.OnExitCodes; e != nil {
			if e.ContainerName != nil && *e.ContainerName != container {
				continue
			}
			in := slices.Contains(e.Values, f.exit)
			if (e.Operator == batchv1.PodFailurePolicyOnExitCodesOpIn) == in && f.exit != 0 {
				return r.Action
			}
		}
		for _, c := range r.OnPodConditions {
			if c.Type == corev1.DisruptionTarget && c.Status == corev1.ConditionTrue && f.disrupted {
				return r.Action
			}
		}
	}
	return batchv1.PodFailurePolicyActionCount
}

// checkFailurePolicy: the study Job's podFailurePolicy is one the API
// accepts (restartPolicy Never; FailIndex only with backoffLimitPerIndex;
// podReplacementPolicy Failed; each rule on exit codes or on conditions,
// not both; exit codes 1–255, sorted, none repeated, of a container the
// pod has), and it treats each way a worker ends as docs/workers.md says:
// bad input (exit 2) fails the index at once; a disruption is replaced
// without spending a retry; an interrupted worker (130, or 143 before
// its signal handler) and any other failure spend one.
func checkFailurePolicy(t *testing.T, j *batchv1.Job, container string) {
	t.Helper()
	p := j.Spec.PodFailurePolicy
	if p == nil {
		t.Errorf("the study Job has no podFailurePolicy: a pod that exits %d (bad input) is retried %d times to fail alike", cli.ExitUsage, backoff(j))
		return
	}
	if j.Spec.Template.Spec.RestartPolicy != corev1.RestartPolicyNever {
		t.Errorf("podFailurePolicy needs restartPolicy Never")
	}
	if j.Spec.PodReplacementPolicy == nil || *j.Spec.PodReplacementPolicy != batchv1.Failed {
		t.Errorf("with a podFailurePolicy, podReplacementPolicy must be Failed")
	}
	for i, r := range p.Rules {
		if (r.OnExitCodes == nil) == (len(r.OnPodConditions) == 0) {
			t.Errorf("rule %d: one of onExitCodes and onPodConditions, not both, not neither", i)
		}
		if r.Action == batchv1.PodFailurePolicyActionFailIndex && j.Spec.BackoffLimitPerIndex == nil {
			t.Errorf("rule %d: FailIndex needs backoffLimitPerIndex", i)
		}
		if e := r.OnExitCodes; e != nil {
			if e.ContainerName != nil && *e.ContainerName != container {
				t.Errorf("rule %d: container %q is not the pod's (%q)", i, *e.ContainerName, container)
			}
			if len(e.Values) == 0 || !slices.IsSorted(e.Values) || len(slices.Compact(slices.Clone(e.Values))) != len(e.Values) ||
				e.Values[0] < 1 || e.Values[len(e.Values)-1] > 255 {
				t.Errorf("rule %d: exit codes %v: want 1–255, sorted, none twice", i, e.Values)
			}
		}
		for _, c := range r.OnPodConditions {
			if c.Status != corev1.ConditionTrue {
				t.Errorf("rule %d: condition %s with status %q, want True", i, c.Type, c.Status)
			}
		}
	}
	for _, tc := range []struct {
		f    podFailure
		want batchv1.PodFailurePolicyAction
		why  string
	}{
		{podFailure{exit: cli.ExitUsage}, batchv1.PodFailurePolicyActionFailIndex, "bad input fails the same way again: the index fails at once"},
		{podFailure{exit: cli.ExitFailure}, batchv1.PodFailurePolicyActionCount, "rows or a provider failed: retried, counted"},
		{podFailure{exit: cli.ExitInterrupted}, batchv1.PodFailurePolicyActionCount, "stopped by a signal the cluster did not mark: retried (it resumes), counted"},
		{podFailure{exit: 128 + 15}, batchv1.PodFailurePolicyActionCount, "SIGTERM before the handler: retried, counted"},
		{podFailure{exit: 128 + 9}, batchv1.PodFailurePolicyActionCount, "an OOM kill: retried, counted"},
		{podFailure{exit: cli.ExitInterrupted, disrupted: true}, batchv1.PodFailurePolicyActionIgnore, "evicted: replaced without spending a retry"},
		{podFailure{exit: 128 + 9, disrupted: true}, batchv1.PodFailurePolicyActionIgnore, "evicted and killed after the grace period: replaced without spending a retry"},
	} {
		if got := failureAction(j, container, tc.f); got != tc.want {
			t.Errorf("a pod that ends %+v: %s, want %s (%s)", tc.f, got, tc.want, tc.why)
		}
	}
}

// backoff is the retries an index has.
func backoff(j *batchv1.Job) int32 {
	if j.Spec.BackoffLimitPerIndex == nil {
		return 0
	}
	return *j.Spec.BackoffLimitPerIndex
}

func checkMergeJob(t *testing.T, objs []object, fromStore bool) {
	merges := jobs(byComponent(objs, "merge"))
	if len(merges) != 1 || len(merges[0].Spec.Template.Spec.Containers) != 1 {
		t.Fatalf("want one merge Job with one container")
	}
	want := []string{"impactbench", "merge", "all"}
	if fromStore {
		want = append(want, "--from-store")
	}
	c := merges[0].Spec.Template.Spec.Containers[0]
	if !slices.Equal(c.Command, want) {
		t.Errorf("merge command %q, want %q", c.Command, want)
	}
	_, w := studyJob(t, objs)
	if fromStore && envValue(c, config.EnvStore) != envValue(w, config.EnvStore) {
		t.Errorf("the merge reads another store than the workers wrote")
	}
	if fromStore {
		for _, e := range c.Env {
			if strings.HasSuffix(e.Name, "_API_KEY") {
				t.Errorf("merge --from-store calls no model; it is given %s", e.Name)
			}
		}
	}
}

// checkPods: one image for every impactbench container; every command
// works in a mounted volume that holds the project copied from the image;
// every volume is declared and every claim is in the file.
func checkPods(t *testing.T, objs []object, projectDir string) {
	claims := map[string]bool{}
	for _, o := range objs {
		if o.pvc != nil {
			claims[o.meta.GetName()] = true
		}
	}
	images := map[string]bool{}
	for _, j := range jobs(objs) {
		pod := j.Spec.Template.Spec
		vols := map[string]corev1.Volume{}
		for _, v := range pod.Volumes {
			vols[v.Name] = v
			if v.PersistentVolumeClaim != nil && !claims[v.PersistentVolumeClaim.ClaimName] {
				t.Errorf("job %s: claim %s is not in the file", j.Name, v.PersistentVolumeClaim.ClaimName)
			}
		}
		for _, c := range slices.Concat(pod.InitContainers, pod.Containers) {
			images[c.Image] = true
			mounts := map[string]bool{}
			for _, m := range c.VolumeMounts {
				if _, ok := vols[m.Name]; !ok {
					t.Errorf("job %s, container %s: volume %s not declared", j.Name, c.Name, m.Name)
				}
				mounts[m.MountPath] = true
			}
			if c.Command[0] == "cp" {
				if want := []string{"cp", "-R", projectDir + "/.", "/project/"}; !slices.Equal(c.Command, want) || !mounts["/project"] {
					t.Errorf("job %s: the project copy %q, want %q onto a mounted /project", j.Name, c.Command, want)
				}
				continue
			}
			if !mounts[c.WorkingDir] {
				t.Errorf("job %s, container %s works in %q, which is not a mounted volume", j.Name, c.Name, c.WorkingDir)
			}
		}
	}
	if len(images) != 1 {
		t.Errorf("want one image for every step, got %v", images)
	}
}

// checkSecrets: no credential in a literal value; the store URL is one
// impactbench accepts (no credentials in it).
func checkSecrets(t *testing.T, objs []object, fromStore bool) {
	for _, j := range jobs(objs) {
		for _, c := range slices.Concat(j.Spec.Template.Spec.InitContainers, j.Spec.Template.Spec.Containers) {
			for _, e := range c.Env {
				secret := strings.Contains(e.Name, "KEY") || strings.Contains(e.Name, "SECRET") || strings.Contains(e.Name, "TOKEN")
				if secret && (e.Value != "" || e.ValueFrom == nil || e.ValueFrom.SecretKeyRef == nil) {
					t.Errorf("job %s: %s must come from a Secret", j.Name, e.Name)
				}
			}
		}
	}
	_, w := studyJob(t, objs)
	store := envValue(w, config.EnvStore)
	if fromStore != (store != "") {
		t.Errorf("%s=%q in an example where the object store is %v", config.EnvStore, store, fromStore)
	}
	if p := config.StoreURLProblem(store); p != "" {
		t.Errorf("%s=%s: %s", config.EnvStore, store, p)
	}
	if rb := envValue(w, config.EnvRateBackend); rb != "" {
		if p := config.RateBackendProblem(rb); p != "" {
			t.Errorf("%s=%s: %s", config.EnvRateBackend, rb, p)
		}
		u, _ := url.Parse(rb)
		if !serviceExists(objs, u.Hostname(), u.Port()) {
			t.Errorf("%s=%s names no Service of the file", config.EnvRateBackend, rb)
		}
	}
}

func serviceExists(objs []object, name, port string) bool {
	for _, o := range objs {
		if o.svc == nil || o.meta.GetName() != name {
			continue
		}
		for _, p := range o.svc.Spec.Ports {
			if strconv.Itoa(int(p.Port)) == port {
				return true
			}
		}
	}
	return false
}

// The reduced study the examples run: as many indexes and workers at once
// as a test can afford, the manifest's shape otherwise.
const smallCompletions, smallParallelism = 4, 2
