package cli

import (
	"encoding/json"
	"fmt"
	"io"

	"github.com/rukh-cli/rukh/internal/core/admin"
	"github.com/spf13/cobra"
)

// exactArgs requires n positional arguments, or fails as a usage error
// saying what was expected.
func exactArgs(n int, what string) cobra.PositionalArgs {
	return func(c *cobra.Command, args []string) error {
		if n == 0 && len(args) > 0 && c.HasSubCommands() {
			// A command that runs itself and has commands too (mcp and
			// mcp config): its first argument is a misspelt command.
			return &UsageError{fmt.Errorf("unknown command %q for %q%s", args[0], c.CommandPath(), didYouMean(c, args[0]))}
		}
		if len(args) != n {
			return &UsageError{fmt.Errorf("%s (got %d arguments)", what, len(args))}
		}
		return nil
	}
}

// printChange reports a published owner change on stderr: the data of an
// owner command is its effect, not output to pipe.
func printChange(f *Factory, res *admin.Result, what string) {
	if !res.Changed {
		fmt.Fprintf(f.IO.ErrOut, "%s: nothing changed (revision %d)\n", what, res.New)
		return
	}
	fmt.Fprintf(f.IO.ErrOut, "%s: revision %d → %d\n", what, res.Old, res.New)
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
