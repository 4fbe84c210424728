package report

import (
	"context"
	"fmt"
	"math/big"
	"os"
	"strings"
	"testing"

	"github.com/impactbench/impactbench/internal/results"
)

// Assertions of TestBrowserReport's "calibration" subtest, on calibBench:
// the calibration section, and the leaderboard's observed | corrected
// toggle. Expected texts are formatted here from results.json.

// dec2 is JavaScript's x.toFixed(2): the sign, then the integer n nearest
// to |x|·100 for x's exact binary value, the larger one on a tie (Go's
// %.2f picks the even one), written as n/100.
func dec2(x float64) string {
	sign := ""
	if x < 0 {
		sign, x = "-", -x
	}
	r := new(big.Rat).SetFloat64(x)
	r.Mul(r, big.NewRat(100, 1)).Add(r, big.NewRat(1, 2))
	n := new(big.Int).Quo(r.Num(), r.Denom())
	q, m := new(big.Int).QuoRem(n, big.NewInt(100), new(big.Int))
	return fmt.Sprintf("%s%s.%02d", sign, q, m.Int64())
}

func statText(s results.Statistic) string {
	if s.Estimate == nil {
		if s.Reason != "" {
			return "n/a (" + s.Reason + ")"
		}
		return "n/a"
	}
	if s.Hits != nil {
		return fmt.Sprintf("%s [%s, %s] raw %d/%d", dec2(*s.Estimate), dec2(*s.Low), dec2(*s.High), *s.Hits, s.N)
	}
	return fmt.Sprintf("%s [%s, %s] n=%d", dec2(*s.Estimate), dec2(*s.Low), dec2(*s.High), s.N)
}

func leaderboardCells(t *testing.T, ctx context.Context) [][]string {
	t.Helper()
	return evalJS[[][]string](t, ctx, `[...document.querySelectorAll('#lb-table tbody tr')].map(tr => [...tr.cells].map(c => c.textContent))`)
}

