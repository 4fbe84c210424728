// Package examples holds no code: its tests check and run the cluster
// examples under docs/examples (a Kubernetes Indexed Job on a shared
// volume and one on an object store, a Slurm job array with its merge) and
// the promises of docs/workers.md.
//
// Why a package of its own rather than beside the end-to-end tests in
// cmd/impactbench: the Kubernetes manifests are decoded into the API's own
// types (k8s.io/api), a large test-only dependency that no other test
// needs, and these tests read files under docs/ rather than drive the
// binary with fake providers. They build the real binary once (TestMain)
// and run it exactly as the examples say, with the offline model, so they
// touch no network beyond an S3 API and a Redis started on loopback.
package examples
