package report

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"embed"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"html/template"
	"io"
	"strings"
	"time"
)

//go:embed assets/chart.umd.min.js
var chartJS string

//go:embed ui/app.js ui/style.css ui/page.html
var uiFS embed.FS

var (
	appJS    = mustRead("ui/app.js")
	styleCSS = mustRead("ui/style.css")
	pageTmpl = template.Must(template.New("page").Parse(mustRead("ui/page.html")))
)

func mustRead(name string) string {
	b, err := uiFS.ReadFile(name)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// inlineChartJS is the vendored bundle without its sourceMappingURL
// comment: the .map is not shipped, and DevTools would try to fetch it.
var inlineChartJS = stripSourceMap(chartJS)

func stripSourceMap(s string) string {
	if i := strings.LastIndex(s, "\n//# sourceMappingURL="); i >= 0 {
		return s[:i+1]
	}
	return s
}

type pageData struct {
	Title   string
	CSP     string
	CSS     template.CSS
	Data    template.JS
	Index   template.JS
	ChartJS template.JS
	App     template.JS
	// SafetyStops: the note under the leaderboard (absent when empty).
	SafetyStops []safetyStop
}

// Build renders in as one self-contained HTML document to w.
func Build(ctx context.Context, in Input, w io.Writer) error {
	return build(ctx, &in, w, time.Now())
}

// build is Build; it drops parts of *in it no longer needs as it goes.
func build(ctx context.Context, in *Input, w io.Writer, now time.Time) error {
	sum := buildSummary(in, now)
	in.Results = nil // the summary holds what the page shows of them
	st, err := buildStore(ctx, in, sum.Metrics, sum.Demographic.Axes)
	if err != nil {
		return fmt.Errorf("report: %w", err)
	}
	st.releaseRows()
	if in.scenarioFile != "" {
		in.Scenarios = nil
	}
	data, err := islandJSON(sum)
	if err != nil {
		return fmt.Errorf("report: summary: %w", err)
	}
	index, err := islandJSON(st.Index)
	if err != nil {
		return fmt.Errorf("report: index: %w", err)
	}
	// Memory peaks here: what only the summary and the index needed goes
	// before the page and the chunks are written. Rows of file-backed runs
	// went above (the chunks read them back from the files), as did the
	// scenario rows when the chunks stream scenarios.json again.
	title, stops := sum.Title, sum.SafetyStops
	st.Index, sum = convIndex{}, summary{}
	bw := bufio.NewWriterSize(w, 1<<20)
	err = pageTmpl.Execute(bw, pageData{
		Title: title,
		CSP:   pageCSP,
		CSS:   template.CSS(styleCSS),
		// The islands are json.Marshal output: '<', '>', '&', U+2028 and
		// U+2029 are \u-escaped, so no data can close the script element.
		Data:    template.JS(data),
		Index:   template.JS(index),
		ChartJS: template.JS(inlineChartJS),
		App:     template.JS(appJS),

		SafetyStops: stops,
	})
	if err != nil {
		return fmt.Errorf("report: %w", err)
	}
	// Chunks come after the page script so the page renders while the
	// browser is still parsing them; the script waits for DOMContentLoaded
	// before reading one. Base64 text cannot contain markup.
	if err := st.writeChunks(ctx, bw); err != nil {
		return fmt.Errorf("report: %w", err)
	}
	if _, err := bw.WriteString("</body>\n</html>\n"); err != nil {
		return fmt.Errorf("report: %w", err)
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("report: %w", err)
	}
	return ctx.Err()
}

// islandJSON marshals v for a <script type="application/json"> island.
// json.Marshal's HTML escaping is the security boundary; the extra check
// makes a future change of encoder fail loudly instead of silently.
func islandJSON(v any) (string, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return "", err
	}
	s := string(b)
	if strings.ContainsAny(s, "<>&\u2028\u2029") {
		return "", fmt.Errorf("unescaped markup character in JSON island")
	}
	return s, nil
}

func writeChunk(w *bufio.Writer, prefix string, i int, gz []byte) {
	// application/octet-stream is not a script type the browser runs; the
	// element is only a container the page reads with textContent.
	fmt.Fprintf(w, "<script type=\"application/octet-stream\" id=\"%s%d\">", prefix, i)
	enc := base64.NewEncoder(base64.StdEncoding, w)
	_, _ = enc.Write(gz) // bufio errors are sticky and surface at Flush
	_ = enc.Close()
	w.WriteString("</script>\n")
}

// pageCSP is the policy every report this build writes carries.
var pageCSP = contentSecurityPolicy(inlineChartJS, appJS)

// PageCSP returns the Content-Security-Policy of the reports this build
// writes: a server that sends a report sends it as its header too, so only
// this build's own scripts run in the page whatever the file holds.
func PageCSP() string { return pageCSP }

// ownHead is how every report this build writes begins, up to and
// including its policy tag, byte for byte (the page template rendered).
var ownHead = func() []byte {
	var b bytes.Buffer
	if err := pageTmpl.Execute(&b, pageData{CSP: pageCSP}); err != nil {
		panic(err)
	}
	page := b.Bytes()
	tag := []byte(`<meta http-equiv="Content-Security-Policy" content="`)
	i := bytes.Index(page, tag)
	if i < 0 || bytes.Contains(page[:i], []byte("<script")) {
		panic("report: the page template must begin with its policy tag")
	}
	j := bytes.IndexByte(page[i:], '>')
	return page[:i+j+1]
}()

// IsOwn reports whether head, a file's first bytes (len(OwnHead()) are
// enough), is how a report this build wrote begins: the same policy tag
// with the same script hashes before anything else. A report from another
// version, or a file made to look like a report, is not one.
func IsOwn(head []byte) bool { return bytes.HasPrefix(head, ownHead) }

// OwnHeadLen is how many bytes of a file IsOwn looks at.
func OwnHeadLen() int { return len(ownHead) }

// contentSecurityPolicy allows exactly the page's two inline scripts (by
// hash) and inline styles, and no network loads of any kind: a report
// opened from disk can neither phone home nor run an injected script.
func contentSecurityPolicy(scripts ...string) string {
	var hashes []string
	for _, s := range scripts {
		sum := sha256.Sum256([]byte(s))
		hashes = append(hashes, "'sha256-"+base64.StdEncoding.EncodeToString(sum[:])+"'")
	}
	return "default-src 'none'; script-src " + strings.Join(hashes, " ") +
		"; style-src 'unsafe-inline'; img-src data:; base-uri 'none'; form-action 'none'"
}
