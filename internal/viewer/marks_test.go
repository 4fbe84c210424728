package viewer

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestMessageMarksInTheAPI: the conversation, scenario and open review
// answers carry what the row stores about single messages (refused,
// truncated, repairs); a row marking none has no marks key, and blind
// review carries none (a provider's safety stop hints at the target).
func TestMessageMarksInTheAPI(t *testing.T) {
	project := filepath.Join(t.TempDir(), "project")
	WriteSynth(t, project, SynthSpec{Name: "mini", Metrics: 2, ScensPerMetric: 2, Targets: []string{"alpha", "beta"},
		Samples: 2, Msgs: 4, MsgLen: 80, Judges: 2, Marks: true})
	const marked, plain = "m01_s001_v01__alpha__s0", "m01_s001_v01__beta__s0"
	const want = `"marks":{"refused":[1,3],"truncated":[2],"repairs":[{"message":0,"what":"removed quotes or emphasis around the message"}]}`
	for _, blind := range []bool{true, false} {
		_, base := StartForTest(t, Options{ProjectDir: project, Blind: blind})
		get := func(path string) string {
			t.Helper()
			code, body := do(t, base, req{"GET", path, "", nil})
			if code != 200 {
				t.Fatalf("%s: %d %s", path, code, body)
			}
			return body
		}
		if body := get("/api/b/mini/conv?id=" + marked); !strings.Contains(body, want) {
			t.Errorf("blind=%v: conversation view lacks %s: %.400s", blind, want, body)
		}
		if body := get("/api/b/mini/conv?id=" + plain); strings.Contains(body, `"marks"`) {
			t.Errorf("blind=%v: a row marking no message has marks: %.400s", blind, body)
		}
		if body := get("/api/b/mini/scenario?id=m01_s001_v01"); strings.Count(body, `"marks"`) != 1 || !strings.Contains(body, want) {
			t.Errorf("blind=%v: scenario view marks: %.600s", blind, body)
		}
		var r map[string]string
		decodeInto(t, get("/api/b/mini/resolve?conv="+marked), &r)
		item := get("/api/b/mini/item?id=" + r["item"])
		if has := strings.Contains(item, want); has == blind {
			t.Errorf("blind=%v: review item carries the marks: %v (%.400s)", blind, has, item)
		}
		if review := get("/api/b/mini/conv?review=1&id=" + marked); strings.Contains(review, `"marks"`) == blind {
			t.Errorf("blind=%v: review conversation view marks: %.400s", blind, review)
		}
	}
}
