// Command rukh is the reference Rukh CLI.
package main

import (
	"os"

	"github.com/rukh-cli/rukh/app"
)

func main() { os.Exit(app.Main(app.Rukh, os.Args[1:])) }
