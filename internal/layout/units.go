package layout

import (
	"strconv"
	"strings"
)

// A unit is what the call store keeps one row's calls and result under:
// a slash-separated name whose parts are safe file names. The kinds:
//
//	gen_metrics/metrics                      the metrics of a benchmark
//	gen_scenarios/<metric>                   a metric's base scenarios and variants
//	<target>/sim/<scenario>__s<sample>       a conversation
//	<target>/<eval dir>/<scenario>__s<sample> a verdict ("eval", or "eval-<panel>")
//	<target>/human/<conv_id>                 a person's game (the target's turns)
//	<target>/human-eval/<conv_id>            the verdict on a person's game
//	<target>/human-audit/<conv_id>           the audit of a person's game
//	openings/<scenario>__s<sample>           the simulated user's opening, shared by every target
//
// and, beside the units, the batch states of a target's batched calls
// (<target>/sim-batch/<role>.json, <target>/<eval dir>-batch/<judge>.json).
const (
	GenMetricsDir   = "gen_metrics"
	GenMetricsUnit  = GenMetricsDir + "/metrics"
	GenScenariosDir = "gen_scenarios"
	SimDir          = "sim"
	EvalDir         = "eval"
	HumanUnitDir    = "human"
	HumanEvalDir    = "human-eval"
	HumanAuditDir   = "human-audit"
	OpeningsDir     = "openings"
	batchSuffix     = "-batch"
	sampleSep       = "__s"
)

// Kind is what a unit holds.
type Kind int

// The kinds of unit.
const (
	KindUnknown Kind = iota
	KindGenMetrics
	KindGenScenarios
	KindSim
	KindEval
	KindHuman
	KindHumanEval
	KindHumanAudit
)

// Unit is a unit name's parts (those its kind has).
type Unit struct {
	Kind   Kind
	Target string // a target's units
	Dir    string // the unit's directory under its target ("sim", "eval", "eval-<panel>", …)
	Metric string // gen_scenarios
	ID     string // the scenario id (sim, eval) or conv_id (human, human-eval, human-audit)
	Sample int    // sim, eval
}

// Name builds the unit's name (SafeName on every part taken from a file).
func (u Unit) Name() string {
	switch u.Kind {
	case KindGenMetrics:
		return GenMetricsUnit
	case KindGenScenarios:
		return GenScenariosDir + "/" + SafeName(u.Metric)
	case KindSim, KindEval:
		return SafeName(u.Target) + "/" + u.Dir + "/" + RowFile(u.ID, u.Sample)
	case KindHuman, KindHumanEval, KindHumanAudit:
		return SafeName(u.Target) + "/" + u.Dir + "/" + SafeName(u.ID)
	}
	return ""
}

// RowFile is a conversation's or verdict's name within its directory:
// <scenario>__s<sample>.
func RowFile(scenarioID string, sample int) string {
	return SafeName(scenarioID) + sampleSep + strconv.Itoa(sample)
}

// SimUnit names a target's conversation of a scenario and sample.
func SimUnit(target, scenarioID string, sample int) string {
	return Unit{Kind: KindSim, Target: target, Dir: SimDir, ID: scenarioID, Sample: sample}.Name()
}

// OpeningUnit names the calls of the simulated user's first turn of a
// scenario variant and sample, which every target's conversation of that
// row shares (generation.independent_openings off). It has no result.
func OpeningUnit(scenarioID string, sample int) string {
	return OpeningsDir + "/" + RowFile(scenarioID, sample)
}

// EvalUnit names the verdict of a target's conversation; dir is the
// panel's directory (EvalUnitDir).
func EvalUnit(target, dir, scenarioID string, sample int) string {
	return Unit{Kind: KindEval, Target: target, Dir: dir, ID: scenarioID, Sample: sample}.Name()
}

// EvalUnitDir is where a panel's verdicts go under a target: "eval" for
// the configured judges, "eval-<panel dir>" for an alternative panel
// (evaluate --judge: its scores go to runs/<target>/judges/<panel dir>).
func EvalUnitDir(panelDir string) string {
	if panelDir == "" {
		return EvalDir
	}
	return EvalDir + "-" + panelDir
}

// GenScenariosUnit names a metric's scenario generation.
func GenScenariosUnit(metric string) string {
	return Unit{Kind: KindGenScenarios, Metric: metric}.Name()
}

// HumanUnit names the target's side of a person's game.
func HumanUnit(target, convID string) string {
	return Unit{Kind: KindHuman, Target: target, Dir: HumanUnitDir, ID: convID}.Name()
}

