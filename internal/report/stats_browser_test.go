package report

import (
	"context"
	"fmt"
	"math"
	"math/big"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/impactbench/impactbench/internal/results"
	"github.com/impactbench/impactbench/internal/stats"
)

// Assertions of TestBrowserReport's "statistics" subtest. Expected texts
// are formatted here from results.json, so the page is checked against the
// file it was built from.

// visible reports whether the first element matching sel is rendered with a
// size and not hidden by itself or an ancestor.
func visible(t *testing.T, ctx context.Context, sel string) bool {
	t.Helper()
	return evalJS[bool](t, ctx, fmt.Sprintf(`(function(){var e=document.querySelector(%q); if(!e) return false;
		var r=e.getBoundingClientRect(), cs=getComputedStyle(e);
		return r.width>0 && r.height>0 && cs.visibility!=='hidden' && cs.display!=='none' && !e.closest('[hidden]')})()`, sel))
}

// fixed1 is JavaScript's x.toFixed(1).
func fixed1(x float64) string { return jsFixed(x, 1) }

// jsFixed is JavaScript's x.toFixed(digits): the decimal nearest to the
// double x itself (0.2365*100 = 23.649999999999999 gives "23.6"), an exact
// tie (6.25, 0.0625) rounding away from zero where Go's formatting rounds
// to even.
func jsFixed(x float64, digits int) string {
	scale := big.NewFloat(math.Pow(10, float64(digits)))
	scaled := new(big.Float).SetPrec(256).SetFloat64(x)
	scaled.Mul(scaled, scale)
	whole, _ := scaled.Int(nil)
	frac := new(big.Float).SetPrec(256).Sub(scaled, new(big.Float).SetInt(whole))
	if frac.Abs(frac).Cmp(big.NewFloat(0.5)) == 0 {
		return strconv.FormatFloat(x+math.Copysign(0.1/math.Pow(10, float64(digits)), x), 'f', digits, 64)
	}
	return strconv.FormatFloat(x, 'f', digits, 64)
}

func pctText(x *float64) string { return fixed1(*x*100) + "%" }

func ivText(lo, hi *float64) string { return "[" + fixed1(*lo*100) + "–" + fixed1(*hi*100) + "]" }

// ppText is app.js's signed percentage points ("+26.6", "−14.5").
func ppText(x *float64) string {
	sign := "+"
	if *x < 0 {
		sign = "−"
	}
	return sign + fixed1(math.Abs(*x*100))
}

func resultOf(t *testing.T, res []results.ModelResult, model string) results.ModelResult {
	t.Helper()
	for _, r := range res {
		if r.TargetModel == model {
			return r
		}
	}
	t.Fatalf("no %s in results.json", model)
	return results.ModelResult{}
}

func assertStatsLeaderboard(t *testing.T, ctx context.Context, res []results.ModelResult) {
	t.Helper()
	rows := evalJS[[][]string](t, ctx, `[...document.querySelectorAll('#lb-table tbody tr')].map(tr => [...tr.cells].map(c => c.textContent))`)
	var models []string
	for _, r := range rows {
		models = append(models, r[1])
	}
	// results.json keeps upstream's order (by positive pass rate); the page
	// orders by leaderboard.score.
	if got := strings.Join(models, ","); got != "steady,middling,lopsided,wobbly" {
		t.Fatalf("leaderboard order %s, want by score steady,middling,lopsided,wobbly (file order %s,%s,%s,%s)",
			got, res[0].TargetModel, res[1].TargetModel, res[2].TargetModel, res[3].TargetModel)
	}
	for _, row := range rows {
		lb := resultOf(t, res, row[1]).Leaderboard
		wantScore := pctText(lb.Score) + " " + ivText(lb.CILow, lb.CIHigh) + " ⚠"
		if row[2] != wantScore {
			t.Errorf("%s score cell %q, want %q", row[1], row[2], wantScore)
		}
		wantRank := fmt.Sprint(*lb.Rank)
		if *lb.RankCILow == *lb.RankCIHigh {
			wantRank += fmt.Sprintf(" [%d]", *lb.RankCILow)
		} else {
			wantRank += fmt.Sprintf(" [%d–%d]", *lb.RankCILow, *lb.RankCIHigh)
		}
		if row[3] != wantRank {
			t.Errorf("%s rank cell %q, want %q", row[1], row[3], wantRank)
		}
		wantTies := "none"
		if len(lb.TiedWith) > 0 {
			wantTies = "= " + strings.Join(lb.TiedWith, ", ")
		}
		if row[9] != wantTies {
			t.Errorf("%s ties cell %q, want %q", row[1], row[9], wantTies)
		}
	}
	if !strings.Contains(rows[1][9], "lopsided") {
		t.Errorf("middling and lopsided should be a statistical tie in this fixture: %q", rows[1][9])
	}
	legend := evalJS[string](t, ctx, `document.querySelector('[data-testid="lb-legend"]').textContent`)
	for _, want := range []string{"Score = the mean of the model’s positive and negative pass rates (results.json leaderboard.score); rows are ordered by it",
		"Statistically tied", "cluster-score interval, the track’s metrics as fixed strata", "cluster-score interval (base scenario = unit; sized for 95 % in simulation"} {
		if !strings.Contains(legend, want) {
			t.Errorf("legend lacks %q: %s", want, legend)
		}
	}
}

