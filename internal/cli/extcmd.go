package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/rukh-cli/rukh/internal/core/invoke"
	"github.com/rukh-cli/rukh/internal/core/local"
	"github.com/rukh-cli/rukh/internal/core/store"
	"github.com/rukh-cli/rukh/internal/exitcode"
	"github.com/rukh-cli/rukh/internal/release/descriptor"
	"github.com/rukh-cli/rukh/internal/release/extproto"
	"github.com/rukh-cli/rukh/internal/release/values"
	"github.com/spf13/cobra"
	"golang.org/x/sys/unix"
)

// isBuiltin reports whether word names one of the root's own commands
// (descriptor.ReservedWords, which no extension route starts with),
// other than the two cobra adds itself: `help WORDS` and `completion`
// are answered with the extension commands in the tree.
func isBuiltin(word string) bool {
	return word != "help" && word != "completion" && slices.Contains(descriptor.ReservedWords, word)
}

// addExtensions adds installed extension commands to root for args. When
// args name one command, only that command is built (one route record
// and one descriptor are read, whatever the catalogue's size), and lone
// says so: the command line needs nothing else in the tree. Otherwise —
// help, completion, a group, a typo — the route index gives a light tree
// of every route's words and summaries, with no descriptor decoded.
func addExtensions(ctx context.Context, f *Factory, root *cobra.Command, args []string) (lone bool, err error) {
	words := args
	completing := len(args) > 0 && strings.HasPrefix(args[0], "__complete")
	if completing {
		words = args[1:]
	}
	if len(words) > 0 && isBuiltin(words[0]) {
		return false, nil
	}
	host, err := f.Host()
	if err != nil {
		return false, err
	}
	helpOnly := len(words) == 0 || words[0] == "help" || words[0] == "--help" || words[0] == "-h"
	// `help WORDS` shows the command WORDS names exactly as `WORDS
	// --help` would: the same command is built, and help never runs it.
	named := words
	if len(words) > 0 && words[0] == "help" {
		named = words[1:]
	}
	var target *invoke.Target
	if (!helpOnly || len(named) < len(words)) && len(named) > 0 && !strings.HasPrefix(named[0], "-") {
		if !helpOnly && !completing {
			// A call will most likely follow: its start runs on one open
			// of the store, let go before its command runs.
			f.releaseStore = host.HoldStore()
		}
		target, _, err = host.Core().Resolve(named)
		switch {
		case errors.Is(err, invoke.ErrNoCommand):
		case err != nil && helpOnly:
			target = nil // said below, where the listing fails the same way
		case err != nil:
			return false, err
		}
	}
	if target != nil && !completing {
		parent := ensureGroups(root, target.Words[:len(target.Words)-1])
		cmd := newExtensionCmd(f, host, target)
		cmd.GroupID = groupFor(parent)
		parent.AddCommand(cmd)
		return true, nil
	}
	routes, err := host.Core().Children(nil)
	if err != nil && helpOnly {
		// The help of the built-in commands needs no store (a daemon of
		// another build may hold it): say what is missing, and show it.
		fmt.Fprintf(f.IO.ErrOut, "%s: extension commands are not listed: %v\n", f.Name, err)
		return false, nil
	}
	if err != nil {
		return false, err
	}
	for _, rt := range routes {
		ws := strings.Fields(rt.Words)
		parent := ensureGroups(root, ws[:len(ws)-1])
		if target != nil && slices.Equal(ws, target.Words) {
			cmd := newExtensionCmd(f, host, target)
			cmd.GroupID = groupFor(parent)
			parent.AddCommand(cmd)
			continue
		}
		ph := placeholder(ws[len(ws)-1], rt)
		ph.GroupID = groupFor(parent)
		parent.AddCommand(ph)
	}
	return false, nil
}

