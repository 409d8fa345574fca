package app

import (
	"context"

	"github.com/rukh-cli/rukh/internal/cli"
)

// Run is run, for this package's tests: the CLI with explicit streams and
// environment.
func Run(ctx context.Context, cfg Config, args []string, ios cli.IOStreams, environ []string) int {
	return run(ctx, cfg, args, ios, environ, nil)
}
