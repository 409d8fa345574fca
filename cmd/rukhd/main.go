// Command rukhd is the optional per-user Rukh daemon.
package main

import (
	"os"

	"github.com/rukh-cli/rukh/app"
	"github.com/rukh-cli/rukh/daemon"
)

func main() { os.Exit(daemon.Main(app.Rukh.Name, os.Args[1:])) }
