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
		return "n/a"
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
	if len(rows) != 15 {
		t.Fatalf("careful calibration rows: %d, want 5 judges × 3 metrics", len(rows))
	}
	for _, row := range rows {
		e, ok := jc.Judges.Get(row[0])
		if !ok {
			t.Fatalf("row %q: judge not in results.json", row)
		}
		mc, _ := e.ByMetric.Get(row[2])
		want := []string{row[0], row[1], row[2], fmt.Sprint(mc.N), statText(mc.Sensitivity), statText(mc.Specificity), statText(mc.Kappa)}
		if strings.Join(row[3:7], "|") != strings.Join(want[3:], "|") {
			t.Errorf("%s %s: %q, want %q", row[0], row[2], row[3:7], want[3:])
		}
		if row[8] != fmt.Sprintf("%d / %d", mc.NHumanPresent, mc.NHumanAbsent) || row[9] != fmt.Sprintf("%d / %d", mc.NJudgePresent, mc.NJudgeAbsent) {
			t.Errorf("%s %s counts %q %q", row[0], row[2], row[8], row[9])
		}
		wantWarn := "—"
		if mc.Warning != "" {
			wantWarn = "⚠ " + mc.Warning
		}
		if row[11] != wantWarn {
			t.Errorf("%s %s warning %q, want %q", row[0], row[2], row[11], wantWarn)
		}
	}
	if rows[0][0] != "panel" || rows[0][1] != "main" || rows[14][0] != altJudge || rows[14][1] != "alternate" {
		t.Errorf("judge rows: first %q, last %q", rows[0][:2], rows[14][:2])
	}
	// judge-3 contradicts the panel: uninformative, said so.
	if r := rows[9]; r[0] != "judge-3" || r[10] != "no" || !strings.Contains(r[11], "uninformative") {
		t.Errorf("judge-3 row %q", r)
	}
	txt := evalJS[string](t, ctx, `document.getElementById('calibration').textContent`)
	for _, want := range []string{
		"72 labelled conversations (78 label lines, 2 labelers, 1 tie between labelers left out, 0 not judged yet)",
		"12 labelled conversations (12 label lines, 1 labeler, 0 ties",
		"Agreement between labelers", "Judge self-consistency (evaluate --repeats)",
		"thinly labelled: ",
	} {
		if !strings.Contains(txt, want) {
			t.Errorf("calibration section lacks %q", want)
		}
	}
	lab := evalJS[[]string](t, ctx, `[...document.querySelector('[data-testid="labelers"] tbody tr').cells].map(c => c.textContent)`)
	if strings.Join(lab, "|") != "m01|6|5|"+num3(resultOf(t, res, "careful").JudgeCalibration.LabelerAgreement[0].Value.Alpha)+"|12" {
		t.Errorf("labeler row %q", lab)
	}
	// The thinly labelled model's corrected rates are warnings, not numbers.
	thin := evalJS[[][]string](t, ctx, `[...document.querySelectorAll('[data-testid="corrected"][data-model="thin"] tbody tr')].map(tr => [...tr.cells].map(c => c.textContent))`)
	if len(thin) != 5 {
		t.Fatalf("thin corrected rows %q", thin)
	}
	for _, r := range thin {
		if r[2] != "⚠ not corrected" || !strings.HasPrefix(r[6], "⚠ ") || strings.Contains(r[2], "%") {
			t.Errorf("thin corrected row %q", r)
		}
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
	if got := obs[0][1] + "," + obs[1][1] + "," + obs[2][1]; got != "careful,thin,sloppy" {
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
	// Ordered by corrected score; thin, without one, last with its warning.
	if got := rows[0][1] + "," + rows[1][1] + "," + rows[2][1]; got != "careful,sloppy,thin" {
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
		screenshot(t, ctx, `[data-testid="corrected"][data-model="thin"]`, shot+"-thin.png")
	}
	clickSel(t, ctx, "#lb-mode-observed")
	if h := head(); h != "Score (observed)" || leaderboardCells(t, ctx)[1][1] != "thin" {
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
