// Package cliname is the name of the CLI this process serves, for the
// messages of the core's packages that tell a person what to run next
// ("run `acme doctor`"). A process serves exactly one CLI: its main sets
// the name once (app.Run, daemon.Main) before any message is made, and
// everything else reads it. It is "rukh" until set, the reference CLI.
package cliname

import (
	"fmt"
	"sync/atomic"
)

// valid reports whether n may be a CLI's name, ^[a-z][a-z0-9-]*$: it is
// spliced into messages, file names and format strings, so no `%`, space
// or path separator. (A loop, not a regexp: every process checks it as
// it starts.)
func valid(n string) bool {
	for i, c := range n {
		switch {
		case 'a' <= c && c <= 'z':
		case i > 0 && ('0' <= c && c <= '9' || c == '-'):
		default:
			return false
		}
	}
	return n != ""
}

// Default is the reference CLI's name.
const Default = "rukh"

var name atomic.Pointer[string]

// Set names the CLI this process serves; "" leaves the name as it is. A
// name that is not lowercase letters, digits and dashes, starting with a
// letter, is a programming error in the embedder's main: Set panics.
func Set(n string) {
	if n == "" {
		return
	}
	if !valid(n) {
		panic(fmt.Sprintf("cliname: %q is not a CLI name (lowercase letters, digits and dashes, starting with a letter)", n))
	}
	name.Store(&n)
}

// Name is the CLI's name, e.g. "rukh" or "acme".
func Name() string {
	if p := name.Load(); p != nil {
		return *p
	}
	return Default
}

// Cmd is a command line of the CLI as a message quotes it, in backticks:
// Cmd("doctor") is "`rukh doctor`" for the reference CLI.
func Cmd(args string) string { return "`" + Name() + " " + args + "`" }

// Daemon is the name of the CLI's daemon and core binary, e.g. "rukhd".
func Daemon() string { return Name() + "d" }

// Helper is the file name of the CLI's enforcement helper, e.g.
// "rukh-sandbox".
func Helper() string { return Name() + "-sandbox" }
