package cli

import "github.com/spf13/cobra"

// addExtraCommands registers the commands beyond the five stages.
func addExtraCommands(root *cobra.Command, g *globals) {}
