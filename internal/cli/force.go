package cli

// Each command's --force has one meaning, said in its help by one sentence
// that is word for word the same wherever the meaning is the same
// (TestForceHelpHasOneMeaning); only the "(here: …)" after it, naming what
// the command redoes or writes, differs. The stage commands' --force is a
// redo and nothing else: it never lets an output shrink. Letting one
// shrink — fewer rows, fewer models, null verdicts where verdicts stood,
// which is refused otherwise — is --accept-fewer, whose help is one
// sentence on every command that has it.
const (
	forceRedo = "redo even what is up to date: every model call made again (stored answers and batches unused) and every output written anew; " +
		"an output with fewer rows, models or verdicts than before is still refused unless --accept-fewer"
	forceOverwrite = "overwrite the files this command writes where they already exist"
	forceReplace   = "ask for new metrics even if benchmark.yaml has some, and write them over the old ones"
	forceCompare   = "compare even when the runs are not comparable (different metrics, judges, settings or prompts); the report marks the comparison as forced"

	acceptFewerHelp = "let an output with fewer rows, fewer models, null verdicts where verdicts stood or unaudited conversations where audited ones stood replace the existing one " +
		"(refused otherwise, with exit 2 and the file unchanged, --force or not); stored answers are reused unless --force"
)

// forceUse is what one command's --force means and where it acts.
type forceUse struct {
	meaning string // one of the force* sentences
	here    string // what it redoes or writes in this command ("": nothing to add)
}

// forceUses lists every command with a --force.
var forceUses = map[string]forceUse{
	"init": {forceOverwrite, "config.yaml, .env.example, benchmarks/example/benchmark.yaml; " +
		"with --study benchmarks/taxonomy.json, nutrition-label.json and models.yaml"},
	"run": {forceRedo, "every phase but gen-metrics: scenarios.json and each target's conversations.json and scores.json, then results.json; " +
		"metrics benchmark.yaml has are kept, gen-metrics --force replaces them"},
	"gen-metrics":   {forceReplace, "the old file is kept as benchmark.yaml.bak-<UTC time>"},
	"gen-scenarios": {forceRedo, "scenarios.json"},
	"simulate":      {forceRedo, "runs/<target>/conversations.json"},
	"evaluate":      {forceRedo, "runs/<target>/scores.json"},
	"validate":      {forceRedo, "the validation run under validation/<role>-<model>/; the main run is never touched"},
	"compare":       {forceCompare, ""},
	"publish": {forceOverwrite, "files at DIR/data/, scenarios/, index.html and site/ that no earlier publish into DIR wrote, " +
		"such as a checkout of impactbench-web, or that were changed since publish wrote them, are refused otherwise " +
		"(a changed file publish no longer writes is then removed); publish then owns them, and nothing else in DIR is touched"},
}

// forceHelp is each command's --force help: its meaning, then where.
var forceHelp = func() map[string]string {
	m := make(map[string]string, len(forceUses))
	for name, u := range forceUses {
		m[name] = u.meaning
		if u.here != "" {
			m[name] += " (here: " + u.here + ")"
		}
	}
	return m
}()
