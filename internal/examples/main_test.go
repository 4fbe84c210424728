package examples

import (
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The binary under test and the projects every example starts from, made
// once by TestMain.
var (
	binDir string // holds `impactbench`, first on every example's PATH
	// imageDir is the project a user builds into the image (Dockerfile):
	// `impactbench init`'s offline project with its scenarios generated.
	imageDir string
	// initDir is the same project before gen-scenarios (Slurm's submit.sh
	// generates them itself).
	initDir string
	// refDir is imageDir after one unsharded `impactbench run all`: the
	// outputs every merge must reproduce byte for byte.
	refDir string
)

const cmdTimeout = 2 * time.Minute

func TestMain(m *testing.M) {
	root, err := os.MkdirTemp("", "impactbench-examples-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "examples:", err)
		os.Exit(1)
	}
	err = setup(root)
	code := 1
	if err != nil {
		fmt.Fprintln(os.Stderr, "examples: setup:", err)
	} else {
		code = m.Run()
	}
	os.RemoveAll(root)
	os.Exit(code)
}

// setup builds the binary and the three projects.
func setup(root string) error {
	binDir = filepath.Join(root, "bin")
	build := exec.Command(goTool(), "build", "-o", filepath.Join(binDir, "impactbench"), "../../cmd/impactbench")
	if out, err := build.CombinedOutput(); err != nil {
		return fmt.Errorf("building impactbench: %v\n%s", err, out)
	}
	home := filepath.Join(root, "home")
	if err := os.MkdirAll(home, 0o755); err != nil {
		return err
	}
	if _, err := runIn(root, home, nil, "impactbench", "init", "init"); err != nil {
		return err
	}
	initDir = filepath.Join(root, "init")
	imageDir, refDir = filepath.Join(root, "image"), filepath.Join(root, "ref")
	if err := os.CopyFS(imageDir, os.DirFS(initDir)); err != nil {
		return err
	}
	if _, err := runIn(imageDir, home, nil, "impactbench", "gen-scenarios", "example"); err != nil {
		return err
	}
	// The image holds no call store: a worker starts from the project alone.
	if err := os.RemoveAll(filepath.Join(imageDir, ".cache")); err != nil {
		return err
	}
	if err := os.CopyFS(refDir, os.DirFS(imageDir)); err != nil {
		return err
	}
	_, err := runIn(refDir, home, nil, "impactbench", "run", "all", "--no-report")
	return err
}

// runIn runs name with args in dir, PATH starting with binDir, HOME home
// and the extra variables env; a non-zero exit is an error holding the
// output.
func runIn(dir, home string, env []string, name string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), cmdTimeout)
	defer cancel()
	if name == "impactbench" {
		name = filepath.Join(binDir, name)
	}
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	cmd.Env = append(baseEnv(home), env...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return out.String(), fmt.Errorf("%s %s in %s: %w\n%s", name, strings.Join(args, " "), dir, err, out.String())
	}
	return out.String(), nil
}

// baseEnv is what every process gets from the machine: nothing of the
// test's own environment beyond the system's PATH.
func baseEnv(home string) []string {
	return []string{
		"PATH=" + binDir + string(os.PathListSeparator) + "/usr/local/bin:/usr/bin:/bin",
		"HOME=" + home,
		"TMPDIR=" + home,
		"LANG=C.UTF-8",
		"TERM=dumb",
		"NO_COLOR=1",
	}
}

// goTool finds the go command that runs these tests: go test puts its
// own GOROOT/bin first on the test's PATH.
func goTool() string {
	if p, err := exec.LookPath("go"); err == nil {
		return p
	}
	return "go"
}

// repoFile is a file of the repository, read.
func repoFile(t *testing.T, rel string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", filepath.FromSlash(rel)))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// sameAsReference fails unless every file the unsharded run wrote under
// benchmarks/ is in dir with the same bytes.
func sameAsReference(t *testing.T, dir string) {
	t.Helper()
	ref := filepath.Join(refDir, "benchmarks")
	n := 0
	err := filepath.WalkDir(ref, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(refDir, path)
		want, _ := os.ReadFile(path)
		got, err := os.ReadFile(filepath.Join(dir, rel))
		switch {
		case err != nil:
			t.Errorf("%s: %v", rel, err)
		case !bytes.Equal(got, want):
			t.Errorf("%s differs from one unsharded run's (%d vs %d bytes)", rel, len(got), len(want))
		}
		n++
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n < 8 {
		t.Fatalf("the reference run wrote only %d files", n)
	}
}
