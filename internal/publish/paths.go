package publish

import (
	"slices"
	"strings"

	"github.com/impactbench/impactbench/internal/ids"
)

// maxSegment bounds one name in a published path: the usual limit of a
// file name, with room for the temp name of its atomic write.
const maxSegment = 200

// generated reports whether rel (slash-separated, under the output
// directory) is a path publish writes: data/<one of its files>,
// scenarios/<benchmark>/<model>/<scenario>.json, or a file of the study
// site (index.html, site/app.js, site/style.css, site/data/{core,calib}.js,
// site/data/bench/<benchmark>.js, site/data/pairs/<model>/<model>.js,
// site/data/tr/<benchmark>/<model>.js), every <…> an id (internal/ids) and
// every name at most maxSegment bytes. It is the whole of what publish
// may write, compare or remove.
func generated(rel string) bool {
	p := strings.Split(rel, "/")
	for _, s := range p {
		if len(s) > maxSegment {
			return false
		}
	}
	switch {
	case len(p) == 2 && p[0] == "data":
		return slices.Contains([]string{TaxonomyFile, ModelsFile, BenchmarkDataFile, ScenarioIndexFile, MetricDetailsFile, NutritionFile, UncertaintyFile}, p[1])
	case len(p) == 4 && p[0] == "scenarios":
		return isID(p[1]) && isID(p[2]) && hasIDBefore(p[3], ".json")
	case len(p) == 1:
		return p[0] == "index.html"
	case len(p) == 2 && p[0] == "site":
		return p[1] == "app.js" || p[1] == "style.css"
	case len(p) == 3 && p[0] == "site" && p[1] == "data":
		return p[2] == "core.js" || p[2] == "calib.js"
	case len(p) == 4 && p[0] == "site" && p[1] == "data" && p[2] == "bench":
		return hasIDBefore(p[3], ".js")
	case len(p) == 5 && p[0] == "site" && p[1] == "data" && (p[2] == "pairs" || p[2] == "tr"):
		return isID(p[3]) && hasIDBefore(p[4], ".js")
	}
	return false
}

func isID(s string) bool { return ids.Problem(s, ids.MaxScenario) == "" }

func hasIDBefore(name, ext string) bool {
	id, ok := strings.CutSuffix(name, ext)
	return ok && isID(id)
}

// quote writes a path from a file for a message.
func quote(s string) string { return ids.Quote(s) }
