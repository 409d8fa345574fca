// Command mksandbox builds the enforcement helper rukh-sandbox (package
// sandbox, helper/rukh-sandbox.c) with the C compiler: `make build` runs it.
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/rukh-cli/rukh/internal/run/sandbox"
)

func main() {
	out := flag.String("o", "rukh-sandbox", "the helper's path")
	flag.Parse()
	if err := sandbox.Build(*out); err != nil {
		fmt.Fprintln(os.Stderr, "mksandbox:", err)
		os.Exit(1)
	}
}
