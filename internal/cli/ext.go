//go:build !rukh_oneshot

package cli

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/rukh-cli/rukh/internal/core/admin"
	"github.com/rukh-cli/rukh/internal/exitcode"
	"github.com/rukh-cli/rukh/internal/release/descriptor"
	"github.com/rukh-cli/rukh/internal/release/trust"
	"github.com/spf13/cobra"
)

func newExtCmd(f *Factory) *cobra.Command {
	cmd := noArgsGroup(&cobra.Command{
		Use:   "ext",
		Short: "Validate, pack and install extension releases",
	})
	cmd.AddCommand(
		newExtValidateCmd(f, nil),
		newExtPackCmd(f),
		newExtNewCmd(f),
		newExtDevCmd(f),
		newExtInstallCmd(f),
		newExtPublishCmd(f),
		newExtOutdatedCmd(f),
		newExtUpgradeCmd(f),
		newExtListCmd(f),
		newExtShowCmd(f),
		newExtRefCmd(f, "remove PACKAGE[@VERSION]|sha256:HEX", "Uninstall a release (deactivating it if active)",
			removeRelease),
		newExtRefCmd(f, "activate PACKAGE[@VERSION]|sha256:HEX", "Make an installed release its package's active version", (*admin.Admin).Activate),
		newExtRefCmd(f, "deactivate PACKAGE", "Remove a package's commands from the CLI and MCP; keep it installed", (*admin.Admin).Deactivate),
	)
	return cmd
}

// ValidateOptions are the inputs of `ext validate`.
type ValidateOptions struct {
	IO   IOStreams
	Dir  string // as the user typed it, for messages
	Path string // Dir made absolute
	JSON bool
}

func newExtValidateCmd(f *Factory, runF func(*ValidateOptions) error) *cobra.Command {
	opts := &ValidateOptions{IO: f.IO}
	cmd := &cobra.Command{
		Use:   "validate DIR",
		Short: "Check an extension release directory and list its commands",
		Long: `Check the release in DIR: its rukh-extension.json against every rule of its
format, and each command's program inside DIR. A valid release prints its
command table and exits 0; an invalid one prints every problem with its
code and JSON pointer to stderr (or in the JSON) and exits 1.`,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) != 1 {
				return &UsageError{fmt.Errorf("ext validate takes exactly one release directory, got %d arguments", len(args))}
			}
			return nil
		},
		RunE: func(_ *cobra.Command, args []string) error {
			opts.Dir, opts.Path = args[0], f.Abs(args[0])
			if runF != nil {
				return runF(opts)
			}
			return validateRun(opts)
		},
	}
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "print the verdict as JSON on stdout")
	return cmd
}

// validateReport is the JSON form of a verdict.
type validateReport struct {
	Valid     bool                `json:"valid"`
	Dir       string              `json:"dir"`
	Schema    string              `json:"schema,omitempty"`
	Package   string              `json:"package,omitempty"`
	Version   string              `json:"version,omitempty"`
	Publisher string              `json:"publisher,omitempty"`
	Commands  []validateCommand   `json:"commands"`
	Errors    []*descriptor.Error `json:"errors"`
}

type validateCommand struct {
	Identity string              `json:"identity"`
	Path     []string            `json:"path"`
	Aliases  [][]string          `json:"aliases"`
	Summary  string              `json:"summary"`
	Mapping  string              `json:"mapping"`
	Result   string              `json:"result,omitempty"`
	Eligible bool                `json:"eligible"`
	Reasons  []descriptor.Reason `json:"reasons"`
}

func validateRun(opts *ValidateOptions) error {
	d, err := descriptor.Load(opts.Path)
	var errs descriptor.Errors
	if err != nil && !errors.As(err, &errs) {
		return err
	}
	if err == nil {
		// And what ext pack would sign of DIR: the files its ignore list
		// keeps (the programs among them), each one a release may hold.
		var te *trust.Error
		if _, merr := trust.BuildManifest(opts.Path); errors.As(merr, &te) {
			msg := te.Message
			if te.Path != "" {
				msg = fmt.Sprintf("%q: %s", te.Path, msg)
			}
			errs = descriptor.Errors{{Code: descriptor.Code(te.Code), Message: msg}}
			err = errs
		} else if merr != nil {
			return merr
		}
	}
	rep := validateReport{Valid: err == nil, Dir: opts.Dir, Commands: []validateCommand{}, Errors: errs}
	if rep.Errors == nil {
		rep.Errors = descriptor.Errors{}
	}
	if d != nil {
		rep.Schema, rep.Package, rep.Version, rep.Publisher = d.Schema, d.Package, d.Version, d.Publisher
		rep.Commands = commandRows(d)
	}
	if opts.JSON {
		if err := writeJSON(opts.IO.Out, rep); err != nil {
			return err
		}
	} else if rep.Valid {
		printCommandTable(opts.IO.Out, d)
	} else {
		fmt.Fprintf(opts.IO.ErrOut, "%s is not a valid release: %d problem%s\n", opts.Dir, len(errs), plural(len(errs)))
		tw := tabwriter.NewWriter(opts.IO.ErrOut, 0, 4, 2, ' ', 0)
		for _, e := range errs {
			path := e.Path
			if path == "" {
				path = "/"
			}
			fmt.Fprintf(tw, "  %s\t%s\t%s\n", path, e.Code, e.Message)
		}
		tw.Flush()
	}
	if !rep.Valid {
		return &ExitError{Status: exitcode.Failed, Err: errs, Reported: true}
	}
	return nil
}

// commandRows is the JSON form of a descriptor's command table.
func commandRows(d *descriptor.Descriptor) []validateCommand {
	rows := []validateCommand{}
	for _, c := range d.Commands {
		vc := validateCommand{
			Identity: c.Identity, Path: c.Path, Aliases: c.Aliases, Summary: c.Summary,
			Mapping: string(c.Execute.Mapping), Eligible: c.Eligibility.Eligible,
			Reasons: c.Eligibility.Reasons,
		}
		if vc.Aliases == nil {
			vc.Aliases = [][]string{}
		}
		if vc.Reasons == nil {
			vc.Reasons = []descriptor.Reason{}
		}
		if r := c.Execute.Result; r != nil {
			vc.Result = string(r.Kind)
		}
		rows = append(rows, vc)
	}
	return rows
}

func printCommandTable(w io.Writer, d *descriptor.Descriptor) {
	fmt.Fprintf(w, "%s %s (%s, publisher %s): valid, %d command%s\n\n",
		d.Package, d.Version, d.Schema, d.Publisher, len(d.Commands), plural(len(d.Commands)))
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "IDENTITY\tROUTE\tALIASES\tMACHINE")
	for _, c := range d.Commands {
		aliases := make([]string, len(c.Aliases))
		for i, a := range c.Aliases {
			aliases[i] = strings.Join(a, " ")
		}
		al := strings.Join(aliases, ", ")
		if al == "" {
			al = "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", c.Identity, c.Route(), al, c.Eligibility)
	}
	tw.Flush()
}

// removeRelease is `ext remove`: what it removed is in the result.
func removeRelease(a *admin.Admin, ref string) (*admin.Result, error) {
	res, _, err := a.Remove(ref)
	return res, err
}
