package artifacts

import (
	"encoding/json"
	"strings"
	"testing"
)

func i64(v int64) *int64     { return &v }
func f64(v float64) *float64 { return &v }

func TestRunInfoSamplingFields(t *testing.T) {
	tests := []struct {
		name string
		run  RunInfo
		want string // the run block's new keys as written, compact
	}{
		{"not recorded (older rows)", RunInfo{}, ``},
		{"provider defaults, seeds sent",
			RunInfo{UserTemperature: TemperatureOf(nil), TargetTemperature: TemperatureOf(nil),
				UserSeeds: SeedsOf([]*int64{i64(7), i64(8)}, []string{"", ""}), TargetSeeds: SeedsOf([]*int64{i64(2147483647)}, []string{""})},
			`"user_temperature":null,"target_temperature":null,"user_seeds":[7,8],"target_seeds":[2147483647]`},
		{"temperatures as Python floats, provider without seeds",
			RunInfo{UserTemperature: TemperatureOf(f64(1)), TargetTemperature: TemperatureOf(f64(0.7)),
				UserSeeds: SeedsOf([]*int64{nil, nil}, []string{"provider has no seed parameter", "provider has no seed parameter"}), TargetSeeds: SeedsOf(nil, nil)},
			`"user_temperature":1.0,"target_temperature":0.7,"user_seeds":"not sent: provider has no seed parameter","target_seeds":[]`},
		{"some calls without a seed",
			RunInfo{TargetSeeds: SeedsOf([]*int64{i64(1), nil, i64(3)}, []string{"", "x", ""})},
			`"target_seeds":[1,null,3]`},
		{"several reasons, unknown named",
			RunInfo{UserSeeds: SeedsOf([]*int64{nil, nil, nil}, []string{"a", "", "a"})},
			`"user_seeds":"not sent: a; the model client did not report one"`},
	}
	const base = `"user_model":"","target_model":"","turns":0,"landmarks":false,"perfunctory":false,"seed":0`
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b, err := MarshalPy(tc.run)
			if err != nil {
				t.Fatal(err)
			}
			want := "{" + base
			if tc.want != "" {
				want += "," + tc.want
			}
			want += "}"
			if got := compact(string(b)); got != want {
				t.Errorf("written\n got %s\nwant %s", got, want)
			}
			// encoding/json (the report's chunks) writes the same keys.
			if std, err := json.Marshal(tc.run); err != nil || string(std) != want {
				t.Errorf("encoding/json wrote %s (%v), want %s", std, err, want)
			}
			var back RunInfo
			if err := json.Unmarshal(b, &back); err != nil {
				t.Fatal(err)
			}
			if back != tc.run {
				t.Errorf("read back %+v, want %+v", back, tc.run)
			}
		})
	}
}

func TestSeedsAccessors(t *testing.T) {
	sent, why := SeedsOf([]*int64{i64(5), nil}, []string{"", "r"}).Sent()
	if len(sent) != 2 || *sent[0] != 5 || sent[1] != nil || why != "" {
		t.Errorf("Sent() = %v, %q", sent, why)
	}
	sent, why = SeedsOf([]*int64{nil}, []string{"r"}).Sent()
	if sent != nil || why != "r" {
		t.Errorf("Sent() = %v, %q", sent, why)
	}
	if v, ok := TemperatureOf(f64(0.2)).Get(); !ok || v != 0.2 {
		t.Errorf("Get() = %v, %v", v, ok)
	}
	if _, ok := TemperatureOf(nil).Get(); ok {
		t.Error("provider default reported as set")
	}
}

func TestRunInfoSamplingFieldsRejectBadValues(t *testing.T) {
	for _, in := range []string{
		`{"user_temperature":"hot"}`,
		`{"user_seeds":""}`,
		`{"user_seeds":"not sent: "}`,
		`{"user_seeds":[1.5]}`,
		`{"user_seeds":null}`,
		`{"target_seeds":{"a":1}}`,
	} {
		var r RunInfo
		if err := json.Unmarshal([]byte(in), &r); err == nil {
			t.Errorf("%s: accepted as %+v", in, r)
		}
	}
}

// compact removes the writer's indentation (no value here contains spaces
// that matter except the reason text, which has no newlines).
func compact(s string) string {
	var b strings.Builder
	for _, line := range strings.Split(s, "\n") {
		line = strings.TrimSpace(line)
		line = strings.Replace(line, `": `, `":`, 1)
		b.WriteString(line)
	}
	return b.String()
}
