package cli

// forceHelp is each command's --force, in one place so that each says the
// one thing it does there (TestForceHelpIsSpecific). The stage commands'
// --force starts a phase over: every call made again (stored answers and
// earlier batches are not reused), and the new output replaces the old even
// when it has fewer rows or models or nulls where verdicts stood — the
// refusal that otherwise keeps the old file.
var forceHelp = map[string]string{
	"init": "overwrite the files init writes where they exist (config.yaml, .env.example, benchmarks/example/benchmark.yaml; " +
		"with --study benchmarks/taxonomy.json, nutrition-label.json and models.yaml)",
	"run": "start every phase over except gen-metrics: make every call again (stored answers unused) and replace scenarios.json, " +
		"conversations.json, scores.json and results.json even with fewer rows, fewer models or null verdicts " +
		"(metrics benchmark.yaml has are kept: gen-metrics --force replaces them)",
	"gen-metrics": "ask for new metrics even if benchmark.yaml has some, and write them over the old ones " +
		"(the old file is kept as benchmark.yaml.bak-<UTC time>)",
	"gen-scenarios": "generate every scenario again (stored answers unused) and replace scenarios.json even with fewer rows",
	"simulate": "run every conversation again (stored turns and batches unused) and replace runs/<target>/conversations.json " +
		"even with fewer rows",
	"evaluate": "judge every conversation again (stored verdicts and batches unused) and replace runs/<target>/scores.json " +
		"even with fewer rows or null verdicts where verdicts stood",
	"aggregate": "recompute results.json even when up to date, and write it even when it drops a model or counts fewer rows " +
		"for one than the old file",
	"validate": "start the validation run over under validation/<role>-<model>/ (every call made again, its files replaced " +
		"even with fewer rows); the main run is never touched",
	"compare": "compare even when the runs are not comparable (different metrics, judges, settings or prompts); " +
		"the report marks the comparison as forced",
}
