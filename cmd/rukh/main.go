// Command rukh is the reference Rukh CLI: a thin client that links none
// of the core. Its command lines run in the daemon rukhd when one serves
// it, otherwise in the core binary rukhd, which it execs (thin.Main).
package main

import (
	"os"

	"github.com/rukh-cli/rukh/thin"
)

func main() { os.Exit(thin.Main("rukh", os.Args[1:])) }
