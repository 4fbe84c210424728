package config

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/joho/godotenv"
)

// dotEnvSamples are .env files of every kind godotenv reads: parseDotEnv
// must read each exactly as godotenv does.
var dotEnvSamples = []string{
	"",
	"A=1\nB=2\n",
	"A=1\r\nB=2\r\n",
	"export A=1\nexport  B = two words \n",
	"A: yaml style\n",
	"# comment\n\n  # indented comment\nA=1 # trailing comment\nB=1#not a comment\n",
	"A='single $A ${B}'\nB=\"double\\nline \\\"q\\\" \\$A $A ${A}\"\n",
	"A=\"multi\nline\"\nB='multi\nline'\n",
	"A=x\nB=$A${A}\\$A$(A)${MISSING}$lower\nC=\"$B-$A\"\n",
	"A=1\nA=2\nB=$A\n",
	"A=\xff\xfe\nB=\"\xff\"\n",
	"A=\tspaced\t\nB=\n C = 3\nD",
	"A.B=dot\nA_B=under\n",
	"=novalue\n",
	"A=\"\"\nB=''\nC=\"\\r\\n\\t\"\n",
	"A=\"unterminated\n",
	"B-C=2\n",
	"A=1\nnot valid\n",
	// Corners of godotenv's reading: quote characters before the closing
	// quote are dropped, a statement may follow a closing quote on its line,
	// names and unquoted values are trimmed of Latin-1 spaces only, a lone CR
	// ends an unquoted value, the last statement may lack its =.
	"A=\"a\\\"\"\nB='b\\''\nC=\"\\\"\\\"\"\n",
	"export \t",
	"A=x #c #d\nB=x\u00a0#c\nC=x\u2003#c\nD= #e\n",
	"A=v\nB=$(A)${A$A}\\${A}${(A)}$$A$a\nC=\"\\\\$A\\n\\q\\\\x\"\n",
	"A='x' B=1\nC=\"y\"#c\n",
	"A=\xa0x\xe2\x82\n\u2003B=1\nexport\u00a0C=2\n",
	"A\rB=1\nC=x\ry=2\n",
	"A=1\nlast statement without equals",
}

func TestDotEnvMatchesGodotenv(t *testing.T) {
	for _, src := range dotEnvSamples {
		t.Run(fmt.Sprintf("%q", src), func(t *testing.T) { compareWithGodotenv(t, []byte(src)) })
	}
}

func FuzzDotEnv(f *testing.F) {
	for _, s := range dotEnvSamples {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, src []byte) {
		if len(src) > 4096 {
			return
		}
		compareWithGodotenv(t, src)
	})
}

// compareWithGodotenv checks that parseDotEnv reads src as godotenv does:
// the same values, or an error where godotenv has one. (Within the bounds:
// these inputs are far below them.)
func compareWithGodotenv(t *testing.T, src []byte) {
	t.Helper()
	want, wantErr := godotenv.UnmarshalBytes(src)
	got, err := parseDotEnv(src)
	if (err != nil) != (wantErr != nil) {
		t.Fatalf("err = %v, godotenv's = %v", err, wantErr)
	}
	if err == nil {
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("values differ from godotenv's (-godotenv +parseDotEnv):\n%s", diff)
		}
	}
}

// dotEnvBomb is "billion laughs" in a .env: each key refers ten times to
// the one before, so key A<levels> stands for 10^(levels+1) bytes.
func dotEnvBomb(levels int) string {
	var b strings.Builder
	b.WriteString("A0=xxxxxxxxxx\n")
	for i := 1; i <= levels; i++ {
		fmt.Fprintf(&b, "A%d=%s\n", i, strings.Repeat(fmt.Sprintf("${A%d}", i-1), 10))
	}
	return b.String()
}

