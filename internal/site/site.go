// Package site builds the static study site that `impactbench publish
// --site` writes beside the website's data: index.html, its script and
// style (embedded in the binary: no CDN, fonts or analytics), and the
// study as JavaScript data files under site/data/ that the page loads with
// <script src> — the one way a page opened from file:// can load local
// data (Chromium refuses fetch() there) — so the same directory works from
// a disk and from any static host. The front page loads only the
// leaderboard's data (site/data/core.js); a benchmark's metrics and
// scenario rows, a model pair's differences and each benchmark × model's
// transcripts are separate files, loaded when a page needs them.
//
// Every number comes from study.json (study.Result) and results.json's
// calibration fields; the site only lays them out, except the tie-group
// letters (from tied_with) and the grades, which are shown only when the
// score's whole interval lies in one grade. Model text reaches the page as
// JSON data inside those files and is written into the page as text only
// (textContent; a strict Content-Security-Policy forbids anything else).
package site

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/impactbench/impactbench/internal/artifacts"
	"github.com/impactbench/impactbench/internal/layout"
	"github.com/impactbench/impactbench/internal/study"
)

// File is one file of the site: Path is relative to the publish directory
// (slash-separated).
type File struct {
	Path string
	Data []byte
}

// Builder builds the site of one study. Publish streams each conversation
// it publishes to Add, collects a model's transcript files with
// ModelFiles once all of that model's runs are read (so at most one
// model's transcripts are in memory), and the rest with Finish.
type Builder struct {
	s      *study.Study
	res    *study.Result
	calib  []calibModel
	nodeIx map[string]int // node id → index in res.Nodes
	// coreIx is a node's index in core.js's nodes: every node but the
	// metrics' (core.js lists the metrics on their own).
	coreIx map[string]int
	model  map[string]int // model id → index in res.Models
	// files are the data files built so far: chunk name → versioned URL.
	files  map[string]string
	tr     map[trKey]map[string]*trRec
	cells  []map[string][]cellData // by node index, then age
	warns  []string                // the cells' warnings, once each
	warnIx map[string]int
}

type trKey struct {
	bench string
	model int
}

// New prepares the site of s scored as res, reading the calibration
// fields of each benchmark's results.json (a damaged results.json is an
// *artifacts.FileError).
func New(s *study.Study, res *study.Result) (*Builder, error) {
	b := &Builder{s: s, res: res, nodeIx: map[string]int{}, model: map[string]int{}, files: map[string]string{}, tr: map[trKey]map[string]*trRec{}}
	b.coreIx = map[string]int{}
	for i, n := range res.Nodes {
		b.nodeIx[n.ID] = i
		if n.Kind != study.KindMetric {
			b.coreIx[n.ID] = len(b.coreIx)
		}
	}
	for i, m := range res.Models {
		b.model[m.ID] = i
	}
	var err error
	if b.calib, err = readCalibration(s, b.model); err != nil {
		return nil, err
	}
	return b, nil
}

// dataFile encodes a data chunk as a script that stores it under its
// name, and records the chunk's versioned URL (its content hash as a query
// string, so a browser never mixes a cached chunk with a newer page).
// json.Marshal escapes <, >, &, U+2028 and U+2029, and every string is a
// JSON string literal: no data can end the value or the script.
func (b *Builder) dataFile(name string, v any) (File, error) {
	data, err := json.Marshal(v)
	if err != nil {
		return File{}, fmt.Errorf("site: %s: %w", name, err)
	}
	key, err := json.Marshal(name)
	if err != nil {
		return File{}, err
	}
	var sb strings.Builder
	sb.Grow(len(data) + 64)
	sb.WriteString("(window.IB_DATA=window.IB_DATA||{})[")
	sb.Write(key)
	sb.WriteString("]=")
	sb.Write(data)
	sb.WriteString(";\n")
	f := File{Path: layout.SiteChunk(name), Data: []byte(sb.String())}
	b.files[name] = hash(f.Data)
	return f, nil
}

// versioned is f's URL relative to index.html with its content hash.
func versioned(f File) string { return f.Path + "?v=" + hash(f.Data) }

func hash(data []byte) string {
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:6])
}

// Finish returns every file but the transcripts: the data chunks, then
// the page, its script and its style (the page names the core chunk's
// version, so it comes last).
func (b *Builder) Finish() ([]File, error) {
	var out []File
	for name, v := range b.benchChunks() {
		f, err := b.dataFile(name, v)
		if err != nil {
			return nil, err
		}
		out = append(out, f)
	}
	pairs, err := b.pairChunks()
	if err != nil {
		return nil, err
	}
	out = append(out, pairs...)
	f, err := b.dataFile(layout.SiteCalibChunk, calibChunk{Models: b.calib})
	if err != nil {
		return nil, err
	}
	out = append(out, f)
	if f, err = b.dataFile(layout.SiteCoreChunk, b.core()); err != nil {
		return nil, err
	}
	out = append(out, f)
	core := versioned(f)
	static, err := staticFiles(core)
	if err != nil {
		return nil, err
	}
	out = append(out, static...)
	slices.SortFunc(out, func(a, b File) int { return strings.Compare(a.Path, b.Path) })
	return out, nil
}

// Turns are a transcript's messages for a data chunk: [role, content].
func turns(tr []artifacts.Turn) [][2]string {
	out := make([][2]string, len(tr))
	for i, t := range tr {
		out[i] = [2]string{t.Role, t.Content}
	}
	return out
}
