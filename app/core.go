//go:build !rukh_oneshot

package app

import (
	"context"
	"fmt"
	"os"

	"github.com/rukh-cli/rukh/internal/cli"
	"github.com/rukh-cli/rukh/internal/core/admin"
	"github.com/rukh-cli/rukh/internal/core/local"
	"github.com/rukh-cli/rukh/internal/daemon"
	"github.com/rukh-cli/rukh/internal/exitcode"
	"github.com/rukh-cli/rukh/internal/paths"
)

// serve is the daemon (package daemon), which runs forwarded command
// lines with the same CLI.
func serve(cfg Config, args []string) int {
	b, err := cfg.builtins()
	if err != nil {
		fmt.Fprintf(os.Stderr, "%sd: %v\n", cfg.Name, err)
		return exitcode.Software
	}
	return daemon.Main(daemon.Options{Name: cfg.Name, Builtins: b, Run: runner(cfg, b)}, args)
}

// wholeCore is the whole core binary: this one.
func wholeCore(string) (string, error) { return os.Executable() }

// Runner is what a daemon of cfg runs forwarded command lines with: the
// CLI, with cfg's built-ins. It is for this module's tests, which serve a
// daemon.Server in their own process; an embedder calls Main.
func Runner(cfg Config) daemon.Runner {
	b, err := cfg.builtins()
	if err != nil {
		return func(_ context.Context, c *daemon.CommandLine) int {
			fmt.Fprintf(c.Err, "%sd: %v\n", cfg.Name, err)
			return exitcode.Software
		}
	}
	return runner(cfg, b)
}

// runner runs the daemon's forwarded command lines with the CLI.
func runner(cfg Config, b *admin.Builtins) daemon.Runner {
	return func(ctx context.Context, c *daemon.CommandLine) int {
		f := &cli.Factory{
			Name:         cfg.Name,
			IO:           cli.IOStreams{In: c.In, Out: c.Out, ErrOut: c.Err},
			HomeEnv:      cfg.HomeEnv(),
			Paths:        func() (paths.Paths, error) { return c.Paths, nil },
			Dir:          c.Dir,
			Env:          c.Env,
			NewHost:      func() (*local.Host, error) { return c.Host, nil },
			OnInvocation: c.OnInvocation,
			Spawner:      c.Spawner,
			CallerPID:    c.CallerPID,
			CallerAlive:  c.CallerAlive,
			HostNote:     c.HostNote,
			Builtins:     b,
		}
		return cli.Execute(ctx, f, c.Args)
	}
}
