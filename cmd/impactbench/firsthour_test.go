package main

import (
	"context"
	"encoding/json"
	"os/exec"
	"strings"
	"testing"
)

// TestInitNextStepWorksWithoutPATH: init's "Next:" lines, run in a shell
// whose PATH has no impactbench, run the example.
func TestInitNextStepWorksWithoutPATH(t *testing.T) {
	p := newProject(t, "")
	if _, err := exec.LookPath("sh"); err != nil {
		t.Skip("no sh")
	}
	r := p.mustRun("init", "demo")
	next, ok := strings.CutPrefix(r.stdout, "Next:\n")
	if !ok {
		t.Fatalf("init printed no next step:\n%s", r)
	}
	var script []string
	for _, l := range strings.Split(strings.TrimSpace(next), "\n") {
		if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "#") {
			script = append(script, l)
		}
	}
	if strings.HasPrefix(script[len(script)-1], "impactbench ") {
		t.Fatalf("init says to run impactbench by name although it is not on PATH:\n%s", r.stdout)
	}
	ctx, cancel := context.WithTimeout(context.Background(), cmdTimeout)
	defer cancel()
	sh := exec.CommandContext(ctx, "sh", "-e", "-c", strings.Join(script, "\n"))
	sh.Dir = p.dir
	sh.Env = append(p.environ(), "PATH=/usr/bin:/bin") // the environ's PATH comes first; this one wins
	out, err := sh.CombinedOutput()
	if err != nil {
		t.Fatalf("the next step %q failed: %v\n%s", script, err, out)
	}
	if !exists(p.path("demo", "benchmarks", "example", "results.json")) {
		t.Errorf("the next step did not produce results.json:\n%s", out)
	}
}

// TestVersionIsTheBuildInfo: version reports what the go command stamped
// into the binary (module version, vcs.revision, vcs.modified), as
// `go version -m` reads it.
func TestVersionIsTheBuildInfo(t *testing.T) {
	out, err := exec.Command(goTool(), "version", "-m", ibBin).Output()
	if err != nil {
		t.Fatalf("go version -m: %v", err)
	}
	want := map[string]string{}
	for _, l := range strings.Split(string(out), "\n") {
		f := strings.Fields(l)
		switch {
		case len(f) >= 3 && f[0] == "mod":
			want["mod"] = f[2]
		case len(f) >= 2 && f[0] == "build" && strings.HasPrefix(f[1], "vcs."):
			k, v, _ := strings.Cut(f[1], "=")
			want[k] = v
		}
	}
	p := newProject(t, "")
	var v struct {
		Version  string `json:"version"`
		Revision string `json:"revision"`
		Modified bool   `json:"modified"`
	}
	r := p.mustRun("version", "--json")
	if err := json.Unmarshal([]byte(r.stdout), &v); err != nil {
		t.Fatalf("version --json: %v\n%s", err, r)
	}
	if mod := want["mod"]; mod != "(devel)" && v.Version != mod {
		t.Errorf("version %q, build info says %q", v.Version, mod)
	}
	if v.Revision != want["vcs.revision"] || v.Modified != (want["vcs.modified"] == "true") {
		t.Errorf("revision %q modified %v; build info: %v", v.Revision, v.Modified, want)
	}
	text := p.mustRun("version").stdout
	if rev := want["vcs.revision"]; rev != "" && !strings.Contains(text, rev[:12]) {
		t.Errorf("version prints %q without the revision %s", text, rev)
	}
	if want["mod"] == "(devel)" && want["vcs.revision"] == "" && strings.TrimSpace(text) != "impactbench devel" {
		t.Errorf("version without build information: %q", text)
	}
}
