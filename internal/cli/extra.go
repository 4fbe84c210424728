package cli

import (
	"encoding/json"
	"io"

	"github.com/spf13/cobra"
)

// addExtraCommands registers the commands beyond the five stages.
func addExtraCommands(root *cobra.Command, g *globals) {
	root.AddCommand(newValidateCmd(g), newCompareCmd(g), newMergeCmd(g), newPlanCmd(g), newItemsCmd(g))
	root.AddCommand(newExportCmd(g))
	root.AddCommand(newCalibrateCmd(g))
	root.AddCommand(newViewCmd(g))
	root.AddCommand(newStudyCmd(g), newPublishCmd(g))
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
