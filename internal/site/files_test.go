package site_test

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/impactbench/impactbench/internal/layout"
	"github.com/impactbench/impactbench/internal/site"
)

var chunkRE = regexp.MustCompile(`^\(window\.IB_DATA=window\.IB_DATA\|\|\{\}\)\[("[^"]+")\]=(.*);\n$`)

func sum(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:6])
}

// TestSiteFiles checks the published site's files without a browser: the
// page has the strict CSP and no inline script; the page, script and style
// name nothing outside the site and use no API that parses HTML or makes
// requests; every data file is one JSON value stored under its own name,
// with no character that could end a script; and every URL the page and
// the core chunk name carries the hash of the file it names (so a browser
// never mixes a cached file with a newer page).
func TestSiteFiles(t *testing.T) {
	_, out := siteStudy(t)
	read := func(rel string) []byte {
		t.Helper()
		b, err := os.ReadFile(filepath.Join(out, filepath.FromSlash(rel)))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	page := string(read(layout.SiteIndex))
	if !strings.Contains(page, `<meta http-equiv="Content-Security-Policy" content="`+strings.ReplaceAll(site.CSP, "'", "&#39;")+`">`) {
		t.Errorf("the page lacks the CSP %q:\n%s", site.CSP, page)
	}
	for _, want := range []string{"script-src 'self'", "default-src 'none'", "connect-src 'none'"} {
		if !strings.Contains(site.CSP, want) || strings.Contains(site.CSP, "unsafe") {
			t.Errorf("CSP %q: want %q and nothing unsafe", site.CSP, want)
		}
	}
	if regexp.MustCompile(`<script(?:\s[^>]*)?>\s*[^<\s]`).MatchString(page) || strings.Count(page, "<script src=") != 2 {
		t.Errorf("the page has inline script or not exactly two script files:\n%s", page)
	}
	refs := regexp.MustCompile(`(?:src|href)="(site/[^"?]+)\?v=([0-9a-f]{12})"`).FindAllStringSubmatch(page, -1)
	if len(refs) != 3 {
		t.Errorf("the page names %d versioned files, want 3 (style, core, app)", len(refs))
	}
	for _, r := range refs {
		if got := sum(read(r[1])); got != r[2] {
			t.Errorf("the page names %s?v=%s; its hash is %s", r[1], r[2], got)
		}
	}
	forbidden := regexp.MustCompile(`https?:|//[a-z0-9-]+\.[a-z]|innerHTML|outerHTML|insertAdjacentHTML|document\.write|\beval\(|new Function|fetch\(|XMLHttpRequest|WebSocket|sendBeacon|@import|url\(`)
	for _, f := range []string{layout.SiteIndex, "site/app.js", "site/style.css"} {
		if m := forbidden.FindString(string(read(f))); m != "" {
			t.Errorf("%s uses %q", f, m)
		}
	}

	var core struct {
		Files map[string]string `json:"files"`
	}
	n := 0
	err := filepath.WalkDir(filepath.Join(out, "site", "data"), func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		n++
		rel, _ := filepath.Rel(filepath.Join(out, "site", "data"), path)
		name := strings.TrimSuffix(filepath.ToSlash(rel), ".js")
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		m := chunkRE.FindSubmatch(b)
		if m == nil {
			t.Errorf("%s is not one stored JSON value", rel)
			return nil
		}
		var key string
		if err := json.Unmarshal(m[1], &key); err != nil || key != name {
			t.Errorf("%s stores its value under %s", rel, m[1])
		}
		if !json.Valid(m[2]) {
			t.Errorf("%s: not JSON", rel)
		}
		if strings.ContainsAny(string(m[2]), "<>&\u2028\u2029") {
			t.Errorf("%s holds a character that could end a script", rel)
		}
		if name == "core" {
			if err := json.Unmarshal(m[2], &core); err != nil {
				t.Fatal(err)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(core.Files) != n-1 {
		t.Errorf("core names %d data files; there are %d besides it", len(core.Files), n-1)
	}
	for name, h := range core.Files {
		if got := sum(read("site/data/" + name + ".js")); got != h {
			t.Errorf("core names %s at version %s; its hash is %s", name, h, got)
		}
	}
	// The payload is in the data, escaped.
	if tr := string(read("site/data/tr/alpha/model-a.js")); !strings.Contains(tr, `\u003cimg src=x onerror=\"window.__xss=1\"\u003e`) {
		t.Errorf("the transcript chunk does not carry the escaped payload")
	}
}
