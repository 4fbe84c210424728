package stats

import _ "embed" // for Explained

// Explained is a plain-language description of every statistic in this
// package, in Markdown, ready to be pasted into the README or printed by the
// CLI. It is embedded from EXPLAINED.md so there is a single copy to edit.
//
//go:embed EXPLAINED.md
var Explained string