// HumanEvalUnit names the verdict on a person's game.
func HumanEvalUnit(target, convID string) string {
	return Unit{Kind: KindHumanEval, Target: target, Dir: HumanEvalDir, ID: convID}.Name()
}

// HumanAuditUnit names the audit of a person's game (the simulated
// user's audit, asked of the person's side).
func HumanAuditUnit(target, convID string) string {
	return Unit{Kind: KindHumanAudit, Target: target, Dir: HumanAuditDir, ID: convID}.Name()
}

// TargetDir is the directory of a target's units of one kind (dir "sim",
// "eval", …) relative to the call store, for listings.
func TargetDir(target, dir string) string { return SafeName(target) + "/" + dir }

// IsTargetDir reports whether a top-level directory of the call store
// holds a target's units (not the generation units, not a hidden one).
func IsTargetDir(name string) bool {
	return name != "" && name != GenMetricsDir && name != GenScenariosDir && !strings.HasPrefix(name, ".")
}

// BatchState is the file (relative to the call store) that remembers a
// target's batch of one role or judge: <target>/<dir>-batch/<name><shard>.json.
func BatchState(target, dir, name string, s Shard) string {
	return SafeName(target) + "/" + dir + batchSuffix + "/" + SafeName(name) + s.Suffix() + ".json"
}

// OpeningBatchState is the file (relative to the call store) that remembers
// the batches of the simulated user's shared openings, one for every target
// of the shard: openings-batch/user<shard>.json. Whichever target's wave
// resumes a killed run finds the openings' batches there.
func OpeningBatchState(s Shard) string {
	return OpeningsDir + batchSuffix + "/user" + s.Suffix() + ".json"
}

// ParseUnit reads a unit name back into its parts; ok is false for a name
// no writer builds.
func ParseUnit(name string) (u Unit, ok bool) {
	if name == GenMetricsUnit {
		return Unit{Kind: KindGenMetrics}, true
	}
	parts := strings.Split(name, "/")
	if len(parts) != 3 {
		if len(parts) == 2 && parts[0] == GenScenariosDir && parts[1] != "" {
			return Unit{Kind: KindGenScenarios, Metric: parts[1]}, true
		}
		return Unit{}, false
	}
	u = Unit{Target: parts[0], Dir: parts[1]}
	switch {
	case parts[0] == "" || parts[2] == "":
		return Unit{}, false
	case u.Dir == HumanUnitDir || u.Dir == HumanEvalDir || u.Dir == HumanAuditDir:
		u.Kind, u.ID = KindHuman, parts[2]
		switch u.Dir {
		case HumanEvalDir:
			u.Kind = KindHumanEval
		case HumanAuditDir:
			u.Kind = KindHumanAudit
		}
		return u, true
	case u.Dir == SimDir:
		u.Kind = KindSim
	case u.Dir == EvalDir || strings.HasPrefix(u.Dir, EvalDir+"-") && !strings.HasSuffix(u.Dir, batchSuffix):
		u.Kind = KindEval
	default:
		return Unit{}, false
	}
	u.ID, u.Sample, ok = ParseRowFile(parts[2])
	return u, ok
}

// ParseRowFile reads <scenario>__s<sample> (RowFile) back.
func ParseRowFile(name string) (scenarioID string, sample int, ok bool) {
	i := strings.LastIndex(name, sampleSep)
	if i <= 0 {
		return "", 0, false
	}
	n, err := strconv.Atoi(name[i+len(sampleSep):])
	if err != nil || n < 0 || strconv.Itoa(n) != name[i+len(sampleSep):] {
		return "", 0, false
	}
	return name[:i], n, true
}

// SafeName is an id's form as a file name in the call store and run
// directories (ids come from files people edit): path separators, ':' and
// control characters become '_', and "", "." and ".." get a leading '_'.
func SafeName(s string) string {
	b := []byte(s)
	for i, c := range b {
		if c == '/' || c == '\\' || c < 0x20 || c == ':' {
			b[i] = '_'
		}
	}
	if len(b) == 0 || string(b) == "." || string(b) == ".." {
		return "_" + string(b)
	}
	return string(b)
}

// RecordKey is the key of a target's phase record in the records file:
// <stage>/<target><shard suffix>, then any sub-parts (the evaluate stage
// adds its scores file's path relative to the run directory, so each
// panel's scores have their own record).
func RecordKey(stage, target string, s Shard, sub ...string) string {
	return strings.Join(append([]string{stage, target + s.Suffix()}, sub...), "/")
}
