// Package app is the embeddable entry point of a Rukh-based CLI: an
// embedder names its tool in a Config and calls Main from a thin main.
package app

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/rukh-cli/rukh/extsdk"
	"github.com/rukh-cli/rukh/internal/buildid"
	"github.com/rukh-cli/rukh/internal/cli"
	"github.com/rukh-cli/rukh/internal/cliname"
	"github.com/rukh-cli/rukh/internal/core/admin"
	"github.com/rukh-cli/rukh/internal/core/invoke"
	"github.com/rukh-cli/rukh/internal/core/wrapper"
	"github.com/rukh-cli/rukh/internal/exitcode"
	"github.com/rukh-cli/rukh/internal/fds"
	"github.com/rukh-cli/rukh/internal/paths"
	"github.com/rukh-cli/rukh/internal/run/envpolicy"
	"github.com/rukh-cli/rukh/internal/run/spawn"
	"github.com/rukh-cli/rukh/thin"
)

// Config is the embedder's contract (ADR 0012): what the core binary's
// main is given. Everything user-visible derives from Name: the binary's
// help, the NAME_HOME variable and the XDG folder names.
type Config struct {
	Name string // lowercase, like "rukh" or "acme"
	// Version is the release version of the built-in commands (semver);
	// when empty, the main module's version as go build stamps it (which
	// `NAME version` prints), or 0.0.0 for a development build.
	Version string
	// Builtins are the embedder's own Go commands. Each is a command like
	// an extension's, in package Name: declared with the same contract,
	// validated when the core starts, selected by the profile, and run
	// through the one invocation core as `NAMEd --builtin ID`.
	Builtins []Builtin
	// Publishers are trusted, and Profile (a profile document, as for
	// `profile apply -f`) applied, when a store is created: the CLI then
	// installs its own publisher's releases out of the box. The owner can
	// change or remove both; an existing store is never changed by them.
	Publishers []Publisher
	Profile    []byte
}

// Publisher is a publisher the CLI trusts out of the box.
type Publisher struct {
	Name string // e.g. "acme"
	Key  []byte // its public key, as `NAME trust keygen` writes OUT.pub
}

// Builtin is one built-in command.
type Builtin struct {
	// Declaration is the command's entry as in a rukh.extension/2
	// descriptor — id, path, summary, inputs, effects, machine,
	// interaction — with its "result" beside them and no "execute".
	Declaration string
	// Run does the work, with the extension SDK's typed inputs, progress
	// and result.
	Run extsdk.Handler
}

// runBuiltin serves fn on the channel. A panic in fn ends the process
// without a report, which its host records as execution_failed; it is
// said in one line, not as the runtime's trace.
func runBuiltin(name, id string, fn extsdk.Handler) (status int) {
	defer func() {
		if r := recover(); r != nil {
			fmt.Fprintf(os.Stderr, "%sd: the built-in command %s panicked: %v\n", name, id, r)
			status = exitcode.Software
		}
	}()
	return extsdk.RunMain(extsdk.Options{}, fn)
}

// builtins is cfg's built-in release, or nil when it has none.
func (c Config) builtins() (*admin.Builtins, error) {
	if len(c.Builtins) == 0 && len(c.Publishers) == 0 && c.Profile == nil {
		return nil, nil
	}
	exe, err := wholeCore(c.Name)
	if err != nil {
		return nil, fmt.Errorf("the core binary: %w", err)
	}
	b := &admin.Builtins{Name: c.Name, Version: c.Version, Exe: exe}
	if b.Version == "" {
		// The embedder's module version, as go build stamps it (what
		// `NAME version` prints), when it is one.
		b.Version = strings.TrimPrefix(buildid.Version(), "v")
		if b.Version == "devel" {
			b.Version = "0.0.0"
		}
	}
	for _, bi := range c.Builtins {
		b.Commands = append(b.Commands, json.RawMessage(bi.Declaration))
	}
	for _, p := range c.Publishers {
		b.Publishers = append(b.Publishers, admin.Publisher{Name: p.Name, Key: p.Key})
	}
	b.Profile = c.Profile
	if err := b.Validate(); err != nil {
		return nil, err
	}
	return b, nil
}

// runBuiltinID runs the built-in command id of cfg in this process, which
// its host started as `NAMEd --builtin ID` with the rukh.ipc/1 channel,
// and returns the exit status.
func runBuiltinID(cfg Config, id string) int {
	for _, bi := range cfg.Builtins {
		var d struct {
			ID string `json:"id"`
		}
		if json.Unmarshal([]byte(bi.Declaration), &d) == nil && d.ID == id {
			return runBuiltin(cfg.Name, id, bi.Run)
		}
	}
	fmt.Fprintf(os.Stderr, "%sd: no built-in command %q\n", cfg.Name, id)
	return exitcode.Usage
}

// Rukh is the reference configuration.
var Rukh = Config{Name: "rukh"}

// HomeEnv is the variable that puts every file of the CLI under one
// directory, e.g. RUKH_HOME.
func (c Config) HomeEnv() string { return paths.HomeEnv(c.Name) }

