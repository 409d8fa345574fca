package cli

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"syscall"

	"github.com/rukh-cli/rukh/internal/exitcode"
	"github.com/rukh-cli/rukh/thin"
	"github.com/spf13/cobra"
)

// Execute builds the command tree, runs args through it and returns the
// exit status. Errors are printed to f.IO.ErrOut, once.
func Execute(ctx context.Context, f *Factory, args []string) int {
	// A command line of one extension command needs none of the
	// built-ins (no route starts with one's name): they are built only
	// for the others, and a call through rukhd does not pay for them.
	root := newRoot(f)
	failed := root
	lone, err := addExtensions(ctx, f, root, args)
	if f.releaseStore != nil {
		defer f.releaseStore() // a call that never began
	}
	if !lone && !addBuiltins(f, root) {
		// The one-shot core has no built-in commands: the whole core
		// runs this command line, in this process, nothing of it run.
		return thin.ExecWholeCore(f.Name, args)
	}
	if err == nil {
		failed, err = unknownCommand(root, args)
	}
	if err == nil && f.Ready != nil {
		f.Ready()
	}
	if err == nil {
		root.SetArgs(args)
		failed, err = root.ExecuteContextC(ctx)
	}
	if err == nil {
		return exitcode.OK
	}
	var te *thin.Error
	if errors.Is(err, syscall.EPIPE) && !errors.As(err, &te) { // not the daemon's connection
		// The reader went away (`rukh … | head`): end quietly, as a
		// process killed by SIGPIPE would.
		return exitcode.BrokenPipe
	}
	var ee *ExitError
	if !errors.As(err, &ee) || !ee.Reported {
		fmt.Fprintf(f.IO.ErrOut, "%s: %s\n", f.Name, safeLines(err.Error()))
		sayDiskHint(f, err)
		var ue *UsageError
		if errors.As(err, &ue) {
			path := f.Name
			if failed != nil {
				path = failed.CommandPath()
			}
			fmt.Fprintf(f.IO.ErrOut, "Run '%s --help' for usage.\n", path)
		}
	}
	return exitStatus(err)
}

// unknownCommand refuses a command line whose word after a command group
// (the root included) names none of its commands, before cobra parses
// flags that command would have taken (`rukh profle apply -f p.json` and
// `rukh deploy stats --env stage` are misspelt commands, not unknown
// flags), and says which commands were likely meant: the group's own
// Args says so (noArgsGroup). `help WORDS` is checked as WORDS.
func unknownCommand(root *cobra.Command, args []string) (*cobra.Command, error) {
	if len(args) == 0 || strings.HasPrefix(args[0], "-") || strings.HasPrefix(args[0], "__") {
		return root, nil
	}
	// cobra adds these when it executes; Find must know them now.
	root.InitDefaultHelpCmd()
	root.InitDefaultCompletionCmd()
	if args[0] == "help" && len(args) > 1 {
		// `help WORDS` is refused as WORDS would be: cobra's help shows
		// the root's page for words that name nothing.
		return unknownCommand(root, args[1:])
	}
	c, rest, err := root.Find(args)
	if err != nil || !c.HasSubCommands() || c.Args == nil || len(rest) == 0 || strings.HasPrefix(rest[0], "-") {
		return root, nil
	}
	err = c.Args(c, rest[:1])
	var ue *UsageError
	if err != nil && !errors.As(err, &ue) {
		err = &UsageError{err}
	}
	return c, err
}

// didYouMean is cobra's suggestions for a misspelt subcommand of c, as a
// sentence to append, or "".
func didYouMean(c *cobra.Command, word string) string {
	if c.SuggestionsMinimumDistance <= 0 {
		c.SuggestionsMinimumDistance = 2 // cobra's own default, which only its error path sets
	}
	s := c.SuggestionsFor(word)
	if len(s) == 0 {
		return ""
	}
	return "; did you mean " + strings.Join(quoteAll(s), " or ") + "?"
}

func quoteAll(s []string) []string {
	out := make([]string, len(s))
	for i, x := range s {
		out[i] = strconv.Quote(x)
	}
	return out
}

// NewRoot returns the root command with the built-in commands (none in
// the one-shot core).
func NewRoot(f *Factory) *cobra.Command {
	root := newRoot(f)
	addBuiltins(f, root)
	return root
}

// newRoot is the root command without its children.
func newRoot(f *Factory) *cobra.Command {
	root := &cobra.Command{
		Use:   f.Name,
		Short: "Run trusted extension commands, for people and for agents",
		Long: f.Name + ` runs installed extension commands. Each command is declared once
and presented twice: here as a subcommand, and to AI agents as an MCP tool
where the owner's profile exposes it.`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetIn(f.IO.In)
	root.SetOut(f.IO.Out)
	root.SetErr(f.IO.ErrOut)
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return &UsageError{err} })
	root.Args = func(cmd *cobra.Command, args []string) error {
		if len(args) > 0 {
			return &UsageError{fmt.Errorf("unknown command %q%s", args[0], didYouMean(cmd, args[0]))}
		}
		return nil
	}
	root.RunE = func(cmd *cobra.Command, _ []string) error { return cmd.Help() }
	root.AddGroup(&cobra.Group{ID: extensionGroup, Title: "Extension commands:"})
	return root
}

// noArgsGroup makes a group command print its help when run bare and
// reject unknown subcommands as usage errors.
func noArgsGroup(cmd *cobra.Command) *cobra.Command {
	cmd.Args = func(c *cobra.Command, args []string) error {
		if len(args) > 0 {
			return &UsageError{fmt.Errorf("unknown command %q for %q%s", args[0], c.CommandPath(), didYouMean(c, args[0]))}
		}
		return nil
	}
	cmd.RunE = func(c *cobra.Command, _ []string) error { return c.Help() }
	return cmd
}
