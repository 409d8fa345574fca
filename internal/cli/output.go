package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/rukh-cli/rukh/internal/core/admin"
	"github.com/rukh-cli/rukh/internal/exitcode"
	"github.com/rukh-cli/rukh/internal/release/descriptor"
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

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// reportDescriptorErrors prints every descriptor problem inside err the
// way `ext validate` does.
func reportDescriptorErrors(f *Factory, what string, err error) error {
	var errs descriptor.Errors
	if !errors.As(err, &errs) {
		return err
	}
	fmt.Fprintf(f.IO.ErrOut, "%s: %s is not a valid release: %d problem%s\n", f.Name, what, len(errs), plural(len(errs)))
	for _, e := range errs {
		fmt.Fprintf(f.IO.ErrOut, "  %s\n", e)
	}
	return &ExitError{Status: exitcode.Failed, Err: err, Reported: true}
}

func shortDigest(d string) string {
	if len(d) > len("sha256:")+12 {
		return d[:len("sha256:")+12]
	}
	return d
}
