// Package app is the embeddable entry point of a Rukh-based CLI: an
// embedder names its tool in a Config and calls Main from a thin main.
package app

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/rukh-cli/rukh/cli"
	"github.com/rukh-cli/rukh/envpolicy"
	"github.com/rukh-cli/rukh/internal/cliname"
	"github.com/rukh-cli/rukh/internal/fds"
	"github.com/rukh-cli/rukh/invoke"
	"github.com/rukh-cli/rukh/paths"
	"github.com/rukh-cli/rukh/thin"
)

// Config names the CLI. Everything user-visible derives from Name: the
// binary's help, the NAME_HOME variable and the XDG folder names.
type Config struct {
	Name string // lowercase, like "rukh" or "acme"
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

// Main runs the CLI with the process's streams, environment and signals
// and returns its exit status. When the CLI's daemon answers, the whole
// command line runs there (thin.Forward); otherwise here. It is the CLI as
// one binary that links the core (tests use it so); the reference
// binaries split it: the thin `rukh` (thin.Main) and the core, NAMEd
// (daemon.Main).
func Main(cfg Config, args []string) int {
	fds.MarkInherited()
	if status, ok := thin.Forward(cfg.Name, args); ok {
		return status
	}
	return Local(cfg, args)
}

// Local runs the command line in this process, with the process's
// streams, environment and signals.
func Local(cfg Config, args []string) int {
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
	// process.
	sigs := make(chan os.Signal, 3)
	signal.Notify(sigs, thin.StopSignals()...)
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
	return Run(ctx, cfg, args, cli.IOStreams{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr}, os.Environ())
}

// Run runs the CLI in this process with explicit streams and environment
// ("KEY=value" pairs), for tests and embedders.
func Run(ctx context.Context, cfg Config, args []string, ios cli.IOStreams, environ []string) int {
	cliname.Set(cfg.Name)
	getenv := envpolicy.Lookup(environ)
	dir, _ := os.Getwd()
	f := &cli.Factory{
		Name:    cfg.Name,
		IO:      ios,
		HomeEnv: cfg.HomeEnv(),
		Paths:   func() (paths.Paths, error) { return cfg.Paths(getenv) },
		Dir:     dir,
		Env:     environ,
	}
	return cli.Execute(ctx, f, args)
}