// Paths resolves where the CLI keeps its files from the environment:
// NAME_HOME when set, otherwise the XDG base directories.
func (c Config) Paths(getenv func(string) string) (paths.Paths, error) {
	return paths.Resolve(c.Name, getenv)
}

// Main is the main of the core binary, NAMEd, for the CLI cfg names,
// with the process's streams, environment and signals; it returns the
// exit status. With thin.CoreFlag first it runs one command line in this
// process, which the thin client execs when no daemon serves it (with
// thin.OneShotFlag and the client's build id, the one-shot core does);
// with admin.BuiltinFlag ID, one built-in command for its host, and with
// wrapper.Flag ID one of the owner's wrappers (from the release the
// profile's wrappers are, which holds a copy of this binary); otherwise
// it is the daemon (package daemon), which runs forwarded command lines
// with the same CLI. An embedder's core main is this one call:
//
//	func main() { os.Exit(app.Main(cfg, os.Args[1:])) }
func Main(cfg Config, args []string) int {
	fds.MarkInherited()
	spawn.MarkHost() // whatever it runs here, it is a host of calls
	switch {
	case len(args) > 0 && args[0] == thin.CoreFlag:
		return oneShot(cfg, args[1:])
	case len(args) > 1 && args[0] == thin.OneShotFlag:
		if args[1] != buildid.ID() {
			// A one-shot core of another build than the thin client's
			// runs nothing: the whole core beside it does.
			return thin.ExecWholeCore(cfg.Name, args[2:])
		}
		return oneShot(cfg, args[2:])
	case len(args) == 2 && args[0] == admin.BuiltinFlag:
		return runBuiltinID(cfg, args[1])
	case len(args) == 2 && args[0] == wrapper.Flag:
		return wrapper.Serve(args[1])
	}
	return serve(cfg, args)
}

// Single runs the CLI as one binary that links the core (tests use it
// so), with the process's streams, environment and signals: when the
// CLI's daemon answers, the whole command line runs there (thin.Forward);
// otherwise here. The reference binaries split it: the thin `rukh`
// (thin.Main) and the core, NAMEd (Main).
func Single(cfg Config, args []string) int {
	fds.MarkInherited()
	if status, ok := thin.Forward(cfg.Name, args); ok {
		return status
	}
	spawn.MarkHost()
	return oneShot(cfg, args)
}

// oneShot runs the command line in this process, with the process's
// streams, environment and signals.
func oneShot(cfg Config, args []string) int {
	// A command line runs at most one extension command, so everything
	// below this process belongs to it: it adopts what that command
	// leaves behind and kills it when the call ends.
	if len(args) == 0 || args[0] != "mcp" {
		invoke.AdoptOrphans()
	} else {
		// `mcp` serves many calls at once: it adopts only what a call
		// whose helper was killed leaves behind.
		invoke.AdoptStrays()
	}
	// The first Ctrl-C, SIGTERM or hang-up cancels the context (a running
	// command is stopped, with a grace, and recorded as interrupted); a
	// second one kills the call at once, its helper included whatever
	// state the command left it in, and it is still recorded
	// (invoke.WithAbort); a third has its default effect and ends the
	// process. Catching them takes the Go runtime 0.2–0.4 ms (a thread of
	// its own and a handshake with it per signal), so it is done while the
	// command line is resolved, and the line runs nothing before they are
	// caught (cli.Factory.Ready): until then a signal ends the process,
	// as it does while the runtime starts.
	sigs := make(chan os.Signal, 3)
	caught := make(chan struct{})
	go func() {
		signal.Notify(sigs, thin.StopSignals()...)
		close(caught)
	}()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	abort := make(chan struct{})
	go func() {
		<-sigs
		cancel()
		<-sigs
		close(abort)
		<-sigs
		signal.Stop(sigs)
		signal.Reset(thin.StopSignals()...)
		syscall.Kill(os.Getpid(), syscall.SIGINT)
	}()
	ctx = invoke.WithAbort(ctx, abort)
	return run(ctx, cfg, args, cli.IOStreams{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr}, os.Environ(), func() { <-caught })
}

// run runs the CLI in this process with explicit streams and environment
// ("KEY=value" pairs); ready, if set, is the Factory's Ready.
func run(ctx context.Context, cfg Config, args []string, ios cli.IOStreams, environ []string, ready func()) int {
	cliname.Set(cfg.Name)
	getenv := envpolicy.Lookup(environ)
	dir, _ := os.Getwd()
	b, err := cfg.builtins()
	if err != nil {
		fmt.Fprintf(ios.ErrOut, "%s: %v\n", cfg.Name, err)
		return exitcode.Software
	}
	f := &cli.Factory{
		Name:     cfg.Name,
		IO:       ios,
		HomeEnv:  cfg.HomeEnv(),
		Paths:    func() (paths.Paths, error) { return cfg.Paths(getenv) },
		Dir:      dir,
		Env:      environ,
		Builtins: b,
		Ready:    ready,
	}
	return cli.Execute(ctx, f, args)
}
