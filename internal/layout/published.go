package layout

import (
	"path"
	"slices"
	"strings"

	"github.com/impactbench/impactbench/internal/ids"
)

// What `impactbench publish` writes under its output directory: the
// study's data as the ImpactBench website loads it (data/<file>, one
// scenarios/<benchmark>/<model>/<scenario>.json per published
// conversation), the static study site (index.html and site/…), and the
// manifest of what it wrote. Every path here is relative to the output
// directory and '/'-separated.
const (
	PublishManifestFile   = ".impactbench-publish.json"
	PublishedDataDir      = "data"
	PublishedScenariosDir = "scenarios"
	SiteIndex             = "index.html"
	SiteDir               = "site"
)

// The website's data files, under PublishedDataDir (upstream's names:
// the website reads them).
const (
	PublishedTaxonomyFile      = "taxonomy.json"
	PublishedModelsFile        = "models.json"
	PublishedBenchmarkDataFile = "benchmark-data.json"
	PublishedScenarioIndexFile = "scenario-index.json"
	PublishedMetricDetailsFile = "metric-details.json"
	PublishedNutritionFile     = "nutrition.json"
	PublishedUncertaintyFile   = "uncertainty.json"
)

// PublishedDataFiles are the data files, in the order publish writes them.
var PublishedDataFiles = []string{PublishedTaxonomyFile, PublishedModelsFile, PublishedBenchmarkDataFile, PublishedScenarioIndexFile,
	PublishedMetricDetailsFile, PublishedNutritionFile, PublishedUncertaintyFile}

// The study site's own files: its script and style under SiteDir, and the
// chunks of its data under site/data (each a script named <chunk>.js).
const (
	SiteScript      = "app.js"
	SiteStyle       = "style.css"
	SiteCoreChunk   = "core"
	SiteCalibChunk  = "calib"
	siteDataDir     = "data"
	siteChunkExt    = ".js"
	siteBenchChunks = "bench"
	sitePairChunks  = "pairs"
	siteTrChunks    = "tr"
)

// PublishedData is data/<name>.
func PublishedData(name string) string { return path.Join(PublishedDataDir, name) }

// PublishedScenario is the file of one published conversation:
// scenarios/<benchmark>/<model>/<scenario>.json.
func PublishedScenario(bench, model, scenarioID string) string {
	return path.Join(PublishedScenariosDir, bench, model, scenarioID+".json")
}

// SiteFile is site/<name> (the script, the style).
func SiteFile(name string) string { return path.Join(SiteDir, name) }

// SiteChunk is the file of a site data chunk: site/data/<chunk>.js.
func SiteChunk(chunk string) string { return path.Join(SiteDir, siteDataDir, chunk+siteChunkExt) }

// SiteBenchChunk names the chunk of a benchmark's metrics.
func SiteBenchChunk(slug string) string { return siteBenchChunks + "/" + slug }

// SitePairChunk names the chunk of a model pair's differences.
func SitePairChunk(a, b string) string { return sitePairChunks + "/" + a + "/" + b }

// SiteTranscriptChunk names the chunk of a benchmark's transcripts of one
// model.
func SiteTranscriptChunk(bench, model string) string { return siteTrChunks + "/" + bench + "/" + model }

// MaxPublishedSegment bounds one name in a published path: the usual
// limit of a file name, with room for the temp name of its atomic write.
const MaxPublishedSegment = 200

// IsPublished reports whether rel is a path publish writes (the manifest
// apart): a data file, a scenario file, or a file of the study site, every
// <…> an id (internal/ids) and every name at most MaxPublishedSegment
// bytes. It is the whole of what publish may write, compare or remove.
func IsPublished(rel string) bool {
	p := strings.Split(rel, "/")
	for _, s := range p {
		if len(s) > MaxPublishedSegment {
			return false
		}
	}
	switch {
	case len(p) == 1:
		return p[0] == SiteIndex
	case p[0] == PublishedDataDir:
		return len(p) == 2 && slices.Contains(PublishedDataFiles, p[1])
	case p[0] == PublishedScenariosDir:
		return len(p) == 4 && isID(p[1]) && isID(p[2]) && hasIDBefore(p[3], ".json")
	case p[0] == SiteDir:
		return isSiteFile(p[1:])
	}
	return false
}

// isSiteFile reports whether p (a path under site/, split) is one of the
// site's files.
func isSiteFile(p []string) bool {
	if len(p) == 1 {
		return p[0] == SiteScript || p[0] == SiteStyle
	}
	if p[0] != siteDataDir {
		return false
	}
	switch {
	case len(p) == 2:
		return p[1] == SiteCoreChunk+siteChunkExt || p[1] == SiteCalibChunk+siteChunkExt
	case len(p) == 3 && p[1] == siteBenchChunks:
		return hasIDBefore(p[2], siteChunkExt)
	case len(p) == 4 && (p[1] == sitePairChunks || p[1] == siteTrChunks):
		return isID(p[2]) && hasIDBefore(p[3], siteChunkExt)
	}
	return false
}

// PublishedSubdirs are the directories publish writes under (where it
// looks for the temp files of an interrupted publish).
var PublishedSubdirs = []string{PublishedDataDir, PublishedScenariosDir, SiteDir}

func isID(s string) bool { return ids.Problem(s, ids.MaxScenario) == "" }

func hasIDBefore(name, ext string) bool {
	id, ok := strings.CutSuffix(name, ext)
	return ok && isID(id)
}
