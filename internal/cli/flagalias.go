package cli

import (
	"fmt"

	"github.com/spf13/pflag"
)

// deprecatedAlias is the value of flag name given either as itself or as
// its old spelling old (a hidden flag): the old one still works and prints
// a note on stderr. pflag's MarkDeprecated is not used because cobra
// prints its note where the command's output goes — stdout here, which
// must stay one JSON object under --json. Both spellings with different
// values is a usage error.
func deprecatedAlias(g *globals, fl *pflag.FlagSet, old, name, oldVal, val string) (string, error) {
	if !fl.Changed(old) {
		return val, nil
	}
	if fl.Changed(name) && val != oldVal {
		return "", usagef("--%s %q and --%s %q: --%s is the old spelling of --%s; give one", old, oldVal, name, val, old, name)
	}
	use := "--" + name
	if sh := fl.Lookup(name).Shorthand; sh != "" {
		use = "-" + sh + "/" + use
	}
	if !g.Quiet { // a note: --quiet's help promises none
		fmt.Fprintf(g.stderr, "impactbench: --%s is deprecated and will be removed: use %s\n", old, use)
	}
	return oldVal, nil
}
