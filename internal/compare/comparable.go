package compare

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/impactbench/impactbench/internal/config"
	"github.com/impactbench/impactbench/internal/layout"
)

// Component names, as spelled in run_manifest.json; they are also the
// names accepted in Comparable's allow list.
const (
	CompMetrics   = "metrics"
	CompJudges    = "judges"
	CompSettings  = "settings"
	CompPrompts   = "prompts"
	CompScenarios = "scenarios"
	CompUserModel = "user_model"
	CompGenerator = "generator"
	CompTargets   = "targets"
)

// BlockingComponents define what a pass rate means: which behaviours
// (metrics), who decides pass or fail and how (judges, prompts), under which
// rules (settings: turns, samples, landmarks, seed, …). Two runs that differ
// in one of them measure different things, so comparing their numbers is
// refused unless the caller explicitly allows that component.
func BlockingComponents() []string {
	return []string{CompMetrics, CompJudges, CompSettings, CompPrompts}
}

// NotedComponents are the conditions a validation run varies on purpose
// (who writes the scenarios, who plays the user, which targets ran): a
// difference is exactly what is being tested, so it is reported, never
// blocking.
func NotedComponents() []string {
	return []string{CompScenarios, CompUserModel, CompGenerator, CompTargets}
}

// Comparability is the outcome of checking two runs against each other.
type Comparability struct {
	Comparable bool `json:"comparable"`
	// Checked is "manifest" when both runs recorded run_manifest.json, or
	// "metrics_only" when only benchmark.yaml's metric definitions could be
	// compared.
	Checked     string       `json:"checked"`
	Differences []Difference `json:"differences"`
	Notes       []string     `json:"notes"`
}

// Checked values.
const (
	CheckedManifest    = "manifest"
	CheckedMetricsOnly = "metrics_only"
)

// Difference is one component that differs between the runs.
type Difference struct {
	Component string `json:"component"`
	Detail    string `json:"detail"`
	// Blocking: the component changes what is measured.
	Blocking bool `json:"blocking"`
	// Allowed: blocking, but the caller accepted the difference.
	Allowed bool `json:"allowed"`
}

// String is the one-line form used by Comparable and the table.
func (d Difference) String() string {
	switch {
	case d.Blocking && d.Allowed:
		return fmt.Sprintf("%s: %s (allowed)", d.Component, d.Detail)
	case d.Blocking:
		return fmt.Sprintf("%s: %s (blocks comparison)", d.Component, d.Detail)
	default:
		return fmt.Sprintf("%s: %s (noted; does not block)", d.Component, d.Detail)
	}
}

// Lines lists the differences, then the notes, one line each.
func (c Comparability) Lines() []string {
	out := make([]string, 0, len(c.Differences)+len(c.Notes))
	for _, d := range c.Differences {
		out = append(out, d.String())
	}
	return append(out, c.Notes...)
}

// Comparable reports whether a and b measure the same thing, so that their
// numbers may be compared, and lists every difference found (blocking or
// not) plus what could not be checked. A difference in a blocking component
// makes the runs not comparable unless the component's name is in allow.
func Comparable(a, b Run, allow []string) (ok bool, diffs []string) {
	c := CheckComparable(a, b, allow)
	return c.Comparable, c.Lines()
}

// CheckComparable is Comparable with the structured result.
func CheckComparable(a, b Run, allow []string) Comparability {
	a, b = distinctLabels(a, b)
	c := Comparability{Checked: CheckedManifest}
	known := append(BlockingComponents(), NotedComponents()...)
	for _, name := range allow {
		if !slices.Contains(known, name) {
			c.Notes = append(c.Notes, fmt.Sprintf("allow: unknown component %q ignored; known: %s", name, strings.Join(known, ", ")))
		}
	}

	// benchmark.yaml's definitions are checked even when both manifests
	// agree: the file may have been edited after the run, and it is what
	// this package reads metric types from.
	yamlDiffs := metricDiffs(a, b)

	if a.Manifest == nil || b.Manifest == nil {
		c.Checked = CheckedMetricsOnly
		if len(yamlDiffs) > 0 {
			c.addDifference(CompMetrics, strings.Join(yamlDiffs, "; "), allow)
		}
		missing := []string{}
		if a.Manifest == nil {
			missing = append(missing, a.Label)
		}
		if b.Manifest == nil {
			missing = append(missing, b.Label)
		}
		c.Notes = append(c.Notes, fmt.Sprintf(
			"no %s in %s: only metric ids, types and definitions (benchmark.yaml) were compared; judges, prompts, settings, scenarios, user model and generator could not be checked",
			layout.RunManifestFile, strings.Join(missing, " and ")))
	} else {
		c.compareManifests(a, b, yamlDiffs, allow)
	}

	c.Comparable = true
	for _, d := range c.Differences {
		if d.Blocking && !d.Allowed {
			c.Comparable = false
		}
	}
	return c
}

// addDifference records a difference in component comp; it blocks when
// the component is a blocking one, and is allowed when allow names it.
func (c *Comparability) addDifference(comp, detail string, allow []string) {
	blocking := slices.Contains(BlockingComponents(), comp)
	c.Differences = append(c.Differences, Difference{
		Component: comp, Detail: detail, Blocking: blocking,
		Allowed: blocking && slices.Contains(allow, comp),
	})
}