// ensureGroups returns the command at path words under root, creating
// group commands (which list their children) as needed.
func ensureGroups(root *cobra.Command, words []string) *cobra.Command {
	cur := root
	for _, w := range words {
		var next *cobra.Command
		for _, c := range cur.Commands() {
			if c.Name() == w {
				next = c
			}
		}
		if next == nil {
			next = noArgsGroup(&cobra.Command{Use: w, Short: "Commands under " + strings.TrimSpace(cur.CommandPath()+" "+w)})
			next.GroupID = groupFor(cur)
			cur.AddCommand(next)
		}
		cur = next
	}
	return cur
}

const extensionGroup = "extensions"

func groupFor(parent *cobra.Command) string {
	if parent.HasParent() {
		return ""
	}
	return extensionGroup
}

// placeholder stands for a command in help and completion listings.
func placeholder(word string, rt *store.Route) *cobra.Command {
	short := rt.Summary
	if rt.Alias {
		short += " (alias)"
	}
	return &cobra.Command{Use: word, Short: short, DisableFlagParsing: true,
		RunE: func(c *cobra.Command, _ []string) error { return c.Help() }}
}

// stringsFlag collects every value a flag received, as text; typing is
// done by values, never by the flag parser.
type stringsFlag struct {
	vals    *[]string
	boolean bool
}

func (s *stringsFlag) String() string { return "" }
func (s *stringsFlag) Set(v string) error {
	*s.vals = append(*s.vals, v)
	return nil
}
func (s *stringsFlag) Type() string {
	if s.boolean {
		return "bool"
	}
	return "value"
}
func (s *stringsFlag) IsBoolFlag() bool { return s.boolean }

// newExtensionCmd builds the cobra command of one resolved extension
// command: flags and positionals from its declared inputs, typed by
// values when it runs (never by the flag parser, so `--count 1.5` fails
// exactly as MCP {"count": 1.5} does).
func newExtensionCmd(f *Factory, host *local.Host, t *invoke.Target) *cobra.Command {
	c := t.Command
	passthrough := c.Execute.Mapping == descriptor.Passthrough
	var positionals []descriptor.Input
	for _, in := range c.Inputs {
		if in.Positional >= 0 {
			positionals = append(positionals, in)
		}
	}
	slices.SortFunc(positionals, func(a, b descriptor.Input) int { return a.Positional - b.Positional })

	use := t.Words[len(t.Words)-1]
	for _, in := range positionals {
		name := strings.ToUpper(in.ID)
		if in.Type == values.List {
			name += "..."
		}
		if !in.Required {
			name = "[" + name + "]"
		}
		use += " " + name
	}
	if passthrough {
		use += " [ARG...]"
	}
	cmd := &cobra.Command{Use: use, Short: c.Summary, Long: longHelp(f.Name, t)}

	flagVals := map[string]*[]string{}
	var asJSON bool
	if passthrough {
		// Every argument is the program's, --help and -h included (as gh
		// and kubectl hand their plugins theirs); the help flag stays
		// declared, hidden and never parsed, so that `help WORDS` shows
		// no flag of rukh's that the command does not take.
		cmd.DisableFlagParsing = true
		cmd.Flags().BoolP("help", "h", false, "")
		cmd.Flags().MarkHidden("help")
	} else {
		for _, in := range c.Inputs {
			if in.Flag == "" {
				continue
			}
			vals := []string{}
			flagVals[in.ID] = &vals
			fv := &stringsFlag{vals: &vals, boolean: in.Type == values.Boolean}
			fl := cmd.Flags().VarPF(fv, in.Flag, in.Short, flagUsage(in))
			if fv.boolean {
				fl.NoOptDefVal = "true"
			}
			if enum := enumStrings(in); len(enum) > 0 {
				cmd.RegisterFlagCompletionFunc(in.Flag, func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
					return enum, cobra.ShellCompDirectiveNoFileComp
				})
			}
		}
		cmd.Flags().BoolVar(&asJSON, "json", false, "print a structured result as compact JSON")
	}
	cmd.Args = func(_ *cobra.Command, args []string) error {
		switch {
		case passthrough:
			return nil
		case len(positionals) == 0 && len(args) > 0:
			return &UsageError{fmt.Errorf("%s takes no arguments, got %q", c.Route(), args[0])}
		case len(positionals) > 0 && positionals[len(positionals)-1].Type != values.List && len(args) > len(positionals):
			return &UsageError{fmt.Errorf("%s takes at most %d argument%s, got %d", c.Route(), len(positionals), plural(len(positionals)), len(args))}
		}
		return nil
	}
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		req := &invoke.Request{
			Transport: invoke.TransportCLI, Stdin: f.IO.In, Stdout: f.IO.Out, Stderr: f.IO.ErrOut,
			Dir: f.Dir, Env: f.Env, Interactive: isTerminal(f.IO.In), OnStart: f.OnInvocation, Spawner: f.Spawner,
			OnProgress: func(p extproto.Progress) { printProgress(f, p) },
		}
		if passthrough {
			req.Argv = args
		} else {
			req.CLIInputs = map[string][]string{}
			for id, vals := range flagVals {
				if len(*vals) > 0 {
					req.CLIInputs[id] = *vals
				}
			}
			for i, in := range positionals {
				switch {
				case i >= len(args):
				case in.Type == values.List:
					req.CLIInputs[in.ID] = args[i:]
				default:
					req.CLIInputs[in.ID] = args[i : i+1]
				}
			}
		}
		out, err := host.Core().Invoke(cmd.Context(), t, req)
		return report(f, out, err, asJSON, cmd.CommandPath())
	}
	return cmd
}

