// Command launch is the least a CLI split as rukh is (a thin client and
// the core it execs) adds to a call without a daemon, for BenchmarkCLI's
// F-launch rows: a Go program, as the thin client is, that looks for the
// daemon's socket, finds none, and replaces itself (execve) with the
// program that hosts the call, keeping its pid, streams and environment.
// Nothing else: no paths, no build id, no signals.
//
//	launch SOCKET PROGRAM [ARG]...
package main

import (
	"fmt"
	"os"
	"syscall"
)

func main() {
	if len(os.Args) < 3 {
		fmt.Fprintln(os.Stderr, "usage: launch SOCKET PROGRAM [ARG]...")
		os.Exit(2)
	}
	if _, err := os.Stat(os.Args[1]); err == nil {
		fmt.Fprintln(os.Stderr, "launch: a daemon's socket is there; this floor is of a call without one")
		os.Exit(1)
	}
	err := syscall.Exec(os.Args[2], os.Args[2:], os.Environ())
	fmt.Fprintln(os.Stderr, "launch:", err)
	os.Exit(1)
}
