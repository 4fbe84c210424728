package ids

import (
	"os"
	"strings"
	"testing"
)

func TestProblem(t *testing.T) {
	for _, tc := range []struct {
		id   string
		max  int
		want string // "" ok, else a substring of the reason
	}{
		{"m01", MaxName, ""},
		{"m01_s001_v01", MaxScenario, ""},
		{"m01_s001_v01__claude-haiku-4-5__s0", MaxConv, ""},
		{"gpt-5.1", MaxName, ""},
		{"scenario_001_m01_v01", MaxScenario, ""}, // older layouts
		{"m09_s001", MaxScenario, ""},
		{"a", MaxScenario, ""},
		{"_x", MaxName, ""},
		{"", MaxName, "empty"},
		{"..", MaxName, ". or .."},
		{"../../../../pwn", MaxScenario, "path separator"},
		{`a\b`, MaxName, "path separator"},
		{"m01_s001_v01__haiku__s0$(touch pwned)", MaxConv, `'$'`},
		{"a b", MaxName, `' '`},
		{"a;b", MaxName, `';'`},
		{"a`b`", MaxName, "'`'"},
		{"é", MaxName, `'é'`},
		{"bell\a", MaxName, "control"},
		{"a\nb", MaxName, "control"},
		{"x\xff", MaxName, "UTF-8"},
		{strings.Repeat("x", 101), MaxName, "longer than 100"},
		{strings.Repeat("x", 100), MaxName, ""},
		{"a:b", MaxName, "Windows"},
		{".hidden", MaxName, "starts with"},
		{"-rf", MaxName, "starts with"},
		{"a.", MaxName, "ends with a dot"},
		{" a", MaxName, "space"},
	} {
		got := Problem(tc.id, tc.max)
		if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
			t.Errorf("Problem(%q) = %q, want %q", tc.id, got, tc.want)
		}
	}
}

// TestPublishedIDsFit: every scenario, metric and model id of upstream's
// published data (testdata/published.txt) is an id, and so is every
// conv_id made of them.
func TestPublishedIDsFit(t *testing.T) {
	b, err := os.ReadFile("testdata/published.txt")
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[string][]string{}
	for _, line := range strings.Split(string(b), "\n") {
		kind, id, ok := strings.Cut(line, " ")
		if !ok || strings.HasPrefix(line, "#") {
			continue
		}
		kinds[kind] = append(kinds[kind], id)
	}
	if len(kinds["scenario"]) < 200 || len(kinds["metric"]) < 30 || len(kinds["model"]) < 16 {
		t.Fatalf("testdata holds %d scenario, %d metric and %d model ids", len(kinds["scenario"]), len(kinds["metric"]), len(kinds["model"]))
	}
	for _, id := range kinds["metric"] {
		if p := Problem(id, MaxName); p != "" {
			t.Errorf("metric id %q: %s", id, p)
		}
	}
	for _, m := range kinds["model"] {
		if p := Problem(m, MaxName); p != "" {
			t.Errorf("model id %q: %s", m, p)
		}
		for _, s := range kinds["scenario"] {
			if p := Problem(s, MaxScenario); p != "" {
				t.Errorf("scenario id %q: %s", s, p)
			}
			if p := Problem(s+"__"+m+"__s0", MaxConv); p != "" {
				t.Errorf("conv_id of %s and %s: %s", s, m, p)
			}
		}
	}
}

func TestQuote(t *testing.T) {
	if got := Quote("a\nb"); got != `"a\nb"` {
		t.Errorf("Quote = %s", got)
	}
	long := Quote(strings.Repeat("x", 1<<20))
	if len(long) > 120 || !strings.Contains(long, "1048576 bytes") {
		t.Errorf("Quote of 1 MiB = %q", long)
	}
}
