// Command acme is the thin client of the example embedder acme: its whole
// main is the thin client's.
package main

import (
	"os"

	"github.com/rukh-cli/rukh/thin"
)

func main() { os.Exit(thin.Main("acme", os.Args[1:])) }