// TestDotEnvIsBounded reads hostile .env files and checks what each
// allocates in all. Before the bounds, the bomb (7 levels, 300 bytes)
// allocated about 230 MB and exported a 100 MB variable (with 9 levels,
// 4.5 GB); 1 MiB of comment lines recursed once per line; and a 1 MiB
// file with its last line malformed was reparsed once per line to find
// that line (a 4 MB one took over two minutes).
func TestDotEnvIsBounded(t *testing.T) {
	const maxAlloc = 48 << 20
	longLines := func(last string) string {
		var b strings.Builder
		for i := 0; b.Len() < 1<<20; i++ {
			fmt.Fprintf(&b, "K%d=%s\n", i, strings.Repeat("v", 800))
		}
		return b.String() + last
	}
	many := func(line string) string { return strings.Repeat(line, (1<<20)/len(line)) }
	tests := []struct {
		name, src string
		line      int    // the line named, 0: read without error, -1: the last
		key, msg  string // named in the error
	}{
		{"bomb", dotEnvBomb(7), 7, "A6", "1 MiB limit for one value"},
		{"wide references", "A=" + strings.Repeat("x", 1000) + "\n" + many("B=${A}${A}${A}${A}\n"), 1050, "B", "4 MiB in all"},
		{"comment lines", many("#\n"), 0, "", ""},
		{"malformed last line", longLines("BAD=\"unclosed\n"), -1, "", "malformed line"},
		{"many keys", many("K=v\n"), 0, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, ".env")
			if err := os.WriteFile(path, []byte(tt.src), 0o600); err != nil {
				t.Fatal(err)
			}
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			_, err := readDotEnv(path)
			runtime.ReadMemStats(&after)
			if got := after.TotalAlloc - before.TotalAlloc; got > maxAlloc {
				t.Errorf("reading %d bytes allocated %d MB, want at most %d MB", len(tt.src), got>>20, maxAlloc>>20)
			}
			if tt.line == 0 {
				if err != nil {
					t.Fatalf("err = %v, want none", err)
				}
				return
			}
			var ce *Error
			if !errors.As(err, &ce) {
				t.Fatalf("err = %v, want an *Error", err)
			}
			line := tt.line
			if line < 0 {
				line = strings.Count(tt.src, "\n")
			}
			want := fmt.Sprintf("%s:%d: ", path, line)
			if tt.key != "" {
				want += tt.key + ": "
			}
			if msg := err.Error(); !strings.HasPrefix(msg, want) || !strings.Contains(msg, tt.msg) {
				t.Errorf("err = %q, want it to start %q and say %q", msg, want, tt.msg)
			}
		})
	}
}

// TestExpandedConfigValuesAreBounded: ${VAR} references in config.yaml are
// expanded only while a value stays under MaxStringBytes and all of them
// under MaxConfigBytes. Before, a config.yaml value of 20,000 references
// to a 100 KB variable took 7 GB and was accepted as a 2 GB model name.
func TestExpandedConfigValuesAreBounded(t *testing.T) {
	const maxAlloc = 48 << 20
	big := strings.Repeat("x", 100_000)
	tests := []struct {
		name, yaml string
		line       int
		field, msg string
	}{
		{"one value", "user_model:\n  model: \"" + strings.Repeat("${BIG}", 2000) + "\"\n", 2, "user_model.model", "1 MiB limit for one value once its ${VAR} references are expanded"},
		{"many values", "x-a: &a \"" + strings.Repeat("${BIG}", 10) + "\"\ntargets:\n" +
			strings.Repeat("  - {id: t, source: offline, model: *a}\n", 50), 0, "model", "expand to more than 4 MiB in all"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "config.yaml")
			if err := os.WriteFile(path, []byte(tt.yaml), 0o600); err != nil {
				t.Fatal(err)
			}
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			_, err := LoadWithOptions(path, LoadOptions{LookupEnv: envMap("BIG", big)})
			runtime.ReadMemStats(&after)
			if got := after.TotalAlloc - before.TotalAlloc; got > maxAlloc {
				t.Errorf("loading allocated %d MB, want at most %d MB", got>>20, maxAlloc>>20)
			}
			if err == nil {
				t.Fatal("loaded, want the value refused")
			}
			msg := err.Error()
			if tt.line > 0 && !strings.Contains(msg, fmt.Sprintf("%s:%d:", path, tt.line)) {
				t.Errorf("err = %q, want it to name line %d", msg, tt.line)
			}
			if !strings.Contains(msg, tt.field) || !strings.Contains(msg, tt.msg) {
				t.Errorf("err = %q, want it to name %s and say %q", msg, tt.field, tt.msg)
			}
			if strings.Contains(msg, "xxxxxxxx") {
				t.Errorf("err quotes the variable's value: %.200q", msg)
			}
		})
	}
}