func assertFewClustersWarning(t *testing.T, ctx context.Context) {
	t.Helper()
	if !visible(t, ctx, "#lb-warn") {
		t.Fatal("few-clusters warning not visible")
	}
	txt := evalJS[string](t, ctx, `document.getElementById('lb-warn').textContent`)
	for _, want := range []string{"Few base scenarios",
		"only 8 base scenarios: the interval is wide and rests on few independent scenarios (10+ recommended) — steady (positive)",
		"only 4 base scenarios: the interval is wide"} {
		if !strings.Contains(txt, want) {
			t.Errorf("warning lacks %q: %s", want, txt)
		}
	}
	// Each headline cell names n and scenarios and carries the mark.
	cell := evalJS[[]string](t, ctx, `(function(){var r=document.querySelector('#lb-table tr[data-model="steady"]'); return [r.cells[6].textContent, r.cells[7].textContent, r.cells[6].title]})()`)
	if !strings.HasSuffix(cell[0], "⚠") || cell[1] != "16 (4)" || !strings.Contains(cell[2], stats.MethodClusterScore) || !strings.Contains(cell[2], "4 base scenarios") {
		t.Errorf("steady negative cell %q", cell)
	}
}

func assertPairwise(t *testing.T, ctx context.Context, res []results.ModelResult) {
	t.Helper()
	if !visible(t, ctx, `[data-testid="pairwise"]`) {
		t.Fatal("pairwise table not visible")
	}
	pairRows := func() [][]string {
		return evalJS[[][]string](t, ctx, `[...document.querySelectorAll('#pw tbody tr')].map(tr => [...tr.cells].map(c => c.textContent))`)
	}
	rows := pairRows()
	if len(rows) != 6 { // 4 models: 6 pairs on the leaderboard comparison
		t.Fatalf("pairwise rows %q", rows)
	}
	for _, row := range rows {
		var p *results.Pairwise
		for _, x := range resultOf(t, res, row[0]).Pairwise {
			if x.Other == row[1] && x.Track == "leaderboard" {
				p = &x
			}
		}
		if p == nil {
			t.Fatalf("row %q not in results.json", row)
		}
		want := []string{row[0], row[1], "Score (mean of both tracks)",
			ppText(p.Diff) + " [" + ppText(p.CILow) + ", " + ppText(p.CIHigh) + "]", fmt.Sprint(p.NClusters)}
		if strings.Join(row[:5], "|") != strings.Join(want, "|") {
			t.Errorf("pairwise row %q, want %q", row[:5], want)
		}
		// Result: significant, or a tie exactly when tied_with lists it.
		if p.Significant != strings.HasSuffix(row[8], "(significant)") || (row[8] == "tie") == p.Significant ||
			(row[8] == "tie") != slices.Contains(resultOf(t, res, row[0]).Leaderboard.TiedWith, row[1]) {
			t.Errorf("row %q: significant=%v", row, p.Significant)
		}
		if row[7] != fmtPText(*p.QValue) {
			t.Errorf("row %q: q cell, want %s", row, fmtPText(*p.QValue))
		}
		if *p.Diff < 0 {
			t.Errorf("row %q: pairs should read from the higher-scored model's side", row)
		}
	}
	if got := rows[0][0] + "/" + rows[0][1]; got != "steady/middling" {
		t.Errorf("first pair %s, want steady/middling (score order)", got)
	}
	note := evalJS[string](t, ctx, `document.getElementById('pw-note').textContent`)
	if !strings.Contains(note, "Holm within each family") || !strings.Contains(note, "the interval excludes 0 exactly when p < 0.05") {
		t.Errorf("pairwise note does not name the correction and families: %s", note)
	}
	setSelect(t, ctx, "pw-key", "m01")
	if rows := pairRows(); len(rows) != 6 || !strings.HasPrefix(rows[0][2], "m01") || rows[0][4] != "4 ⚠" {
		t.Errorf("per-metric comparison rows %q", rows)
	}
	setSelect(t, ctx, "pw-key", "")
	clickSel(t, ctx, "#pw-sig")
	for _, r := range pairRows() {
		if !strings.HasSuffix(r[8], "(significant)") {
			t.Errorf("significant-only filter shows %q", r)
		}
	}
	clickSel(t, ctx, "#pw-sig")
}

