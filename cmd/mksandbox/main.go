// Command mksandbox builds the enforcement helper (internal/run/sandbox,
// helper/rukh-sandbox.c) with the C compiler ($CC or cc): `make build`
// runs it for rukh-sandbox, and an embedder's build for NAME-sandbox:
//
//	go run github.com/rukh-cli/rukh/cmd/mksandbox -o bin/acme-sandbox
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/rukh-cli/rukh/internal/run/sandbox"
)

func main() {
	out := flag.String("o", "rukh-sandbox", "the helper's path")
	flag.Parse()
	if err := os.MkdirAll(filepath.Dir(*out), 0o755); err != nil {
		fmt.Fprintln(os.Stderr, "mksandbox:", err)
		os.Exit(1)
	}
	if err := sandbox.Build(*out); err != nil {
		fmt.Fprintln(os.Stderr, "mksandbox:", err)
		os.Exit(1)
	}
}