func assertCalibrationSection(t *testing.T, ctx context.Context, res []results.ModelResult) {
	t.Helper()
	if !visible(t, ctx, `[data-testid="calibration"][data-model="careful"]`) {
		t.Fatal("calibration table not visible")
	}
	// Each judge × metric row, with its warning line (or "—") appended.
	rows := evalJS[[][]string](t, ctx, `[...document.querySelectorAll('[data-testid="calibration"][data-model="careful"] tbody tr[data-judge]')].map(tr => {
		var next = tr.nextElementSibling, w = next && next.classList.contains('sub') ? next.textContent : '—';
		return [...tr.cells].map(c => c.textContent).concat([w]) })`)
	jc := resultOf(t, res, "careful").JudgeCalibration
	if len(rows) != 16 {
		t.Fatalf("careful calibration rows: %d, want 5 judges × 3 metrics and the main judge over all metrics", len(rows))
	}
	for _, row := range rows {
		e, ok := jc.Judges.Get(row[0])
		if !ok {
			t.Fatalf("row %q: judge not in results.json", row)
		}
		mc, _ := e.ByMetric.Get(row[2])
		if row[2] == "all metrics" {
			mc = *e.AllMetrics
		}
		want := []string{row[0], row[1], row[2], fmt.Sprint(mc.N), statText(mc.Sensitivity), statText(mc.Specificity), statText(mc.Kappa)}
		if strings.Join(row[3:7], "|") != strings.Join(want[3:], "|") {
			t.Errorf("%s %s: %q, want %q", row[0], row[2], row[3:7], want[3:])
		}
		if row[8] != fmt.Sprintf("%d / %d", mc.NHumanPresent, mc.NHumanAbsent) || row[9] != fmt.Sprintf("%d / %d", mc.NJudgePresent, mc.NJudgeAbsent) {
			t.Errorf("%s %s counts %q %q", row[0], row[2], row[8], row[9])
		}
		if mc.Agreement != nil && row[7] != pctText(mc.Agreement)+fmt.Sprintf(" (raw %d/%d)", mc.NAgree, mc.N) {
			t.Errorf("%s %s agreement %q: the weighted share with its raw count", row[0], row[2], row[7])
		}
		wantWarn := "—"
		if mc.Warning != "" {
			wantWarn = "⚠ " + mc.Warning
		}
		if row[13] != wantWarn {
			t.Errorf("%s %s warning %q, want %q", row[0], row[2], row[13], wantWarn)
		}
	}
	if rows[0][0] != "panel" || rows[0][1] != "main" || rows[3][2] != "all metrics" || rows[15][0] != altJudge || rows[15][1] != "alternate" {
		t.Errorf("judge rows: first %q, all metrics %q, last %q", rows[0][:2], rows[3][:3], rows[15][:2])
	}
	if !strings.HasPrefix(rows[0][12], "differs: p ") || rows[0][11] != "all targets (3)" {
		t.Errorf("panel m01: labels of %q, by-target test %q", rows[0][11], rows[0][12])
	}
	// judge-3 contradicts the panel on careful's rows only: over every
	// target it is informative, and the by-target test says its error
	// differs.
	if r := rows[10]; r[0] != "judge-3" || r[10] != "yes" || !strings.HasPrefix(r[12], "differs: ") {
		t.Errorf("judge-3 row %q", r)
	}
	txt := evalJS[string](t, ctx, `document.getElementById('calibration').textContent`)
	for _, want := range []string{
		"This model: 144 labelled conversations (150 label lines, 2 labelers, 1 tie between labelers left out, 0 not judged yet)",
		"This model: 144 labelled conversations (144 label lines, 1 labeler, 0 ties",
		"All targets: 432 labelled conversations (438 label lines, 2 labelers, 1 tie",
		"Agreement between labelers", "Judge self-consistency (evaluate --repeats)",
		"The main judge on this model’s labels alone", "differs by target",
	} {
		if !strings.Contains(txt, want) {
			t.Errorf("calibration section lacks %q", want)
		}
	}
	lab := evalJS[[]string](t, ctx, `[...document.querySelector('[data-testid="labelers"] tbody tr').cells].map(c => c.textContent)`)
	if strings.Join(lab, "|") != "m01|6|5|"+num3(resultOf(t, res, "careful").JudgeCalibration.LabelerAgreement[0].Value.Alpha)+"|12" {
		t.Errorf("labeler row %q", lab)
	}
	// The model the judge cannot read: its corrected rates are warnings,
	// not numbers.
	opaque := evalJS[[][]string](t, ctx, `[...document.querySelectorAll('[data-testid="corrected"][data-model="opaque"] tbody tr')].map(tr => [...tr.cells].map(c => c.textContent))`)
	if len(opaque) != 5 {
		t.Fatalf("opaque corrected rows %q", opaque)
	}
	for _, r := range opaque {
		if r[2] != "⚠ not corrected" || !strings.HasPrefix(r[6], "⚠ ") || strings.Contains(r[2], "%") || r[7] != "—" {
			t.Errorf("opaque corrected row %q", r)
		}
	}
	// careful's are corrected with its own labels, and say so.
	own := evalJS[[][]string](t, ctx, `[...document.querySelectorAll('[data-testid="corrected"][data-model="careful"] tbody tr')].map(tr => [...tr.cells].map(c => c.textContent))`)
	if len(own) != 5 || own[2][7] != "target" || !strings.HasPrefix(own[2][6], "ⓘ the judge's error on m01 differs by target") {
		t.Errorf("careful corrected rows %q", own)
	}
	flip := evalJS[[]string](t, ctx, `[...document.querySelector('[data-testid="consistency"] tbody tr').cells].map(c => c.textContent)`)
	f, _ := resultOf(t, res, "careful").JudgeConsistency.Judges[0].Value.Get("m01")
	if want := []string{"careful", "panel", "m01", pctText(f.Rate) + " " + ivText(f.Low, f.High), fmt.Sprintf("%d / %d", f.NFlipped, f.NRows), "1"}; strings.Join(flip, "|") != strings.Join(want, "|") {
		t.Errorf("flip row %q, want %q", flip, want)
	}
	// The alternate judge's name is text: no element made from it.
	if n := evalJS[int](t, ctx, `document.querySelectorAll('#calibration img, #calibration script').length`); n != 0 {
		t.Errorf("%d elements created from a judge name", n)
	}
}

func num3(x *float64) string {
	if x == nil {
		return "n/a"
	}
	return fmt.Sprintf("%.3f", *x)
}

