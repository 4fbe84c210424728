package config

import (
	"bytes"
	"errors"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// An untouched upstream-written file must come back byte for byte: same
// quoting, same folding at 80 columns, same missing final newline.
func TestSaveMetricsUnchangedIsByteIdentical(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := copyFile(t, "testdata/humanebench/benchmark.yaml", dir, "benchmark.yaml")
	orig, _ := os.ReadFile(path)
	b, err := LoadBenchmark(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := SaveMetrics(dir, b.Metrics); err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(path)
	if !bytes.Equal(got, orig) {
		t.Errorf("rewrite changed the file:\n%s", cmp.Diff(string(orig), string(got)))
	}
}

func TestSaveMetricsKeepsCommentsAndUnknownKeys(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := copyFile(t, "testdata/commented/benchmark.yaml", dir, "benchmark.yaml")
	orig, _ := os.ReadFile(path)
	b, err := LoadBenchmark(path)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(humanebenchMetrics(), b.Metrics); diff != "" {
		t.Fatalf("commented fixture metrics (-want +got):\n%s", diff)
	}

	metrics := humanebenchMetrics()
	metrics[1].Definition = strings.Repeat("A long definition that must fold across several lines and still read back exactly. ", 4) + "End."
	metrics[2].Extra = nil // replaced list: m03 loses mattersBecause
	metrics = append(metrics, Metric{
		ID: "m04", Name: "yes", Type: Negative,
		Definition: "Line one: with a colon\n  indented line two\n",
		Examples:   []string{"", " leading space", "# not a comment", "it's", "null", "0755", "tab\there", "ends\n\n"},
		Extra: []KV{
			{"mattersBecause", "Because."},
			{"source", map[string]any{"metric_id": "m01", "benchmark": "humanebench"}},
			{"weight", 0.25},
			{"count", 3},
			{"flags", []any{true, nil, "x", []any{}}},
		},
	})
	if err := SaveMetrics(path, metrics); err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(path)
	golden(t, "save/commented.golden.yaml", got)

	// Everything outside the list is byte-identical.
	const head = "metrics:  # generated\n"
	const tail = "\n# Notes after the list (kept).\n"
	for _, marker := range []string{head, tail} {
		if !bytes.Contains(orig, []byte(marker)) || !bytes.Contains(got, []byte(marker)) {
			t.Fatalf("marker %q missing", marker)
		}
	}
	before := func(b []byte) []byte { return b[:bytes.Index(b, []byte(head))+len(head)] }
	after := func(b []byte) []byte { return b[bytes.Index(b, []byte(tail)):] }
	if !bytes.Equal(before(orig), before(got)) {
		t.Errorf("text before the list changed:\n%s", cmp.Diff(string(before(orig)), string(before(got))))
	}
	if !bytes.Equal(after(orig), after(got)) {
		t.Errorf("text after the list changed:\n%s", cmp.Diff(string(after(orig)), string(after(got))))
	}

	b2, err := LoadBenchmark(path)
	if err != nil {
		t.Fatal(err)
	}
	// Read back in decoded types: ints as int, maps as map[string]any.
	metrics[3].Extra[4] = KV{"flags", []any{true, nil, "x", []any{}}}
	if diff := cmp.Diff(metrics, b2.Metrics, cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("metrics read back (-saved +loaded):\n%s", diff)
	}
	wantExtra := []KV{
		{"owner", "research-team"},
		{"review", map[string]any{"status": "draft", "reviewers": []any{"ana", "bo"}}},
	}
	if diff := cmp.Diff(wantExtra, b2.Extra); diff != "" {
		t.Errorf("unknown top-level keys (-want +got):\n%s", diff)
	}
}

func TestSaveMetricsLayouts(t *testing.T) {
	one := []Metric{{ID: "m01", Name: "New", Type: Positive, Definition: "Names the risk.", Examples: []string{"a", "b"}}}
	tests := []struct {
		name    string
		metrics []Metric
	}{
		{"append", one},     // no metrics key, no final newline, trailing comment
		{"empty-flow", one}, // metrics: [] # comment, followed by another key
		{"null-end", one},   // metrics: with nothing, at end of file
		{"crlf", one},       // CRLF line endings are kept
		{"clear", nil},      // saving no metrics writes metrics: [] and keeps the key's comment
		{"indented", one},   // indented list, --- and ... markers
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			path := copyFile(t, filepath.Join("testdata", "save", tt.name+".in.yaml"), dir, "benchmark.yaml")
			if err := SaveMetrics(path, tt.metrics); err != nil {
				t.Fatal(err)
			}
			got, _ := os.ReadFile(path)
			golden(t, filepath.Join("save", tt.name+".golden.yaml"), got)
			b, err := LoadBenchmark(path)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.metrics, b.Metrics, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("metrics read back (-want +got):\n%s", diff)
			}
		})
	}
}

