package site

import (
	"bytes"
	"embed"
	"html/template"

	"github.com/impactbench/impactbench/internal/layout"
)

//go:embed ui/index.html ui/app.js ui/style.css
var uiFS embed.FS

// CSP is the page's Content-Security-Policy: scripts and styles only from
// the site's own files (no inline script, no eval), no connections, no
// frames, images only as data: URLs. 'self' is the site's origin on a
// static host and the site's directory tree from file://.
const CSP = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
	"connect-src 'none'; font-src 'none'; object-src 'none'; frame-src 'none'; base-uri 'none'; form-action 'none'"

var indexTmpl = template.Must(template.ParseFS(uiFS, "ui/index.html"))

// staticFiles are the page, its script and style; the page loads the
// core chunk at coreURL.
func staticFiles(coreURL string) ([]File, error) {
	var out []File
	urls := map[string]string{}
	for _, name := range []string{layout.SiteScript, layout.SiteStyle} {
		data, err := uiFS.ReadFile("ui/" + name)
		if err != nil {
			return nil, err
		}
		f := File{Path: layout.SiteFile(name), Data: data}
		urls[name] = versioned(f)
		out = append(out, f)
	}
	var page bytes.Buffer
	err := indexTmpl.Execute(&page, struct{ CSP, CSS, App, Core string }{CSP, urls[layout.SiteStyle], urls[layout.SiteScript], coreURL})
	if err != nil {
		return nil, err
	}
	return append(out, File{Path: layout.SiteIndex, Data: page.Bytes()}), nil
}
