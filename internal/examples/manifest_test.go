package examples

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8syaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

// componentLabel orders an example's steps (kubectl apply -l …).
const componentLabel = "app.kubernetes.io/component"

// object is one document of a manifest, decoded into the API's own type.
type object struct {
	kind string
	meta metav1.Object
	job  *batchv1.Job
	pvc  *corev1.PersistentVolumeClaim
	svc  *corev1.Service
	dep  *appsv1.Deployment
}

// decodeObject decodes one document strictly: an unknown or duplicate
// field, or a kind the examples do not use, is an error.
func decodeObject(doc []byte) (object, error) {
	var tm metav1.TypeMeta
	if err := yaml.Unmarshal(doc, &tm); err != nil {
		return object{}, err
	}
	o := object{kind: tm.APIVersion + "/" + tm.Kind}
	var into any
	switch o.kind {
	case "batch/v1/Job":
		o.job = &batchv1.Job{}
		into, o.meta = o.job, o.job
	case "v1/PersistentVolumeClaim":
		o.pvc = &corev1.PersistentVolumeClaim{}
		into, o.meta = o.pvc, o.pvc
	case "v1/Service":
		o.svc = &corev1.Service{}
		into, o.meta = o.svc, o.svc
	case "apps/v1/Deployment":
		o.dep = &appsv1.Deployment{}
		into, o.meta = o.dep, o.dep
	default:
		return object{}, fmt.Errorf("kind %q: not one the examples use", o.kind)
	}
	if err := yaml.UnmarshalStrict(doc, into); err != nil {
		return object{}, fmt.Errorf("%s: %w", o.kind, err)
	}
	return o, nil
}

// exampleManifest reads an example's manifest and decodes its documents.
func exampleManifest(t *testing.T, file string) ([]byte, []object) {
	t.Helper()
	data := repoFile(t, file)
	objs, err := decodeManifest(data)
	if err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	return data, objs
}

// decodeManifest decodes every document of a multi-document manifest.
func decodeManifest(data []byte) ([]object, error) {
	r := k8syaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	var objs []object
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return objs, nil
		}
		if err != nil {
			return nil, err
		}
		if len(bytes.TrimSpace(stripComments(doc))) == 0 {
			continue
		}
		o, err := decodeObject(doc)
		if err != nil {
			return nil, fmt.Errorf("document %d: %w", len(objs)+1, err)
		}
		objs = append(objs, o)
	}
}

func stripComments(doc []byte) []byte {
	var b bytes.Buffer
	for ln := range strings.Lines(string(doc)) {
		if !strings.HasPrefix(strings.TrimSpace(ln), "#") {
			b.WriteString(ln)
		}
	}
	return b.Bytes()
}

// TestStrictDecoding: the decoder the manifests go through refuses a
// misspelt field, a duplicate field and a wrong type, so a manifest that
// decodes is one the API server would take field for field.
func TestStrictDecoding(t *testing.T) {
	for _, tc := range []struct{ name, doc string }{
		{"unknown field", "apiVersion: batch/v1\nkind: Job\nspec:\n  completionsMode: Indexed\n"},
		{"duplicate field", "apiVersion: batch/v1\nkind: Job\nspec:\n  parallelism: 1\n  parallelism: 2\n"},
		{"wrong type", "apiVersion: batch/v1\nkind: Job\nspec:\n  parallelism: many\n"},
		{"unused kind", "apiVersion: v1\nkind: Pod\n"},
	} {
		if _, err := decodeManifest([]byte(tc.doc)); err == nil {
			t.Errorf("%s: decoded without error", tc.name)
		}
	}
	if _, err := decodeManifest([]byte("apiVersion: batch/v1\nkind: Job\nspec:\n  parallelism: 2\n")); err != nil {
		t.Errorf("a good document: %v", err)
	}
}

// byComponent is the objects whose component label is c.
func byComponent(objs []object, c string) []object {
	var out []object
	for _, o := range objs {
		if o.meta.GetLabels()[componentLabel] == c {
			out = append(out, o)
		}
	}
	return out
}

// jobs is every Job among objs.
func jobs(objs []object) []*batchv1.Job {
	var out []*batchv1.Job
	for _, o := range objs {
		if o.job != nil {
			out = append(out, o.job)
		}
	}
	return out
}

// envValue is container c's literal value of name ("" when absent).
func envValue(c corev1.Container, name string) string {
	for _, e := range c.Env {
		if e.Name == name {
			return e.Value
		}
	}
	return ""
}
