package compare

import (
	"slices"
	"strings"
	"testing"

	"github.com/impactbench/impactbench/internal/config"
)

func TestComparable(t *testing.T) {
	type edit func(a, b *Run)
	manifests := func(f func(m *Manifest)) edit {
		return func(a, b *Run) {
			a.Manifest, b.Manifest = testManifest(), testManifest()
			f(b.Manifest)
		}
	}
	noManifestB := func(f func(ms []config.Metric)) edit {
		return func(a, b *Run) {
			a.Manifest = testManifest()
			f(b.Metrics)
		}
	}
	tests := []struct {
		name  string
		edit  edit
		allow []string
		ok    bool
		// want are substrings expected in the lines, in order.
		want    []string
		checked string
	}{
		{"identical manifests", manifests(func(*Manifest) {}), nil, true, nil, CheckedManifest},
		{"user model differs", manifests(func(m *Manifest) { m.UserModel = "other-user" }), nil, true,
			[]string{"user_model: A user-hash, B other-user; a different model played the simulated user", "does not block"}, CheckedManifest},
		{"generator and scenarios differ", manifests(func(m *Manifest) { m.Generator, m.Scenarios = "g2", "s2" }), nil, true,
			[]string{"scenarios:", "texts differ", "generator:", "generator-bias"}, CheckedManifest},
		{"target config differs", manifests(func(m *Manifest) { m.Targets = map[string]string{"alpha": "changed", "beta": "tb", "zeta": "tz"} }), nil, true,
			[]string{"targets: configuration differs for alpha; only in A: gamma; only in B: zeta (noted; does not block)"}, CheckedManifest},
		{"judges differ", manifests(func(m *Manifest) { m.Judges = "j2" }), nil, false,
			[]string{"judges: A judges-hash, B j2", "blocks comparison"}, CheckedManifest},
		{"judges differ, allowed", manifests(func(m *Manifest) { m.Judges = "j2" }), []string{CompJudges}, true,
			[]string{"judges:", "(allowed)"}, CheckedManifest},
		{"settings differ, judges allowed", manifests(func(m *Manifest) { m.Settings = "x2" }), []string{CompJudges}, false,
			[]string{"settings:", "blocks comparison"}, CheckedManifest},
		{"prompts differ", manifests(func(m *Manifest) { m.Prompts = "p2" }), nil, false,
			[]string{"prompts:", "blocks comparison"}, CheckedManifest},
		{"metric hash differs", manifests(func(m *Manifest) { m.Metrics = "m2" }), nil, false,
			[]string{"metrics: A metrics-hash, B m2", "blocks comparison"}, CheckedManifest},
		{"component not recorded", manifests(func(m *Manifest) { m.Prompts = "" }), nil, true,
			[]string{"prompts: not recorded in one manifest"}, CheckedManifest},
		{"unknown allow name", manifests(func(m *Manifest) { m.Judges = "j2" }), []string{"judge"}, false,
			[]string{"judges:", "blocks comparison", `allow: unknown component "judge" ignored`}, CheckedManifest},
		{"manifests agree, benchmark.yaml edited", func(a, b *Run) {
			a.Manifest, b.Manifest = testManifest(), testManifest()
			b.Metrics[1].Definition = "Something else."
		}, nil, false, []string{"metrics: benchmark.yaml differs although the manifests agree", "m02 definition differs"}, CheckedManifest},

		{"no manifest, same metrics", noManifestB(func([]config.Metric) {}), nil, true,
			[]string{"no run_manifest.json in B: only metric ids, types and definitions", "could not be checked"}, CheckedMetricsOnly},
		{"no manifest, whitespace only", noManifestB(func(ms []config.Metric) { ms[0].Definition += "\n" }), nil, true,
			[]string{"could not be checked"}, CheckedMetricsOnly},
		{"no manifest, renamed metric", noManifestB(func(ms []config.Metric) { ms[0].Name = "Other name" }), nil, true,
			[]string{"could not be checked"}, CheckedMetricsOnly},
		{"no manifest, definition differs", noManifestB(func(ms []config.Metric) { ms[1].Definition = "Other." }), nil, false,
			[]string{"metrics: metric m02 definition differs (blocks comparison)"}, CheckedMetricsOnly},
		{"no manifest, type differs", noManifestB(func(ms []config.Metric) { ms[1].Type = config.Positive }), nil, false,
			[]string{"metric m02 is negative in A, positive in B"}, CheckedMetricsOnly},
		{"no manifest, metric ids differ", noManifestB(func(ms []config.Metric) { ms[1].ID = "m03" }), nil, false,
			[]string{"metrics only in A: m02; metrics only in B: m03"}, CheckedMetricsOnly},
		{"no manifest, metrics differ but allowed", noManifestB(func(ms []config.Metric) { ms[1].ID = "m03" }), []string{CompMetrics}, true,
			[]string{"(allowed)"}, CheckedMetricsOnly},
		{"neither manifest", func(a, b *Run) {}, nil, true,
			[]string{"no run_manifest.json in A and B"}, CheckedMetricsOnly},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a, b := closeSpec().run("A"), closeSpec().run("B")
			tc.edit(&a, &b)
			ok, lines := Comparable(a, b, tc.allow)
			joined := strings.Join(lines, "\n")
			if ok != tc.ok {
				t.Errorf("ok = %v, want %v; lines:\n%s", ok, tc.ok, joined)
			}
			if len(tc.want) == 0 && len(lines) > 0 {
				t.Errorf("want no lines, got:\n%s", joined)
			}
			rest := joined
			for _, w := range tc.want {
				i := strings.Index(rest, w)
				if i < 0 {
					t.Errorf("lines lack %q (in order):\n%s", w, joined)
					break
				}
				rest = rest[i+len(w):]
			}
			if c := CheckComparable(a, b, tc.allow); c.Checked != tc.checked {
				t.Errorf("Checked = %q, want %q", c.Checked, tc.checked)
			}
		})
	}
}

// The noted components must never block, whatever differs in them, and
// every blocking component must block on its own.
func TestComparableComponentRoles(t *testing.T) {
	set := func(m *Manifest, comp, v string) {
		switch comp {
		case CompMetrics:
			m.Metrics = v
		case CompJudges:
			m.Judges = v
		case CompSettings:
			m.Settings = v
		case CompPrompts:
			m.Prompts = v
		case CompScenarios:
			m.Scenarios = v
		case CompUserModel:
			m.UserModel = v
		case CompGenerator:
			m.Generator = v
		case CompTargets:
			m.Targets = map[string]string{"alpha": v}
		default:
			t.Fatalf("unknown component %s", comp)
		}
	}
	for _, comp := range append(BlockingComponents(), NotedComponents()...) {
		a, b := closeSpec().run("A"), closeSpec().run("B")
		a.Manifest, b.Manifest = testManifest(), testManifest()
		set(b.Manifest, comp, "changed")
		c := CheckComparable(a, b, nil)
		blocking := !slices.Contains(NotedComponents(), comp)
		if c.Comparable == blocking || len(c.Differences) != 1 || c.Differences[0].Component != comp || c.Differences[0].Blocking != blocking {
			t.Errorf("%s changed: %+v, want one difference, blocking=%v", comp, c, blocking)
		}
	}
}
