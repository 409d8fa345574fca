//go:build !rukh_oneshot

package cli

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/rukh-cli/rukh/internal/mcp/mcpconfig"
	"github.com/rukh-cli/rukh/internal/run/envpolicy"
)

func newMCPConfigCmd(f *Factory) *cobra.Command {
	var scope, name string
	var write, force, asJSON bool
	clients := mcpconfig.Names()
	cmd := &cobra.Command{
		Use:   "config CLIENT [--scope user|project] [--write [--force]]",
		Short: "Print, or --write, the entry that starts this " + f.Name + " mcp in an MCP client's configuration",
		Long: `Print the entry that starts this very binary as an MCP server, in the
configuration format of CLIENT (` + strings.Join(clients, ", ") + `), with the
environment it needs to serve the same home as this shell (` + f.HomeEnv + ` or the
XDG directories, when they are not the defaults). --write merges it into the
client's file for --scope (user, the default, or project: the working
directory's, where the client has one): every other entry is kept byte for
byte, the file is replaced atomically and the previous one kept as
FILE.bak-TIME (FILE.bak-TIME-2, … within one second). A file that is a
symbolic link is written through: the file it links to is replaced, and the
link stays. A file that already has the entry as it would be written is
"already configured", and left as it is. Another entry of the same name is
replaced only with --force; a file that is not valid, not a regular file,
larger than 4 MiB, or a link to nothing is refused, and nothing is written.
It warns when the tools this server lists have names longer than CLIENT
accepts, and says what to change.`,
		Args:      exactArgs(1, "mcp config takes one client: "+strings.Join(clients, ", ")),
		ValidArgs: clients,
		RunE: func(cmd *cobra.Command, args []string) error {
			c := mcpconfig.Clients[args[0]]
			if c == nil {
				return &UsageError{fmt.Errorf("unknown client %q; one of: %s", args[0], strings.Join(clients, ", "))}
			}
			getenv := envpolicy.Lookup(f.Env)
			file, err := c.File(scope, mcpconfig.Env{Home: getenv("HOME"), Dir: f.Dir, Getenv: getenv})
			if err != nil {
				return &UsageError{err}
			}
			exe, err := cliExecutable(f.Name)
			if err != nil {
				return err
			}
			if name == "" {
				name = f.Name
			}
			srv := &mcpconfig.Server{Name: name, Command: exe, Args: []string{"mcp"}, Env: homeEnv(f.HomeEnv, getenv)}
			if err := srv.Check(); err != nil {
				return &UsageError{err}
			}
			snippet, err := c.Snippet(srv)
			if err != nil {
				return err
			}
			backup, target, same := "", file, false
			if write {
				w, err := c.Write(file, srv, force, time.Now().UTC().Format("20060102T150405Z"))
				if err != nil {
					return err
				}
				backup, target, same = w.Backup, w.File, w.Unchanged
			}
			warning := clientNames(cmd, f, c, srv.Name)
			if asJSON {
				warnings := []string{}
				if warning != "" {
					warnings = append(warnings, strings.TrimSuffix(strings.TrimPrefix(warning, "warning: "), "\n"))
				}
				return writeJSON(f.IO.Out, map[string]any{
					"client": c.Name, "title": c.Title, "scope": scope, "file": file, "format": c.Format,
					"name": srv.Name, "command": srv.Command, "args": srv.Args, "env": nonNil(srv.Env),
					"snippet": snippet, "written": write && !same, "alreadyConfigured": same, "target": target, "backup": backup,
					"warnings": warnings,
				})
			}
			switch {
			case !write:
				fmt.Fprint(f.IO.Out, snippet)
				fmt.Fprintf(f.IO.ErrOut, "# for %s (%s scope): add this to %s, or run `%s mcp config %s --scope %s --write`\n", c.Title, scope, file, f.Name, c.Name, scope)
			case same:
				fmt.Fprintf(f.IO.ErrOut, "%q is already configured in %s for %s (%s scope), as this command writes it; nothing was written\n", srv.Name, file, c.Title, scope)
			default:
				fmt.Fprintf(f.IO.ErrOut, "wrote %q to %s for %s (%s scope)", srv.Name, file, c.Title, scope)
				if target != file {
					fmt.Fprintf(f.IO.ErrOut, ", through its link to %s", target)
				}
				if backup != "" {
					fmt.Fprintf(f.IO.ErrOut, "; the previous file is %s", backup)
				}
				fmt.Fprintf(f.IO.ErrOut, "\nrestart %s, or reload its MCP servers, to start it\n", c.Title)
			}
			fmt.Fprint(f.IO.ErrOut, warning)
			return nil
		},
	}
	cmd.Flags().StringVar(&scope, "scope", mcpconfig.User, "whose file: user (every project) or project (this directory's)")
	cmd.Flags().StringVar(&name, "name", "", "the server's name in the client (default: "+f.Name+")")
	cmd.Flags().BoolVar(&write, "write", false, "merge the entry into the client's file")
	cmd.Flags().BoolVar(&force, "force", false, "with --write: replace an entry of the same name")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print what it would write (or wrote) as JSON")
	return cmd
}