func assertCorrectedToggle(t *testing.T, ctx context.Context, res []results.ModelResult) {
	t.Helper()
	if evalJS[bool](t, ctx, `document.getElementById('lb-mode-corrected').disabled`) {
		t.Fatal("corrected toggle disabled although results.json has leaderboard.corrected")
	}
	head := func() string {
		return evalJS[string](t, ctx, `document.querySelector('[data-testid="score-head"]').textContent`)
	}
	if h := head(); h != "Score (observed)" {
		t.Errorf("observed header %q", h)
	}
	obs := leaderboardCells(t, ctx)
	if got := obs[0][1] + "," + obs[1][1] + "," + obs[2][1]; got != "careful,opaque,sloppy" {
		t.Errorf("observed order %s", got)
	}
	clickSel(t, ctx, "#lb-mode-corrected")
	if h := head(); h != "Score (corrected for judge error, Rogan–Gladen, judge panel)" {
		t.Errorf("corrected header %q", h)
	}
	if p := evalJS[string](t, ctx, `document.getElementById('lb-mode-corrected').getAttribute('aria-pressed')`); p != "true" {
		t.Errorf("corrected button aria-pressed=%s", p)
	}
	note := evalJS[string](t, ctx, `document.getElementById('lb-mode-note').textContent`)
	if !strings.Contains(note, "Showing scores corrected for judge error") || !strings.Contains(note, "Rogan–Gladen") {
		t.Errorf("mode note %q", note)
	}
	rows := leaderboardCells(t, ctx)
	// Ordered by corrected score; opaque, without one, last with its warning.
	if got := rows[0][1] + "," + rows[1][1] + "," + rows[2][1]; got != "careful,sloppy,opaque" {
		t.Errorf("corrected order %s", got)
	}
	for _, row := range rows {
		r := resultOf(t, res, row[1])
		c := r.Leaderboard.Corrected
		if c.Score == nil {
			want := "⚠ " + c.Warning
			if row[2] != want || row[0] != "—" || strings.ContainsAny(row[2], "%[") {
				t.Errorf("%s: score cell %q (#%s), want the warning %q", row[1], row[2], row[0], want)
			}
			if !strings.HasSuffix(row[4], "→ ⚠ not corrected") {
				t.Errorf("%s: positive cell %q", row[1], row[4])
			}
			continue
		}
		if want := pctText(c.Score) + " " + ivText(c.CILow, c.CIHigh); row[2] != want {
			t.Errorf("%s corrected score cell %q, want %q", row[1], row[2], want)
		}
		// Observed rate, then → the corrected one.
		pos, neg := r.PositiveCorrected, r.NegativeCorrected
		if !strings.HasSuffix(row[4], "→ "+pctText(pos.Estimate)+" "+ivText(pos.Low, pos.High)) || !strings.HasPrefix(row[4], pctText(r.PositivePassRate)) {
			t.Errorf("%s positive cell %q", row[1], row[4])
		}
		if !strings.HasSuffix(row[6], "→ "+pctText(neg.Estimate)+" "+ivText(neg.Low, neg.High)) {
			t.Errorf("%s negative cell %q", row[1], row[6])
		}
	}
	if n := evalJS[int](t, ctx, `Chart.getChart(document.getElementById('lb-chart')).data.datasets.length`); n != 4 {
		t.Errorf("corrected chart datasets: %d, want observed + corrected per track", n)
	}
	if legend := evalJS[string](t, ctx, `document.querySelector('[data-testid="lb-legend"]').textContent`); !strings.HasPrefix(legend, "Score (corrected for judge error) = ") {
		t.Errorf("corrected legend %q", legend)
	}
	if shot := os.Getenv("IMPACTBENCH_CALIB_SHOT"); shot != "" {
		screenshot(t, ctx, "#leaderboard", shot+"-leaderboard.png")
		screenshot(t, ctx, `[data-testid="calibration"][data-model="careful"]`, shot+"-calibration.png")
		screenshot(t, ctx, `[data-testid="corrected"][data-model="opaque"]`, shot+"-opaque.png")
	}
	clickSel(t, ctx, "#lb-mode-observed")
	if h := head(); h != "Score (observed)" || leaderboardCells(t, ctx)[1][1] != "opaque" {
		t.Errorf("back to observed: header %q", h)
	}
}

// assertNoCorrectedMode: without labels the toggle cannot be switched on.
func assertNoCorrectedMode(t *testing.T, ctx context.Context) {
	t.Helper()
	if !evalJS[bool](t, ctx, `document.getElementById('lb-mode-corrected').disabled`) {
		t.Error("corrected toggle enabled without leaderboard.corrected")
	}
	clickSel(t, ctx, "#lb-mode-corrected")
	if h := evalJS[string](t, ctx, `document.querySelector('[data-testid="score-head"]').textContent`); h != "Score" {
		t.Errorf("header after clicking a disabled toggle: %q", h)
	}
	if txt := evalJS[string](t, ctx, `document.getElementById('cal-note').textContent`); !strings.HasPrefix(txt, "No judge calibration in results.json") {
		t.Errorf("calibration note without labels: %q", txt)
	}
}