// enumStrings is an input's enum (or its list items' enum) as the text a
// person types, for completion.
func enumStrings(in descriptor.Input) []string {
	enum := in.Enum
	if in.Item != nil {
		enum = in.Item.Enum
	}
	out := make([]string, len(enum))
	for i, v := range enum {
		out[i] = v.Text()
	}
	return out
}

// longHelp is the help page's text above its usage: what the command
// declares, and for a passthrough command that its arguments are the
// program's.
func longHelp(name string, t *invoke.Target) string {
	c := t.Command
	long := c.Summary
	if c.Description != "" {
		long += "\n\n" + c.Description
	}
	long += "\n\nEffects: " + effectsText(c.Effects)
	if len(c.Aliases) > 0 {
		aliases := make([]string, len(c.Aliases))
		for i, a := range c.Aliases {
			aliases[i] = strings.Join(a, " ")
		}
		long += "\n\nAlso: " + strings.Join(aliases, ", ")
	}
	var args []string
	for _, in := range c.Inputs {
		if in.Positional >= 0 {
			args = append(args, fmt.Sprintf("  %-12s %s", strings.ToUpper(in.ID), flagUsage(in)))
		}
	}
	if len(args) > 0 {
		long += "\n\nArguments:\n" + strings.Join(args, "\n")
	}
	if c.Execute.Mapping == descriptor.Passthrough {
		words := strings.Join(t.Words, " ")
		long += fmt.Sprintf("\n\nArguments: every argument goes to the program as it is, --help included.\n"+
			"`%s %s --help` runs the program to show its own help, admitted and\n"+
			"recorded as any call; `%s help %s` shows this page and runs nothing.", name, words, name, words)
	}
	return long + fmt.Sprintf("\n\n%s %s from %s (%s)", c.Identity, t.Package.Version, t.Package.Publisher, shortDigest(t.Release.Digest))
}

// effectsText says what a command declares about its effects, in words.
func effectsText(e descriptor.Effects) string {
	if e.Class == "" {
		return fmt.Sprintf("not declared (a rukh.extension/1 command); counted as %s", e.Counted())
	}
	s := string(e.Class)
	switch {
	case e.Idempotent == nil:
	case *e.Idempotent:
		s += ", idempotent"
	default:
		s += ", not idempotent"
	}
	return s
}

