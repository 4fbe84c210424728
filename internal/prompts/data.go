package prompts

import "github.com/impactbench/impactbench/internal/artifacts"

// The data structs below are the complete set of variables each template may
// use. An override that references anything else fails in Load, not halfway
// through a paid run.

// GenMetricsData feeds gen_metrics_system and gen_metrics_user.
type GenMetricsData struct {
	BenchmarkName   string
	Description     string
	UserContext     string // benchmark.yaml scenario.user_context ("" if absent)
	ImplicitContext string // benchmark.yaml scenario.implicit_context ("" if absent)
	Count           int    // suggested number of metrics; 0 lets the model decide
}

// MetricData is a metric as the scenario generator sees it.
type MetricData struct {
	ID         string
	Name       string
	Type       string // "positive" | "negative"
	Negative   bool   // Type == "negative": the behaviour is the failure
	Definition string
	Examples   []string
}

// GenScenariosData feeds gen_scenarios.
type GenScenariosData struct {
	BenchmarkName        string
	BenchmarkDescription string
	UserContext          string
	ImplicitContext      string
	Metric               MetricData
	N                    int // scenarios to write in this call
	Turns                int // conversation length; landmark turns must be 1..Turns
	MaxLandmarks         int
	// Existing lists the user goals of scenarios already accepted for this
	// metric (later rounds only), so the model writes different ones.
	Existing []string
}

// Attr is one demographic axis value.
type Attr struct {
	Axis  string
	Value string
}

// ExpandData feeds expand_demographic.
type ExpandData struct {
	Persona         string // the neutral base persona
	UserGoal        string
	LatentGoal      string
	Landmarks       []artifacts.Landmark
	Demographic     []Attr
	DemographicText string // "age: Adult (18+), gender: female"
	Turns           int
	MaxLandmarks    int
}

// UserMetricData is what the simulated user knows about the metric it probes.
type UserMetricData struct {
	Name string
	// Checks is the first line of the definition, ending in one period.
	Checks string
	// Negative: the assistant fails when the behaviour is present; otherwise
	// it fails when the behaviour is absent.
	Negative bool
}

// UserSystemData feeds user_system (the simulated user's system prompt).
type UserSystemData struct {
	Persona    string
	UserGoal   string
	LatentGoal string
	Metric     UserMetricData
	Turns      int
	// Landmarks is true when instructions arrive one turn at a time (in the
	// turn prompts); Plan is then empty.
	Landmarks bool
	// Plan holds every landmark when Landmarks is false: the whole scenario up front.
	Plan        []artifacts.Landmark
	Perfunctory bool
}

// UserTurnData feeds user_turn_first and user_turn_next.
type UserTurnData struct {
	Turn      int
	Turns     int
	Landmarks bool // per-turn instructions are on
	// ReplyJSON is the assistant's latest reply (user_turn_next only) as one
	// line of JSON, {"role":"assistant","content":"…"} (see EncodeMessage):
	// model text, so it reaches the simulated user only in that container.
	ReplyJSON string
	// Instruction is this turn's landmark instruction(s), "" if none or if
	// Landmarks is false.
	Instruction string
}

// UserAgainData feeds user_turn_again, added to the turn prompt when the
// simulated user's reply failed a turn check and it is asked again.
type UserAgainData struct {
	Turn int
	// Problem is what the check found: our words, with any piece of the
	// reply it names Go-quoted.
	Problem string
	// ReplyJSON is the rejected reply (cut short when long) as one line of
	// JSON, {"role":"user","content":"…"}: model text, shown only in that
	// container.
	ReplyJSON string
}

// JudgeData feeds judge_system and judge_user. It deliberately has no field
// for the metric name, type, scenario or model: the judge must not see them.
type JudgeData struct {
	Definition string
	Examples   []string // empty unless examples are shown to judges
	// TranscriptJSON is the conversation as EncodeTranscript writes it: a
	// JSON array, one {"role","content"} object per line. There is no raw
	// form of the transcript to put in a prompt.
	TranscriptJSON string
}

// JudgeEvidenceData feeds judge_evidence_again, the follow-up to a verdict
// whose evidence was not found. It carries only what the judge wrote.
type JudgeEvidenceData struct {
	// Missing lists the judge's quotes found in no assistant message, each
	// as a JSON string (quoted and escaped: they may hold anything).
	Missing []string
	// Short lists, the same way, the quotes too short to be evidence
	// (artifacts.QuoteTooShort); they are not in Missing.
	Short []string
	// Unquoted: the verdict is "present" but quotes nothing.
	Unquoted bool
}

// LandmarkCheckData feeds landmark_check, the audit of a conversation's
// simulated user.
type LandmarkCheckData struct {
	Persona        string
	UserGoal       string
	LatentGoal     string // the hidden goal the user was to pursue without stating it
	Landmarks      []artifacts.Landmark
	UserTurns      int    // messages the simulated user actually sent
	TranscriptJSON string // as in JudgeData
}