// Strings that tempt an emitter into writing something that reads back
// differently (or not at all).
func TestSaveMetricsStringsRoundTrip(t *testing.T) {
	strs := []string{
		"plain", "", " ", " lead", "trail ", "two  spaces", "yes", "No", "ON", "off", "y", "null", "Null", "~",
		"true", "FALSE", "123", "0755", "0x1F", "1e3", "1_000", ".5", "-1", "+1", ".inf", ".nan", "2024-01-01",
		"12:30:45", "a: b", "a:b", "key:", "# c", "a #c", "C# and F#", "- dash", "-dash", "? q", ": colon",
		"[list]", "{map}", "a, b", "| pipe", "> fold", "!tag", "&anchor", "*alias", "%percent", "@at", "`tick`",
		"'single'", `"double"`, `it's "both"`, "back\\slash", "---", "...", "<<", "=",
		"multi\nline", "multi\nline\n", "ends\n\n", "\nleading newline", "  indented\nlines", "a\n  b\n", "trailing \nspace",
		"tab\tinside", "\ttab first", "cr\r\nlf", "bell\a", "nul\x00", "del\x7f", "nbsp\u00a0inside", "\u00a0nbsp first",
		"line\u2028sep", "bom\ufeff", "emoji 😀 — é", "中文 テキスト", "\u200bzero width",
		strings.Repeat("long words wrap ", 40), strings.Repeat("x", 500), strings.Repeat("a ", 60) + ": b",
		strings.Repeat("word ", 30) + "#hash", strings.Repeat("word ", 30) + "- dash", strings.Repeat("spaced  ", 30),
		strings.Repeat("w ", 45) + "'quoted' " + strings.Repeat("w ", 30),
	}
	for _, s := range strs {
		t.Run(strings.ReplaceAll(s, "/", "_"), func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			path := filepath.Join(dir, "benchmark.yaml")
			if err := os.WriteFile(path, []byte("name: n\ndescription: d\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			m := []Metric{{
				ID: "m01", Name: "name " + s, Type: Positive, Definition: "def " + s,
				Examples: []string{s, s + s},
				Extra:    []KV{{"note", s}, {"nested", map[string]any{"k": s, s + "key": []any{s}}}},
			}}
			if s == "" {
				m[0].Extra[1] = KV{"nested", map[string]any{"k": s}} // an empty key is not useful
			}
			if err := SaveMetrics(path, m); err != nil {
				t.Fatal(err)
			}
			b, err := LoadBenchmark(path)
			if err != nil {
				data, _ := os.ReadFile(path)
				t.Fatalf("%v\n%s", err, data)
			}
			if diff := cmp.Diff(m, b.Metrics); diff != "" {
				data, _ := os.ReadFile(path)
				t.Errorf("read back (-want +got):\n%s\nfile:\n%s", diff, data)
			}
		})
	}
}