// flagUsage describes an input: its description, type, constraints and
// default.
func flagUsage(in descriptor.Input) string {
	var parts []string
	if in.Description != "" {
		parts = append(parts, in.Description)
	}
	typ := string(in.Type)
	if in.Type == values.List && in.Item != nil {
		typ = "list of " + string(in.Item.Type) + "; repeat the flag"
		if in.Flag == "" {
			typ = "list of " + string(in.Item.Type) + "; give each as its own argument"
		}
	}
	var facts []string
	facts = append(facts, typ)
	if len(in.Enum) > 0 {
		vs := make([]string, len(in.Enum))
		for i, v := range in.Enum {
			vs[i] = v.String()
		}
		facts = append(facts, "one of "+strings.Join(vs, ", "))
	}
	if in.Minimum != nil {
		facts = append(facts, "≥ "+in.Minimum.String())
	}
	if in.Maximum != nil {
		facts = append(facts, "≤ "+in.Maximum.String())
	}
	if in.Required {
		facts = append(facts, "required")
	}
	if in.Default != nil {
		facts = append(facts, "default "+in.Default.String())
	}
	parts = append(parts, "("+strings.Join(facts, "; ")+")")
	return strings.Join(parts, " ")
}

func printProgress(f *Factory, p extproto.Progress) {
	if !isTerminal(f.IO.ErrOut) {
		return
	}
	switch {
	case p.Done != nil && p.Total != nil:
		fmt.Fprintf(f.IO.ErrOut, "%s (%d/%d)\n", safe(p.Message), *p.Done, *p.Total)
	default:
		fmt.Fprintln(f.IO.ErrOut, safe(p.Message))
	}
}

// isTerminal reports whether v is a terminal (not merely a character
// device: /dev/null is one too).
func isTerminal(v any) bool {
	f, ok := v.(*os.File)
	if !ok {
		return false
	}
	_, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
	return err == nil
}

// report prints an outcome the way a CLI user expects — the result on
// stdout, everything else on stderr — and turns it into the exit status.
func report(f *Factory, out *invoke.Outcome, err error, compact bool, cmdPath string) error {
	if r := out.Result; r != nil {
		switch r.Kind {
		case "text":
			fmt.Fprint(f.IO.Out, r.Text)
		default:
			var buf bytes.Buffer
			if compact {
				json.Compact(&buf, r.Data)
			} else {
				json.Indent(&buf, r.Data, "", "  ")
			}
			buf.WriteByte('\n')
			f.IO.Out.Write(buf.Bytes())
		}
	}
	status := OutcomeStatus(out)
	// A call cancelled because the process that asked for it is gone (a
	// Ctrl-C ended the thin client before it caught its signals) is said
	// to nobody: the terminal already shows the shell's prompt again.
	callerGone := out.Outcome == invoke.Cancelled && f.CallerAlive != nil && !f.CallerAlive()
	if status != exitcode.OK && out.Message != "" && !callerGone {
		fmt.Fprintf(f.IO.ErrOut, "%s: %s\n", f.Name, safeLines(out.Message))
		if out.Reason == invoke.ReasonInvalidInput {
			fmt.Fprintf(f.IO.ErrOut, "Run '%s --help' for usage.\n", cmdPath)
		}
	}
	// An outcome the store refused is said once, with what became of it.
	// The exit status stays the outcome's: the command ran (or was
	// refused) as printed, and must not look worth running again.
	var unrecorded *invoke.RecordError
	switch {
	case errors.As(err, &unrecorded):
		fmt.Fprintf(f.IO.ErrOut, "%s: %v\n", f.Name, unrecorded)
	case err != nil && out.Message == "":
		fmt.Fprintf(f.IO.ErrOut, "%s: %v\n", f.Name, err)
	}
	sayDiskHint(f, err)
	if err != nil && unrecorded == nil && status == exitcode.OK {
		status = exitcode.TempFail
	}
	if status == exitcode.OK {
		return nil
	}
	return &ExitError{Status: status, Err: out, Reported: true}
}
