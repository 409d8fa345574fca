// Command printversion is the least a Go program that answers `NAME
// version` must do, for BenchmarkCLI's floor row beside `rukh version`:
// read the environment and print a few lines with fmt, which links os
// and its runtime set-up, as any such program does. Nothing else.
package main

import (
	"fmt"
	"os"
	"runtime"
)

func main() {
	fmt.Fprintf(os.Stdout, "printversion devel (%s)\ndata: %s\n", runtime.Version(), os.Getenv("HOME"))
}
