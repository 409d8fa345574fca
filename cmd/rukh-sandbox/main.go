// Command rukh-sandbox applies a task's enforcement profile and execs the
// command in its place; rukh starts it, never a person.
package main

import (
	"os"

	"github.com/rukh-cli/rukh/sandbox"
)

func main() { os.Exit(sandbox.Main(os.Args[1:])) }
