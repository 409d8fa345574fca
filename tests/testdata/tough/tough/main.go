// Command tough is the thin client of a test embedder whose built-ins
// misbehave (toughd).
package main

import (
	"os"

	"github.com/rukh-cli/rukh/thin"
)

func main() { os.Exit(thin.Main("tough", os.Args[1:])) }
