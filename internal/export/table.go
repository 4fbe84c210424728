// Package export flattens a benchmark's files into tidy tables for pandas,
// R or a spreadsheet, written as CSV, JSON Lines or Parquet.
//
// Two tables exist. The judged table has one row per judged conversation per
// judge, read from every runs/<target>/scores.json and every
// runs/<target>/judges/<label>/scores.json (`evaluate --judge`), joined with
// conversations.json, scenarios.json and the metrics of benchmark.yaml. Its
// columns, in this order (? marks a nullable column):
//
//	benchmark                 string   benchmark directory name
//	target                    string   runs/<target> directory name (the target id)
//	model                     string?  the target's provider model (conversation's run record, else config)
//	metric_id                 string
//	metric_name               string?  null when the metric is not in benchmark.yaml
//	metric_type               string?  positive / negative; null as metric_name
//	base_scenario_id          string   m01_s002 for m01_s002_v01
//	scenario_id               string   the demographic variant's id
//	demo_<axis>               string?  one column per demographic axis of scenarios.json, in axis order
//	sample                    int64    sample index (0-based)
//	conv_id                   string
//	source                    string   simulated, or human: a person played the user (the viewer's Play page, runs/<target>/human/)
//	player                    string?  who played the user (human rows); null for simulated ones
//	status                    string?  completed, user_terminated, error, budget; playing for a human draft; null for legacy rows
//	status_reason             string?  why the conversation ended (errors, early termination)
//	turns                     int64?   user turns in the stored transcript
//	scores_file               string   scores.json or judges/<label>/scores.json, relative to runs/<target>
//	judge                     string?  the judge's label (model id); null when it cannot be known
//	present                   bool?    this judge's verdict: the metric's behaviour is present
//	passed                    bool?    present for positive metrics, its negation for negative ones
//	null_reason               string?  why present is null
//	valid                     bool?    landmark-adherence check of the conversation (null: not checked)
//	conv_cost                 float64? USD of the conversation (simulated user + target); null if unpriced
//	conv_input_tokens         int64?
//	conv_output_tokens        int64?
//	conv_cached_input_tokens  int64?
//	judge_cost                float64? USD of judging the conversation, whole panel, repeated on each judge's row
//	judge_input_tokens        int64?
//	judge_output_tokens       int64?
//	judge_cached_input_tokens int64?
//	repairs                   string?  what it took to read this judge's verdict (the score's or judge's _repairs, joined with "; "); null when its first answer was clean JSON
//	refused                   int64    target replies in the conversation its provider stopped for safety (the score row's refused, distinct indices); 0 when none
//
// Costs repeat on every judge's row of a conversation (and conv_* on every
// scores file's rows): sum them over distinct conv_id (and scores_file).
//
// The messages table (--messages) has one row per transcript message:
//
//	benchmark      string
//	target         string
//	conv_id        string
//	source         string  simulated or human
//	scenario_id    string
//	sample         int64
//	message_index  int64   0-based position in the transcript
//	turn           int64   1-based; a user message and the reply to it share a turn
//	role           string  user or assistant
//	content        string
//
// A target's conversations people played (runs/<target>/human/) follow its
// simulated ones in both tables, source human: a judged one with its
// verdicts (scores_file human/scores.json), one not judged yet — ended, or
// still being played (a draft, status playing) — with null verdicts, so no
// conversation is dropped silently.
//
// Null verdicts are never dropped: they are empty CSV cells, JSON null and
// Parquet nulls. CSV text cells a spreadsheet would run as a formula get a
// leading apostrophe (Neutralise) unless Options.RawCSV. Rows are produced in a fixed order (targets by name, the
// main scores file before judges/ files, file order within a file) and
// streamed to the writer, so memory does not grow with transcripts.
package export

import (
	"strconv"
	"strings"
)

// Kind is a column's value type.
type Kind int

// Column kinds; a value of each is carried in a Row as string, int64,
// float64 or bool.
const (
	String Kind = iota
	Int
	Float
	Bool
)

func (k Kind) String() string {
	switch k {
	case Int:
		return "int64"
	case Float:
		return "float64"
	case Bool:
		return "bool"
	}
	return "string"
}

// Column is one column of a table.
type Column struct {
	Name     string
	Kind     Kind
	Nullable bool
}

// Row is one record: values in column order; nil is null.
type Row []any

// Table names which table an export writes.
type Table string

// Sources of a conversation (the source column).
const (
	SourceSimulated = "simulated"
	SourceHuman     = "human"
)

// The two tables.
const (
	TableJudged   Table = "judged"
	TableMessages Table = "messages"
)

// demoPrefix starts the name of each demographic axis's column.
const demoPrefix = "demo_"

func col(name string, k Kind) Column      { return Column{Name: name, Kind: k} }
func nullable(name string, k Kind) Column { return Column{Name: name, Kind: k, Nullable: true} }

// judgedHead and judgedTail surround the demographic columns.
var (
	judgedHead = []Column{
		col("benchmark", String),
		col("target", String),
		nullable("model", String),
		col("metric_id", String),
		nullable("metric_name", String),
		nullable("metric_type", String),
		col("base_scenario_id", String),
		col("scenario_id", String),
	}
	judgedTail = []Column{
		col("sample", Int),
		col("conv_id", String),
		col("source", String),
		nullable("player", String),
		nullable("status", String),
		nullable("status_reason", String),
		nullable("turns", Int),
		col("scores_file", String),
		nullable("judge", String),
		nullable("present", Bool),
		nullable("passed", Bool),
		nullable("null_reason", String),
		nullable("valid", Bool),
		nullable("conv_cost", Float),
		nullable("conv_input_tokens", Int),
		nullable("conv_output_tokens", Int),
		nullable("conv_cached_input_tokens", Int),
		nullable("judge_cost", Float),
		nullable("judge_input_tokens", Int),
		nullable("judge_output_tokens", Int),
		nullable("judge_cached_input_tokens", Int),
		nullable("repairs", String),
		col("refused", Int),
	}
	messageColumns = []Column{
		col("benchmark", String),
		col("target", String),
		col("conv_id", String),
		col("source", String),
		col("scenario_id", String),
		col("sample", Int),
		col("message_index", Int),
		col("turn", Int),
		col("role", String),
		col("content", String),
	}
)

// JudgedColumns returns the judged table's columns for these demographic
// axes (in axis order).
func JudgedColumns(axes []string) []Column {
	cols := make([]Column, 0, len(judgedHead)+len(axes)+len(judgedTail))
	cols = append(cols, judgedHead...)
	for _, name := range demoColumnNames(axes) {
		cols = append(cols, nullable(name, String))
	}
	return append(cols, judgedTail...)
}

// MessageColumns returns the messages table's columns.
func MessageColumns() []Column { return append([]Column(nil), messageColumns...) }

// demoColumnNames turns axis names into column names every reader accepts
// (letters, digits, underscores: R and pandas attribute access, Parquet
// field names), keeping them distinct.
func demoColumnNames(axes []string) []string {
	out := make([]string, len(axes))
	seen := map[string]bool{}
	for i, a := range axes {
		var b strings.Builder
		b.WriteString(demoPrefix)
		for _, r := range a {
			switch {
			case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '_':
				b.WriteRune(r)
			default:
				b.WriteByte('_')
			}
		}
		name := b.String()
		for n := 2; seen[name]; n++ {
			name = b.String() + "_" + strconv.Itoa(n)
		}
		seen[name] = true
		out[i] = name
	}
	return out
}
