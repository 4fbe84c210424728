package stats

import (
	"strings"
	"testing"
)

// TestExplainedCoversAPI keeps EXPLAINED.md in step with the package: every
// user-facing statistic must be explained for the README.
func TestExplainedCoversAPI(t *testing.T) {
	for _, name := range []string{
		"Wilson", "ClusterBootstrap", "PairedBootstrap", "PassAtKAll", "PassAtK",
		"Unanimity", "McNemarExact", "SignTest", "Holm", "PairwiseMcNemar",
		"BenjaminiHochberg", "RawAgreement", "CohenKappa", "FleissKappa",
		"Spearman", "KendallTauB", "ClusterRate", "ICC", "DesignEffect",
		"ExpectedHalfWidth", "ScenariosNeeded", "ClusterDiff", "StratifiedDiff",
		"SignFlipP", "RankIntervals", "KrippendorffAlpha",
		"Calibrate", "RoganGladen", "RoganGladenInterval", "CombineCorrected", "JudgeHeterogeneity",
		"ExpectedCalibration", "RoganGladenHalfWidth", "MidP",
		"BettingCI", "BettingCS", "VarianceComponents", "Pearson",
		"ScoreInterval", "StratifiedRate", "UntilLook",
	} {
		if !strings.Contains(Explained, "`"+name+"`") {
			t.Errorf("EXPLAINED.md does not mention `%s`", name)
		}
	}
}
