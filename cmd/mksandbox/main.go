// Command mksandbox builds the enforcement helper (internal/run/sandbox,
// helper/rukh-sandbox.c) with the C compiler ($CC or cc) and the Linux
// kernel headers (no libc): `make build` runs it for rukh-sandbox, and an
// embedder's build for NAME-sandbox:
//
//	go run github.com/rukh-cli/rukh/cmd/mksandbox -o bin/acme-sandbox
//
// Without a compiler or the headers it says which packages to install.
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/rukh-cli/rukh/internal/run/sandbox"
)

func main() { os.Exit(run(os.Args[1:], os.Stderr)) }

func run(args []string, stderr io.Writer) int {
	fs := flag.NewFlagSet("mksandbox", flag.ContinueOnError)
	fs.SetOutput(stderr)
	out := fs.String("o", "rukh-sandbox", "the helper's path")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "mksandbox: unexpected argument %q; the output is -o PATH\n", fs.Arg(0))
		return 2
	}
	if err := os.MkdirAll(filepath.Dir(*out), 0o755); err != nil {
		fmt.Fprintln(stderr, "mksandbox:", err)
		return 1
	}
	if err := sandbox.Build(*out); err != nil {
		fmt.Fprintln(stderr, "mksandbox:", err)
		return 1
	}
	return 0
}
