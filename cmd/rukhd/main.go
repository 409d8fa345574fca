// Command rukhd is the core of the reference Rukh CLI: the optional
// per-user daemon, and — as `rukhd --cli ARGS` — the process a `rukh`
// command line runs in when no daemon serves it.
package main

import (
	"os"

	"github.com/rukh-cli/rukh/app"
)

func main() { os.Exit(app.Main(app.Rukh, os.Args[1:])) }
