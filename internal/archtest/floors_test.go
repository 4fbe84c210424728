package archtest

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// self is this package: it holds only tests, nothing imports it, and it is
// on no floor.
const self = "internal/archtest"

// floor is one layer of the tree: its packages import only packages on their
// own floor or below (Go forbids cycles within a floor).
type floor struct {
	name     string
	packages []string
}

// floors, lowest first. ARCHITECTURE.md's "Floors" table lists the same
// packages on the same floors; TestArchitectureDocListsTheFloors keeps the
// two equal.
var floors = []floor{
	{"ground", []string{
		"internal/fault", "internal/fsx", "internal/ids", "internal/sanitize", "internal/stats",
		"internal/schedule", "internal/layout",
		"internal/hostile", "internal/redisserver", "internal/browsertest", "internal/callstore/s3test", "internal/racemode",
	}},
	{"settings", []string{"internal/config", "internal/labels", "internal/cluster"}},
	{"models", []string{
		"internal/llm", "internal/llm/anthropic", "internal/llm/gemini", "internal/llm/openai",
		"internal/llm/offline", "internal/llm/provider", "internal/llm/ratelimit",
		"internal/llm/ratelimit/redisrate", "internal/llm/ratelimit/fakeprovider",
		"internal/llm/batch", "internal/llm/batch/fakebatch", "internal/llm/llmtest",
	}},
	{"formats", []string{
		"internal/artifacts", "internal/callstore", "internal/prompts", "internal/results", "internal/progress",
	}},
	{"stage logic and records", []string{
		"internal/stages", "internal/stages/userreply", "internal/phase", "internal/plan",
		"internal/summary", "internal/calibrate", "internal/study", "internal/study/studytest",
		"internal/human",
	}},
	{"readers", []string{
		"internal/report", "internal/compare", "internal/export", "internal/publish",
		"internal/site", "internal/viewer", "internal/adaptive",
	}},
	{"environment", []string{"internal/clientset", "internal/work"}},
	{"stage runners", []string{
		"internal/generate", "internal/simulate", "internal/evaluate", "internal/merge",
		"internal/validation", "internal/scenarioset", "internal/until", "internal/adaptrun", "internal/aggregate",
	}},
	{"orchestration", []string{"internal/runner"}},
	{"commands", []string{
		"internal/cli", "internal/benchcli", "internal/benchharness", "internal/examples",
		"cmd/impactbench", "cmd/impactbench-bench",
	}},
}

// floorIndex maps each package to its floor's index.
func floorIndex() map[string]int {
	m := map[string]int{}
	for i, f := range floors {
		for _, p := range f.packages {
			m[p] = i
		}
	}
	return m
}

func TestFloorsNameEachPackageOnce(t *testing.T) {
	seen := map[string]string{}
	for _, f := range floors {
		for _, p := range f.packages {
			if prev, dup := seen[p]; dup {
				t.Errorf("%s is on floors %q and %q", p, prev, f.name)
			}
			seen[p] = f.name
		}
	}
}

// docRow is a row of ARCHITECTURE.md's floor table: "| 3 | formats | `internal/x`, … |".
var docRow = regexp.MustCompile(`^\|\s*(\d+)\s*\|\s*([^|]+?)\s*\|(.*)\|\s*$`)

var docPackage = regexp.MustCompile("`((?:internal|cmd)/[a-z0-9_/-]+)`")

// docFloors reads the floor table under "## Floors" in ARCHITECTURE.md.
func docFloors(t *testing.T) map[int]floor {
	t.Helper()
	f, err := os.Open(filepath.Join(moduleRoot(t), "ARCHITECTURE.md"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := map[int]floor{}
	in := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		ln := sc.Text()
		if strings.HasPrefix(ln, "## ") {
			in = strings.TrimSpace(ln[3:]) == "Floors"
			continue
		}
		m := docRow.FindStringSubmatch(ln)
		if !in || m == nil {
			continue
		}
		n, _ := strconv.Atoi(m[1])
		fl := floor{name: m[2]}
		for _, pm := range docPackage.FindAllStringSubmatch(m[3], -1) {
			fl.packages = append(fl.packages, pm[1])
		}
		out[n] = fl
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func TestArchitectureDocListsTheFloors(t *testing.T) {
	doc := docFloors(t)
	if len(doc) != len(floors) {
		t.Errorf("ARCHITECTURE.md lists %d floors under \"## Floors\", the test %d", len(doc), len(floors))
	}
	for i, f := range floors {
		d, ok := doc[i]
		if !ok {
			t.Errorf("ARCHITECTURE.md has no row for floor %d (%s)", i, f.name)
			continue
		}
		if d.name != f.name {
			t.Errorf("floor %d is %q in ARCHITECTURE.md, %q in the test", i, d.name, f.name)
		}
		want, got := slices.Sorted(slices.Values(f.packages)), slices.Sorted(slices.Values(d.packages))
		if !slices.Equal(want, got) {
			t.Errorf("floor %d (%s): ARCHITECTURE.md lists %s, the test %s", i, f.name, fmt.Sprint(got), fmt.Sprint(want))
		}
	}
}