// clientNames is the warning (longNames) about the tools the configured
// server would list that are longer than c accepts, counted as c counts
// them (with its prefix and the server's name), or "". It is "" too when
// the tools cannot be listed: the entry is right all the same, and
// `tools` says why. They are listed through the tool host, as `mcp` and
// `tools` list them: `mcp config` runs in the caller's process, where a
// daemon may hold the store.
func clientNames(cmd *cobra.Command, f *Factory, c *mcpconfig.Client, server string) string {
	if c.Names == nil {
		return ""
	}
	list, err := advertised(cmd, f, "")
	if err != nil {
		return ""
	}
	names := make([]string, len(list.Tools))
	for i, t := range list.Tools {
		names[i] = t.Name
	}
	l := nameLimit{Max: c.Names.Max, Prefix: c.Names.PrefixFor(server), Who: c.Title + " " + c.Names.Longer}
	switch {
	case c.Names.Prefix == "SERVER":
		l.With = fmt.Sprintf(" with the server's name %q, which %s counts", server, c.Title)
	case l.Prefix != "":
		l.With = fmt.Sprintf(" with %s's prefix %s", c.Title, l.Prefix)
	}
	return longNames(names, l, list.Naming)
}

func nonNil(m map[string]string) map[string]string {
	if m == nil {
		return map[string]string{}
	}
	return m
}

// homeEnv is the environment a client must give `rukh mcp` to serve the
// same home as this process: the home variable when set, else each XDG
// directory set to other than its default.
func homeEnv(homeVar string, getenv func(string) string) map[string]string {
	if v := getenv(homeVar); v != "" {
		return map[string]string{homeVar: v}
	}
	env := map[string]string{}
	home := getenv("HOME")
	for k, def := range map[string]string{
		"XDG_DATA_HOME":   filepath.Join(home, ".local", "share"),
		"XDG_CONFIG_HOME": filepath.Join(home, ".config"),
		"XDG_RUNTIME_DIR": filepath.Join("/run/user", strconv.Itoa(os.Getuid())),
	} {
		if v := getenv(k); filepath.IsAbs(v) && filepath.Clean(v) != def {
			env[k] = v
		}
	}
	if len(env) == 0 {
		return nil
	}
	return env
}

// cliExecutable is the absolute path of the CLI name a person runs: this
// executable, or the one beside it when this is its core (NAMEd), or the
// one on $PATH.
var cliExecutable = func(name string) (string, error) {
	if exe, err := os.Executable(); err == nil {
		switch filepath.Base(exe) {
		case name:
			return exe, nil
		case name + "d":
			p := filepath.Join(filepath.Dir(exe), name)
			if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() {
				return p, nil
			}
		}
	}
	p, err := exec.LookPath(name)
	if err == nil {
		p, err = filepath.Abs(p)
	}
	if err != nil {
		return "", errors.New("cannot find " + name + " beside this program or on $PATH, to name it in the client's configuration")
	}
	return p, nil
}
