package export

import (
	"bufio"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// documented renders columns as "name type" lines, ? marking nullable, with
// a demographic column shown as demo_<axis>.
func documented(cols []Column) []string {
	out := make([]string, len(cols))
	for i, c := range cols {
		name := c.Name
		if strings.HasPrefix(name, demoPrefix) {
			name = demoPrefix + "<axis>"
		}
		q := ""
		if c.Nullable {
			q = "?"
		}
		out[i] = name + " " + c.Kind.String() + q
	}
	return out
}

// TestDocsColumns: the Export table of docs/outputs.md lists the judged
// columns, in order, with their types.
func TestDocsColumns(t *testing.T) {
	f, err := os.Open(filepath.Join("..", "..", "docs", "outputs.md"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var got []string
	in, table := false, false
	cell := regexp.MustCompile("`([^`]+)`")
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "### Export":
			in = true
		case !in:
		case strings.HasPrefix(line, "| column |"):
			table = true
		case table && strings.HasPrefix(line, "| `"):
			parts := strings.Split(line, "|")
			typ := strings.TrimSpace(parts[2])
			for _, m := range cell.FindAllStringSubmatch(parts[1], -1) {
				got = append(got, m[1]+" "+typ)
			}
		case table && !strings.HasPrefix(line, "|"):
			in, table = false, false
		}
	}
	want := documented(JudgedColumns([]string{"age"}))
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("docs/outputs.md Export table differs from the judged columns (-code +docs):\n%s", d)
	}
}

// TestDocCommentColumns: the package comment lists both tables' columns,
// in order, with their types.
func TestDocCommentColumns(t *testing.T) {
	b, err := os.ReadFile("table.go")
	if err != nil {
		t.Fatal(err)
	}
	// Column lines of the comment: "//\tname   type   meaning".
	line := regexp.MustCompile(`(?m)^//\t(\S+)\s+(string\??|int64\??|float64\??|bool\??)(\s|$)`)
	var got []string
	for _, m := range line.FindAllStringSubmatch(string(b), -1) {
		got = append(got, m[1]+" "+m[2])
	}
	want := append(documented(JudgedColumns([]string{"age"})), documented(MessageColumns())...)
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("package comment differs from the columns (-code +comment):\n%s", d)
	}
}