func assertGapTestsAndPanels(t *testing.T, ctx context.Context) {
	t.Helper()
	gaps := evalJS[string](t, ctx, `(document.querySelector('[data-testid="gap-tests"]')||{}).textContent||''`)
	for _, want := range []string{"Paired tests (demographic_gaps)", "one test over scenarios (sign-flip", "Holm within each family", "q (FDR)",
		"Child or teenager (6-17) vs Adult (18+)", "McNemar p (reference)"} {
		if !strings.Contains(gaps, want) {
			t.Errorf("gap tests lack %q", want)
		}
	}
	panel := evalJS[string](t, ctx, `(document.querySelector('[data-testid="panels"]')||{}).textContent||''`)
	for _, want := range []string{"panel (every verdict)", "judge-1", "judge-3", "48 rows, 0 split, 0 without a majority"} {
		if !strings.Contains(panel, want) {
			t.Errorf("panel table lacks %q", want)
		}
	}
	agree := evalJS[string](t, ctx, `(document.querySelector('[data-testid="agreement"]')||{}).textContent||''`)
	if !strings.Contains(agree, "Samples α") || !strings.Contains(agree, "Judges κ") {
		t.Errorf("agreement table: %.200s", agree)
	}
}

// fmtPText is app.js's fmtP: 3 decimals, or 1 significant digit in
// exponent form below 0.001 ("9.8e-4").
func fmtPText(p float64) string {
	if p < 0.001 {
		mant, exp, _ := strings.Cut(strconv.FormatFloat(p, 'e', 1, 64), "e")
		n, _ := strconv.Atoi(exp)
		return mant + "e" + strconv.Itoa(n)
	}
	return strconv.FormatFloat(p, 'f', 3, 64)
}

// assertVariance checks the "Where the variance comes from" section
// against results.json's variance_components: one row per model and rate
// (each track, each metric), each component's share and variance as the
// file has them, "—" where the file has null.
func assertVariance(t *testing.T, ctx context.Context, res []results.ModelResult) {
	t.Helper()
	if !visible(t, ctx, `[data-testid="variance"]`) {
		t.Fatal("variance table not visible")
	}
	rows := evalJS[[][]string](t, ctx, `[...document.querySelectorAll('[data-testid="variance"] tbody tr')].map(tr => [tr.dataset.model, tr.dataset.scope, ...[...tr.cells].map(c => c.textContent)])`)
	want := 0
	for _, r := range res {
		vc := r.VarianceComponents
		if vc == nil {
			t.Fatalf("%s: no variance_components", r.TargetModel)
		}
		want += len(vc.ByMetric)
		for _, s := range []*results.VarianceSplit{vc.Positive, vc.Negative} {
			if s != nil {
				want++
			}
		}
	}
	if len(rows) != want {
		t.Fatalf("%d variance rows, want %d", len(rows), want)
	}
	for _, row := range rows {
		vc := resultOf(t, res, row[0]).VarianceComponents
		var s results.VarianceSplit
		switch row[1] {
		case "positive":
			s = *vc.Positive
		case "negative":
			s = *vc.Negative
		default:
			s, _ = vc.ByMetric.Get(row[1])
		}
		cells := row[2:]
		if cells[2] != pctText(s.Rate) || !strings.HasPrefix(cells[3], fmt.Sprint(s.Scenarios)) {
			t.Errorf("%s %s: rate/scenarios %q", row[0], row[1], cells[:4])
		}
		for i, c := range []results.VarianceComponent{s.Scenario, s.Variant, s.Sample, s.Judge, s.Residual} {
			got := cells[4+i]
			switch {
			case c.Variance == nil:
				if got != "—" {
					t.Errorf("%s %s component %d: %q, want —", row[0], row[1], i, got)
				}
			case c.Share != nil:
				if w := jsFixed(*c.Share*100, 0) + "% " + jsFixed(*c.Variance, 3); got != w {
					t.Errorf("%s %s component %d: %q, want %q", row[0], row[1], i, got, w)
				}
			}
		}
	}
}
