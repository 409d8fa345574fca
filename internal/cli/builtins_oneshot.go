//go:build rukh_oneshot

package cli

import "github.com/spf13/cobra"

// addBuiltins adds nothing in the one-shot core binary, NAME-oneshot (the
// core built with the build tag rukh_oneshot): it runs a command line of
// one extension command and links none of the built-in commands, nor MCP
// or the release sources they need (docs/adr/0017-one-shot-core.md).
// Execute hands any other command line to the whole core binary.
func addBuiltins(*Factory, *cobra.Command) bool { return false }
