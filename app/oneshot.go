//go:build rukh_oneshot

package app

import (
	"fmt"
	"os"

	"github.com/rukh-cli/rukh/internal/exitcode"
	"github.com/rukh-cli/rukh/thin"
)

// The one-shot core binary, NAME-oneshot, is this package built with the
// build tag rukh_oneshot: the thin client execs it for a command line of
// one extension command when no daemon serves the CLI, and it links none
// of the built-in commands, the daemon, MCP or the release sources, so
// it starts sooner (docs/adr/0017-one-shot-core.md). Any other command
// line it hands to the whole core binary, NAMEd (cli.Execute).

// serve refuses: the one-shot core is never the daemon.
func serve(cfg Config, _ []string) int {
	fmt.Fprintf(os.Stderr, "%s: this is the one-shot core of %s, which runs one command line as `%s %s ARGS`; the daemon is %sd\n",
		thin.OneShotBinary(cfg.Name), cfg.Name, thin.OneShotBinary(cfg.Name), thin.CoreFlag, cfg.Name)
	return exitcode.Usage
}

// wholeCore is the whole core binary beside this one, NAMEd: a built-in
// release holds a copy of it, whichever binary installs the release.
func wholeCore(name string) (string, error) { return thin.CoreBinary(name) }