// compareManifests records the differences between a's and b's manifests,
// component by component, then their targets; yamlDiffs (benchmark.yaml's
// differences) stand for the metrics' detail.
func (c *Comparability) compareManifests(a, b Run, yamlDiffs, allow []string) {
	ma, mb := *a.Manifest, *b.Manifest
	for _, p := range []struct{ comp, a, b string }{
		{CompMetrics, ma.Metrics, mb.Metrics},
		{CompJudges, ma.Judges, mb.Judges},
		{CompSettings, ma.Settings, mb.Settings},
		{CompPrompts, ma.Prompts, mb.Prompts},
		{CompScenarios, ma.Scenarios, mb.Scenarios},
		{CompUserModel, ma.UserModel, mb.UserModel},
		{CompGenerator, ma.Generator, mb.Generator},
	} {
		detail := ""
		switch {
		case p.a == "" || p.b == "":
			if p.a != p.b {
				c.Notes = append(c.Notes, fmt.Sprintf("%s: not recorded in one manifest, could not be checked", p.comp))
			}
			if p.comp == CompMetrics && len(yamlDiffs) > 0 {
				detail = strings.Join(yamlDiffs, "; ")
			}
		case p.a != p.b:
			detail = fmt.Sprintf("%s %s, %s %s", a.Label, short(p.a), b.Label, short(p.b))
			if p.comp == CompMetrics && len(yamlDiffs) > 0 {
				detail = strings.Join(yamlDiffs, "; ")
			}
		case p.comp == CompMetrics && len(yamlDiffs) > 0:
			detail = "benchmark.yaml differs although the manifests agree (edited after the run?): " + strings.Join(yamlDiffs, "; ")
		}
		if detail == "" {
			continue
		}
		c.addDifference(p.comp, detail+whatDiffers(p.comp), allow)
	}
	if d := targetDiffs(a.Label, ma.Targets, b.Label, mb.Targets); d != "" {
		c.addDifference(CompTargets, d, allow)
	}
}

// whatDiffers says, for the components where it is not obvious, what a
// difference in comp means for the comparison ("" for the others).
func whatDiffers(comp string) string {
	switch comp {
	case CompGenerator:
		return "; a different model wrote the scenarios (the generator-bias check)"
	case CompUserModel:
		return "; a different model played the simulated user (the user-model-bias check)"
	case CompScenarios:
		return "; scenario ids are matched by name, but their texts differ"
	case CompJudges:
		return "; a different judge panel decided pass or fail"
	}
	return ""
}

// distinctLabels keeps messages unambiguous when both runs got the same
// label (two directories with the same base name).
func distinctLabels(a, b Run) (Run, Run) {
	if a.Label == b.Label {
		a.Label, b.Label = a.Label+" (A)", b.Label+" (B)"
	}
	return a, b
}

// short abbreviates a component hash for display.
func short(h string) string {
	h = strings.TrimPrefix(h, "sha256:")
	if len(h) > 12 {
		return h[:12]
	}
	return h
}

// metricDiffs compares what defines each metric for the judge and for the
// tracks: its id, type and definition. Names and examples are left to the
// manifest hash (a renamed metric still measures the same behaviour).
func metricDiffs(ra, rb Run) []string {
	a, b := ra.Metrics, rb.Metrics
	byID := func(ms []config.Metric) map[string]config.Metric {
		out := make(map[string]config.Metric, len(ms))
		for _, m := range ms {
			out[m.ID] = m
		}
		return out
	}
	ma, mb := byID(a), byID(b)
	var onlyA, onlyB, out []string
	for _, m := range a {
		o, ok := mb[m.ID]
		switch {
		case !ok:
			onlyA = append(onlyA, m.ID)
		case m.Type != o.Type:
			out = append(out, fmt.Sprintf("metric %s is %s in %s, %s in %s", m.ID, m.Type, ra.Label, o.Type, rb.Label))
		case strings.TrimSpace(m.Definition) != strings.TrimSpace(o.Definition):
			out = append(out, fmt.Sprintf("metric %s definition differs", m.ID))
		}
	}
	for _, m := range b {
		if _, ok := ma[m.ID]; !ok {
			onlyB = append(onlyB, m.ID)
		}
	}
	if len(onlyA) > 0 {
		out = append(out, fmt.Sprintf("metrics only in %s: %s", ra.Label, strings.Join(onlyA, ", ")))
	}
	if len(onlyB) > 0 {
		out = append(out, fmt.Sprintf("metrics only in %s: %s", rb.Label, strings.Join(onlyB, ", ")))
	}
	return out
}

// targetDiffs describes target configurations that differ; "" when none.
func targetDiffs(la string, a map[string]string, lb string, b map[string]string) string {
	var changed, onlyA, onlyB []string
	for id, h := range a {
		hb, ok := b[id]
		switch {
		case !ok:
			onlyA = append(onlyA, id)
		case h != hb:
			changed = append(changed, id)
		}
	}
	for id := range b {
		if _, ok := a[id]; !ok {
			onlyB = append(onlyB, id)
		}
	}
	var parts []string
	for _, p := range []struct {
		what string
		ids  []string
	}{{"configuration differs for", changed}, {"only in " + la + ":", onlyA}, {"only in " + lb + ":", onlyB}} {
		if len(p.ids) > 0 {
			sort.Strings(p.ids)
			parts = append(parts, p.what+" "+strings.Join(p.ids, ", "))
		}
	}
	return strings.Join(parts, "; ")
}
