// Command rukhd is the optional per-user Rukh daemon.
package main

import (
	"os"

	"github.com/rukh-cli/rukh/app"
)

func main() { os.Exit(app.DaemonMain(app.Rukh, os.Args[1:])) }
