package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fakeKey is a made-up API key: no part of it may reach a message.
const fakeKey = "sk-proj-FAKEkeyQ7w9e8r7t6y5u4i3o2p1a0s9d8f7g6h5j4k3l2"

// TestLinkedEnvIsNeverQuoted: a models.yaml, benchmark.yaml or config.yaml
// that is a link to .env (or any file that is not the one expected) is
// refused without quoting any of it: no message shows a piece of the key.
func TestLinkedEnvIsNeverQuoted(t *testing.T) {
	envs := map[string]string{
		"plain":    "OPENAI_API_KEY=" + fakeKey + "\n",
		"export":   "# keys\nexport OPENAI_API_KEY=\"" + fakeKey + "\"\nANTHROPIC_API_KEY='" + fakeKey + "'\n",
		"colon":    "OPENAI_API_KEY=" + fakeKey[:12] + ": " + fakeKey[12:] + "\n",
		"indented": "A=1\n  OPENAI_API_KEY=" + fakeKey + "\n",
		"list":     "- OPENAI_API_KEY=" + fakeKey + "\n",
		"yamlish":  "OPENAI_API_KEY: " + fakeKey + "\nOTHER_KEY: " + fakeKey + "\n",
	}
	loaders := map[string]func(string) error{
		"models.yaml":    func(p string) error { _, err := LoadStudyModels(p); return err },
		"benchmark.yaml": func(p string) error { _, err := LoadBenchmark(p); return err },
		"config.yaml": func(p string) error {
			_, err := LoadWithOptions(p, LoadOptions{AllowMissingEnv: true, LookupEnv: noEnv})
			return err
		},
	}
	for envName, env := range envs {
		for file, load := range loaders {
			t.Run(envName+"/"+file, func(t *testing.T) {
				dir := t.TempDir()
				envPath := filepath.Join(dir, ".env")
				if err := os.WriteFile(envPath, []byte(env), 0o600); err != nil {
					t.Fatal(err)
				}
				path := filepath.Join(dir, "sub", file)
				if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.Symlink(envPath, path); err != nil {
					t.Fatal(err)
				}
				err := load(path)
				if err == nil {
					t.Fatalf("%s linked to .env was accepted", file)
				}
				if leak := keyPiece(err.Error()); leak != "" {
					t.Fatalf("the error shows %q of the key:\n%v", leak, err)
				}
			})
		}
	}
}

// keyPiece returns a run of 6 or more characters of fakeKey found in msg.
func keyPiece(msg string) string {
	const n = 6
	for i := 0; i+n <= len(fakeKey); i++ {
		if strings.Contains(msg, fakeKey[i:i+n]) {
			return fakeKey[i : i+n]
		}
	}
	return ""
}