func TestSaveMetricsNumbers(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "benchmark.yaml")
	if err := os.WriteFile(path, []byte("name: n\ndescription: d\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// JSON-born values (what gen_metrics hands over) and Go-typed values.
	extra := []KV{
		{"f", 0.1}, {"whole", 3.0}, {"big", 1e21}, {"tiny", 1e-7}, {"neg", -2.5},
		{"inf", math.Inf(1)}, {"i64", int64(math.MaxInt64)}, {"u64", uint64(math.MaxUint64)},
		{"f32", float32(1.5)}, {"strs", []string{"a", "b"}}, {"ptr", new(int)},
		{"struct", struct {
			A int    `json:"a"`
			B string `json:"b"`
		}{1, "x"}},
	}
	if err := SaveMetrics(path, []Metric{{ID: "m", Name: "n", Type: Negative, Definition: "d", Extra: extra}}); err != nil {
		t.Fatal(err)
	}
	b, err := LoadBenchmark(path)
	if err != nil {
		t.Fatal(err)
	}
	want := []KV{
		{"f", 0.1}, {"whole", 3}, {"big", 1e21}, {"tiny", 1e-7}, {"neg", -2.5},
		{"inf", math.Inf(1)}, {"i64", math.MaxInt64}, {"u64", uint64(math.MaxUint64)},
		{"f32", 1.5}, {"strs", []any{"a", "b"}}, {"ptr", 0},
		{"struct", map[string]any{"a": 1, "b": "x"}},
	}
	if diff := cmp.Diff(want, b.Metrics[0].Extra); diff != "" {
		data, _ := os.ReadFile(path)
		t.Errorf("extra read back (-want +got):\n%s\n%s", diff, data)
	}
}

func TestSaveMetricsRejectsInvalidAndLeavesFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := copyFile(t, "testdata/humanebench/benchmark.yaml", dir, "benchmark.yaml")
	orig, _ := os.ReadFile(path)
	metrics := humanebenchMetrics()
	metrics[2].Type = "neutral"
	err := SaveMetrics(dir, metrics)
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("error = %v, want *Error", err)
	}
	want := path + `: metrics[2].type: metric "m03": unknown type "neutral"; allowed values: positive, negative`
	if err.Error() != want {
		t.Errorf("error = %q\nwant    %q", err.Error(), want)
	}
	got, _ := os.ReadFile(path)
	if !bytes.Equal(got, orig) {
		t.Errorf("file changed although the metrics were rejected")
	}
}

func TestSaveMetricsFileHandling(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := copyFile(t, "testdata/humanebench/benchmark.yaml", dir, "benchmark.yaml")
	if err := os.Chmod(path, 0o640); err != nil {
		t.Fatal(err)
	}
	if err := SaveMetrics(path, humanebenchMetrics()[:1]); err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if runtime.GOOS != "windows" && st.Mode().Perm() != 0o640 {
		t.Errorf("mode = %v, want 0640", st.Mode().Perm())
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("directory holds %d entries after save (temp file left behind?)", len(entries))
	}

	if runtime.GOOS == "windows" {
		return
	}
	t.Run("symlink is followed, not replaced", func(t *testing.T) {
		link := filepath.Join(t.TempDir(), "benchmark.yaml")
		if err := os.Symlink(path, link); err != nil {
			t.Skip(err)
		}
		if err := SaveMetrics(link, humanebenchMetrics()); err != nil {
			t.Fatal(err)
		}
		if fi, _ := os.Lstat(link); fi.Mode()&os.ModeSymlink == 0 {
			t.Errorf("the link was replaced by a regular file")
		}
		b, err := LoadBenchmark(path)
		if err != nil || len(b.Metrics) != 3 {
			t.Errorf("target not updated: %v, %d metrics", err, len(b.Metrics))
		}
	})

	t.Run("missing file", func(t *testing.T) {
		err := SaveMetrics(filepath.Join(t.TempDir(), "benchmark.yaml"), nil)
		if !errors.Is(err, os.ErrNotExist) {
			t.Errorf("error = %v, want not-exist", err)
		}
	})
}

func TestBackupFileNeverOverwrites(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "benchmark.yaml")
	at := time.Date(2026, 1, 2, 15, 4, 5, 0, time.FixedZone("CET", 3600))
	var got []string
	for i, content := range []string{"name: one\n", "name: two\n", "name: three\n"} {
		if err := os.WriteFile(path, []byte(content), 0o640); err != nil {
			t.Fatal(err)
		}
		bak, err := BackupFile(dir, at) // the directory resolves to its benchmark.yaml
		if err != nil {
			t.Fatalf("backup %d: %v", i, err)
		}
		if b, _ := os.ReadFile(bak); string(b) != content {
			t.Errorf("backup %d holds %q, want %q", i, b, content)
		}
		if st, _ := os.Stat(bak); st.Mode().Perm() != 0o640 {
			t.Errorf("backup %d has mode %v, want the file's 0640", i, st.Mode().Perm())
		}
		got = append(got, filepath.Base(bak))
	}
	want := []string{"benchmark.yaml.bak-20260102T140405Z", "benchmark.yaml.bak-20260102T140405Z-2", "benchmark.yaml.bak-20260102T140405Z-3"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("backups %v, want %v (UTC time, never overwriting)", got, want)
	}
}
